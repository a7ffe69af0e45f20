"""More than one host: each process trains its slice of the population, process 0 reports.

``initialize`` calls ``jax.distributed.initialize`` (coordinator address, number of processes
and process id from flags, else the environment: ``NALU_JAX_COORDINATOR``,
``NALU_JAX_NUM_PROCESSES``, ``NALU_JAX_PROCESS_ID``). Runs never exchange data: process p
takes the p-th contiguous slice of the (setting, seed) runs, trains it on its local devices,
checkpoints under ``checkpoints/process_p`` and writes its results to ``parts/process_p.npz``
in the shared workdir; process 0 waits for every part and writes the merged outputs. Since
seed k's numbers do not depend on which runs share its program, the merged results equal a
one-process run's.
"""

from __future__ import annotations

import dataclasses
import io
import os
import time

import numpy as np

from nalu_jax.config import ConfigError
from nalu_jax.reporting.report import atomic_write

ENV = ("NALU_JAX_COORDINATOR", "NALU_JAX_NUM_PROCESSES", "NALU_JAX_PROCESS_ID")


@dataclasses.dataclass(frozen=True)
class ProcessInfo:
    index: int = 0
    count: int = 1
    timeout_s: float = 24 * 3600.0  # how long process 0 waits for the others' results


def initialize(coordinator=None, num_processes=None, process_id=None) -> None:
    """Join a multi-process run when it has more than one process (else do nothing)."""
    coordinator = coordinator or os.environ.get(ENV[0])
    num_processes = _integer("num_processes", num_processes, ENV[1], 1)
    process_id = _integer("process_id", process_id, ENV[2], 0)
    if num_processes < 1:
        raise ConfigError(
            f"num_processes (flag or {ENV[1]}) must be an integer >= 1, got {num_processes}."
        )
    if num_processes == 1:
        return
    if not coordinator:
        raise ConfigError(
            "coordinator_address must be given (flag or NALU_JAX_COORDINATOR) when "
            f"num_processes is {num_processes}."
        )
    if not 0 <= process_id < num_processes:
        raise ConfigError(f"process_id must be in [0, {num_processes}), got {process_id}.")
    import jax

    jax.distributed.initialize(coordinator, num_processes, process_id)


def _integer(name: str, value, env: str, default: int) -> int:
    """The flag's ``value``, else the environment's ``env``, else ``default``, as an integer."""
    raw = value if value is not None else os.environ.get(env, default)
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} (flag or {env}) must be an integer, got {raw!r}.") from None


def process_info() -> ProcessInfo:
    import jax

    return ProcessInfo(jax.process_index(), jax.process_count())


def process_slice(num_runs: int, proc: ProcessInfo) -> slice:
    """The contiguous runs of process ``proc.index`` (sizes differ by at most one)."""
    if num_runs < proc.count:
        raise ConfigError(
            f"num_seeds × settings ({num_runs}) must be at least the number of processes "
            f"({proc.count})."
        )
    bounds = np.linspace(0, num_runs, proc.count + 1).round().astype(int)
    return slice(int(bounds[proc.index]), int(bounds[proc.index + 1]))


def checkpoint_dir(base: str, proc: ProcessInfo) -> str:
    """``base`` (one process) or ``base/process_p``: each process checkpoints its own slice."""
    return base if proc.count == 1 else os.path.join(base, f"process_{proc.index}")


def _part_path(parts_dir: str, index: int) -> str:
    return os.path.join(parts_dir, f"process_{index}.npz")


def _flatten(part: dict) -> dict:
    flat = {f"history.{k}": v for k, v in part["history"].items()}
    flat.update({k: np.asarray(v) for k, v in part.items() if k != "history"})
    return flat


def _load(path: str) -> dict:
    with np.load(path) as z:
        part = {k: z[k] for k in z.files}
    history = {k.split(".", 1)[1]: part.pop(k) for k in list(part) if k.startswith("history.")}
    return {"history": history, **part}


def gather_parts(parts_dir: str, proc: ProcessInfo, part: dict, num_runs: int):
    """All processes' results merged in run order (process 0), or ``None`` (the others);
    the parts meet as ``parts_dir/process_p.npz`` in the shared workdir."""
    if proc.count == 1:
        return part
    os.makedirs(parts_dir, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, **_flatten(part))
    atomic_write(_part_path(parts_dir, proc.index), buf.getvalue())
    if proc.index != 0:
        return None
    deadline = time.monotonic() + proc.timeout_s
    paths = [_part_path(parts_dir, i) for i in range(proc.count)]
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            raise ConfigError("the other processes' results did not arrive in the workdir.")
        time.sleep(0.5)
    parts = [_load(p) for p in paths]
    runs = np.concatenate([p["runs"] for p in parts])
    if not np.array_equal(runs, np.arange(num_runs)):
        raise ConfigError("the processes' results do not cover the runs; was the config changed?")
    history = {
        k: np.concatenate([p["history"][k] for p in parts], axis=1)
        for k in parts[0]["history"]
        if k != "step"
    }
    history["step"] = parts[0]["history"]["step"]
    return {
        "history": history,
        "diverged": np.concatenate([p["diverged"] for p in parts]),
        "diverged_at": np.concatenate([p["diverged_at"] for p in parts]),
        "runs": runs,
        "compile_s": float(max(p["compile_s"] for p in parts)),
        "loop_s": float(max(p["loop_s"] for p in parts)),
        "seed_steps": int(sum(p["seed_steps"] for p in parts)),
        "stopped_at_step": _stopped_at([p.get("stopped_at_step", -1) for p in parts]),
    }


def _stopped_at(steps) -> int:
    """The step from which no process trained (the latest of theirs), −1 if one trained on."""
    steps = [int(s) for s in steps]
    return -1 if min(steps) < 0 else max(steps)
