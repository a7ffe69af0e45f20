"""A table on a cluster (SLURM via submitit), merged into the same ``table.md`` as one machine's.

    # one array task per cell (cells split over hosts), then the table:
    python -m launch.slurm --table=iclr2020-arithmetic --workdir=/shared/iclr \
        --slurm_partition=cpu --timeout_min=2880 --cpus_per_task=16
    # one jax.distributed job over 4 nodes: every cell's seeds split over the nodes:
    python -m launch.slurm --table=iclr2020-arithmetic --mode=distributed --nodes=4 ...
    # this machine, without SLURM (submitit's local executor; 2 tasks):
    python -m launch.slurm --cluster=local --table=... --ops=mul --models=nmu,nau --seeds=4 ...
    # GPU nodes: each task asks SLURM for 4 GPUs of its node (--gpus-per-node):
    python -m launch.slurm --table=iclr2020-arithmetic --workdir=/shared/iclr --gpus_per_node=4

GPUs: SLURM gives a task only the GPUs it asks for (``--gpus_per_node``, or ``--slurm_gres``
such as ``gpu:a100:4`` where a cluster wants a typed request). submitit's local executor sets
``CUDA_VISIBLE_DEVICES`` to the GPUs it is given (empty when none, which hides every GPU), so
``--cluster=local`` gives its tasks every GPU this host shows (``CUDA_VISIBLE_DEVICES`` if set,
else ``/dev/nvidiaN``), or the first ``--gpus_per_node`` of them.

Modes: ``array`` submits one array task per ``--cells_per_task`` cells (``map_array``; at
most ``--parallelism`` at once); ``distributed`` submits one job of ``--nodes`` ×
``--tasks_per_node`` tasks that join ``jax.distributed`` and split each cell's seeds × settings
(``nalu_jax.reproduce.jobs``). The workdir must be shared by the hosts. Unless ``--nowait``,
the launcher waits for the jobs and writes the table; otherwise run
``python -m launch.reproduce --report_only`` later. Cells already finished are skipped by the tasks.
"""

from __future__ import annotations

import os

from absl import flags, logging

from nalu_jax import cli
from nalu_jax.cli import fail
from nalu_jax.config import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_TABLE = flags.DEFINE_string("table", None, "Table name, e.g. iclr2020-arithmetic.")
_MODELS = flags.DEFINE_list("models", None, "Models of the table to run (default: all).")
_OPS = flags.DEFINE_list("ops", None, "Ops of the table to run (default: all).")
_SEEDS = flags.DEFINE_integer(
    "seeds", None, "Seeds per cell (default: the published number).", lower_bound=1
)
_STEPS = flags.DEFINE_integer(
    "steps", None, "Iterations per cell (default: the published).", lower_bound=1
)
_WORKDIR = flags.DEFINE_string("workdir", None, "Shared directory of the table and its cells.")
_MODE = flags.DEFINE_enum("mode", "array", ["array", "distributed"], "How to split the table.")
_CELLS_PER_TASK = flags.DEFINE_integer(
    "cells_per_task", 1, "Array mode: cells per task.", lower_bound=1
)
_PARALLELISM = flags.DEFINE_integer(
    "parallelism", 64, "Array mode: tasks running at once.", lower_bound=1
)
_NODES = flags.DEFINE_integer("nodes", 1, "Distributed mode: nodes.", lower_bound=1)
_TASKS_PER_NODE = flags.DEFINE_integer(
    "tasks_per_node", 1, "Distributed mode: tasks per node.", lower_bound=1
)
_CLUSTER = flags.DEFINE_enum(
    "cluster", None, ["slurm", "local", "debug"], "submitit executor (default: slurm if found)."
)
_PARTITION = flags.DEFINE_string("slurm_partition", None, "SLURM partition.")
_TIMEOUT = flags.DEFINE_integer(
    "timeout_min", 24 * 60, "Time limit per task in minutes.", lower_bound=1
)
_CPUS = flags.DEFINE_integer(
    "cpus_per_task", None, "CPUs per task (one JAX device each).", lower_bound=1
)
_GPUS = flags.DEFINE_integer(
    "gpus_per_node", None, "GPUs per node (SLURM --gpus-per-node; local: default all visible)."
)
_GRES = flags.DEFINE_string("slurm_gres", None, "SLURM --gres, e.g. gpu:a100:4 (instead of GPUs).")
_MEM = flags.DEFINE_float("mem_gb", None, "Memory per node in GB.")
_LOGS = flags.DEFINE_string("logs", None, "submitit folder (default: WORKDIR/slurm/%j).")
_SMOKE = flags.DEFINE_bool(
    "smoke",
    False,
    "A seconds-long run of the whole path (tests; not the published protocol), as for "
    "launch.reproduce: 2 seeds, 2,000 steps unless --seeds/--steps say otherwise, small "
    "evaluation sets.",
)
_WAIT = flags.DEFINE_bool("wait", True, "Wait for the jobs, then write the table.")


def host_gpus(environ=None, dev: str = "/dev") -> tuple[int, ...]:
    """The GPU indices this host shows a process: ``CUDA_VISIBLE_DEVICES`` when it is set to
    indices, else the ``nvidiaN`` device files of ``dev`` (none on a host without NVIDIA GPUs)."""
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        parts = [p.strip() for p in visible.split(",") if p.strip()]
        if all(p.isdigit() for p in parts):
            return tuple(int(p) for p in parts)
    try:
        names = os.listdir(dev)
    except OSError:
        return ()
    return tuple(sorted(int(n[6:]) for n in names if n.startswith("nvidia") and n[6:].isdigit()))


def local_gpus(requested: int | None, visible: tuple[int, ...]) -> tuple[int, ...]:
    """The GPUs the local executor hands its tasks: all ``visible`` ones, or the first
    ``requested``; more than the host shows is a ``ConfigError``."""
    if requested is None:
        return visible
    if requested > len(visible):
        raise ConfigError(
            f"gpus_per_node must be at most the {len(visible)} GPU(s) this host shows, "
            f"got {requested}."
        )
    return visible[:requested]


def executor():
    import submitit

    folder = _LOGS.value or os.path.join(_WORKDIR.value, "slurm", "%j")
    split = (
        {"slurm_array_parallelism": _PARALLELISM.value}
        if _MODE.value == "array"
        else {"nodes": _NODES.value, "tasks_per_node": _TASKS_PER_NODE.value}
    )
    if _CLUSTER.value == "local":
        # submitit's AutoExecutor cannot pass visible_gpus; without it, and without
        # gpus_per_node, the local executor sets CUDA_VISIBLE_DEVICES="" and JAX runs on the CPU
        gpus = local_gpus(_GPUS.value, host_gpus())
        ex = submitit.LocalExecutor(folder=folder)
        split.pop("slurm_array_parallelism", None)
        ex.update_parameters(
            timeout_min=_TIMEOUT.value, gpus_per_node=len(gpus), visible_gpus=gpus, **split
        )
        return ex
    ex = submitit.AutoExecutor(folder=folder, cluster=_CLUSTER.value)
    params = {"timeout_min": _TIMEOUT.value, "name": f"nalu-{_TABLE.value}", **split}
    if _CPUS.value:
        params["cpus_per_task"] = _CPUS.value
    if _MEM.value:
        params["mem_gb"] = _MEM.value
    if _GPUS.value is not None:
        params["gpus_per_node"] = _GPUS.value
    if _GRES.value:
        params["slurm_gres"] = _GRES.value
    if _PARTITION.value:
        params["slurm_partition"] = _PARTITION.value
    ex.update_parameters(**params)
    return ex


def cell_budget() -> dict:
    """Each task's ``seeds``, ``steps`` and config ``overrides``: the flags', or ``--smoke``'s
    (as ``launch.reproduce --smoke``) where the flags leave them unset."""
    from nalu_jax.reproduce.cells import SMOKE, SMOKE_SEEDS, SMOKE_STEPS

    seeds, steps = _SEEDS.value, _STEPS.value
    if _SMOKE.value:
        seeds, steps = seeds or SMOKE_SEEDS, steps or SMOKE_STEPS
    return dict(seeds=seeds, steps=steps, overrides=SMOKE if _SMOKE.value else None)


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}.")
    if not _TABLE.value or not _WORKDIR.value:
        fail("--table and --workdir are required.")
    if _GPUS.value is not None and _GPUS.value < 0:
        fail(f"--gpus_per_node must be a non-negative integer, got {_GPUS.value}.")
    if _MEM.value is not None and not _MEM.value > 0:
        fail(f"--mem_gb must be a positive number of GB, got {_MEM.value:g}.")
    logging.set_verbosity(logging.WARNING)
    # Tasks import nalu_jax from this checkout (SLURM and the local executor pass the env on).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    from nalu_jax import reproduce
    from nalu_jax.reproduce import jobs, specs
    from nalu_jax.runtime.workdir import refuse_unwritable

    try:
        spec = specs.table(_TABLE.value)
        keys = [c.key for c in specs.cells(spec, _MODELS.value, _OPS.value)]
        if not keys:
            fail("no cells selected.")
        refuse_unwritable("--workdir", _WORKDIR.value)
        os.makedirs(_WORKDIR.value, exist_ok=True)
        workdir = os.path.abspath(_WORKDIR.value)
        common = cell_budget()
        ex = executor()
        if _MODE.value == "array":
            n = _CELLS_PER_TASK.value
            groups = [keys[i : i + n] for i in range(0, len(keys), n)]
            with ex.batch():
                submitted = [
                    ex.submit(jobs.run_cells, _TABLE.value, g, workdir, **common) for g in groups
                ]
        else:
            submitted = [
                ex.submit(jobs.run_cells_distributed, _TABLE.value, keys, workdir, **common)
            ]
        print(f"submitted {len(submitted)} job(s): {[j.job_id for j in submitted]}", flush=True)
        if not _WAIT.value:
            print(f"when done: python -m launch.reproduce --report_only --table={spec.name} "
                  f"--workdir={workdir}")  # fmt: skip
            return
        for j in submitted:
            j.results()  # raises the task's exception, with its log
        reproduce.write(spec, workdir)
    except ConfigError as e:
        fail(str(e))
    with open(os.path.join(workdir, "table.md")) as f:
        print(f.read())


if __name__ == "__main__":
    cli.run(main)
