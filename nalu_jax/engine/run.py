"""The run loop every experiment shares: ``run(experiment, config, workdir)``.

``run`` validates the config, expands ``config.sweep`` into settings, asks the experiment for
its population (one compiled program; per-setting hyperparameters and judging facts), claims
the workdir, takes this process's slice of the (setting, seed) runs (all of them unless
multi-host, ``nalu_jax.runtime.distributed``) and trains it with ``run_population``; process 0 merges
the parts and the experiment judges and writes its files.

``run_population`` (``nalu_jax.engine.loop``, re-exported here) is the loop itself.

An experiment is an ``Experiment`` record (``nalu_jax.experiments.contract``: its hooks, which
are required, their types and the order they are called in), one per module of
``nalu_jax.experiments``; ``EXPERIMENTS[name]`` selects it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import jax
import numpy as np

from nalu_jax.config import ConfigError, apply_precision
from nalu_jax.engine import sweep
from nalu_jax.engine.blocks import padding_note, resolve_seed_block, seed_block_for
from nalu_jax.engine.loop import (  # noqa: F401  (re-exported: the loop's public names)
    Interrupted,
    PerRun,
    PopulationResult,
    metrics_dict,
    padded_size,
    run_population,
    say,
)
from nalu_jax.engine.train import Trainer, budget_warnings, num_evaluations, seed_keys
from nalu_jax.reporting.report import atomic_write, dumps
from nalu_jax.runtime import distributed
from nalu_jax.runtime.workdir import extended_from, prepare_workdir, release
from nalu_jax.units.precision import Precision, precision_named, use_matmul_precision


@dataclasses.dataclass
class Population:
    """What an experiment's ``population`` returns: the program every run shares, and per
    sweep setting its ``HParams`` and whatever the experiment needs to judge (``contexts``)."""

    trainer: Trainer
    hparams: list
    contexts: list  # one dict per setting (e.g. its task and success threshold)
    solved: Any = None  # run_setting [n] -> ((history, num_done) -> bool [n]), or None
    # (history, num_done, diverged_at, first) -> the lines of evaluations first ≤ e < num_done
    # (a line depends only on the history up to its evaluation), or None
    metrics_jsonl: Any = None

    def setting(self, h: int) -> Population:
        """The population of setting ``h`` alone (for its report)."""
        return dataclasses.replace(self, hparams=[self.hparams[h]], contexts=[self.contexts[h]])


@dataclasses.dataclass
class Outcome:
    """Everything ``write_results`` gets (one sweep setting): per program label, its population
    and merged results; ``settings[0]`` is the setting, with its resolved config."""

    settings: list
    run_setting: np.ndarray  # [R] setting index of each run (setting-major)
    run_seed: np.ndarray  # [R] seed number of each run
    populations: dict  # label -> Population
    results: dict  # label -> merged results (history, diverged, diverged_at, timing)


def programs_over(config, section: str, field: str, names) -> list:
    """``[(name, config with section.field = name)]``: one compiled program per name (e.g. per
    activation or agent, whose networks differ), run one after another."""
    out = []
    for name in names:
        c = config.copy_and_resolve_references()
        with c.unlocked():
            c[section][field] = name
        out.append((name, c))
    return out


def events_writer(workdir, label, config, proc, settings, run_setting, solved):
    """TensorBoard events of this program in ``workdir/tensorboard[/label][/process_p]``, or
    None when ``config.tensorboard`` is off."""
    if not config.get("tensorboard", True):
        return None
    from nalu_jax.reporting.events import EventWriter

    logdir = _label_dir(workdir, "tensorboard", label)
    if proc.count > 1:
        logdir = os.path.join(logdir, f"process_{proc.index}")
    names = [s.name for s in settings] if len(settings) > 1 else [""]
    return EventWriter(logdir, names, run_setting, int(config.eval_every), solved)


def _nbytes(tree) -> int:
    return int(
        sum(np.prod(x.shape, dtype=np.int64) * x.dtype.itemsize for x in jax.tree.leaves(tree))
    )


def _sizes(pop: Population, runs: int, config, devices):
    """``(state, history, shared, padded)``: bytes of one run's state, of the evaluation
    history of ``runs``, of the shared data, and the padded run count (with the seed block
    ``devices`` would run: an unresolved "auto" is resolved for them)."""
    trainer = pop.trainer
    state = jax.eval_shape(trainer.init, jax.random.key(0))
    metrics = jax.eval_shape(trainer.evaluate, state, pop.hparams[0], trainer.eval_data)[1]
    per_eval = _nbytes(metrics_dict(metrics)) + 4  # + the training loss
    platform = devices[0].platform
    block = seed_block_for(config.seed_block, config.get("cpu_seed_block"), platform=platform,
                           runs=runs, devices=len(devices))  # fmt: skip
    padded = padded_size(runs, block * len(devices))
    shared = _nbytes(trainer.train_data) + _nbytes(trainer.eval_data)
    return _nbytes(state), runs * num_evaluations(config) * per_eval, shared, padded


def memory_estimate(pop: Population, runs: int, config, devices=None) -> int:
    """Bytes a population of ``runs`` needs on a CPU host: each run's state about four times
    (on the devices, the checkpoint snapshot, its unpadded copy and orbax's buffer), the
    evaluation history, and the shared data."""
    devices = jax.local_devices() if devices is None else devices
    state, history, shared, padded = _sizes(pop, runs, config, devices)
    return 4 * padded * state + history + shared


def device_memory_estimate(pop: Population, runs: int, config, devices) -> tuple[int, int]:
    """``(on each device, on the host)``: bytes a population of ``runs`` needs where the
    devices have memory of their own (GPU, TPU): each device holds its share of the padded
    runs' states and the shared data; the host the other three copies of the states
    (checkpoint snapshot, unpadded copy, orbax's buffer) and the evaluation history."""
    state, history, shared, padded = _sizes(pop, runs, config, devices)
    return -(-padded // len(devices)) * state + shared, 3 * padded * state + history


def available_memory() -> int:
    """Bytes this host can still give (``MemAvailable``), or the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def device_free_memory(devices) -> int | None:
    """Bytes free on the fullest of ``devices`` (``memory_stats()``: ``bytes_limit`` −
    ``bytes_in_use``), or None where a device does not say (the CPU)."""
    free = []
    for device in devices:
        stats = device.memory_stats() if device.platform != "cpu" else None
        if not stats or "bytes_limit" not in stats:
            return None
        free.append(int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)))
    return min(free) if free else None


def check_memory(pop: Population, runs: int, config, devices=None) -> None:
    """Refuse, in one sentence, a population that cannot fit: on a CPU in this host's memory;
    on devices with memory of their own (GPU, TPU) in theirs (each its share) and the host's.
    ``devices``: default ``jax.local_devices()``."""
    devices = jax.local_devices() if devices is None else devices
    fix = "use fewer seeds per process or more processes (--num_processes)."
    free = device_free_memory(devices)
    if free is None:
        need, have = memory_estimate(pop, runs, config, devices), available_memory()
    else:
        on_device, need = device_memory_estimate(pop, runs, config, devices)
        if on_device > 0.9 * free:
            kind = devices[0].platform
            raise ConfigError(
                f"num_seeds={config.num_seeds} needs about {on_device / 2**30:.1f} GiB on each "
                f"{kind} device ({runs} runs over {len(devices)}), more than the "
                f"{free / 2**30:.1f} GiB free there; {fix}"
            )
        have = available_memory()
    if need > 0.9 * have:
        raise ConfigError(
            f"num_seeds={config.num_seeds} needs about {need / 2**30:.1f} GiB on this host "
            f"({runs} runs), more than the {have / 2**30:.1f} GiB available; {fix}"
        )


def _label_dir(workdir: str, name: str, label: str) -> str:
    return os.path.join(workdir, name) if not label else os.path.join(workdir, name, label)


def run(
    experiment, config, workdir: str, *, overwrite: bool = False, progress: bool = True,
    warn_budget: bool = True,
):  # fmt: skip
    """Train every seed (of every sweep setting and program) of ``experiment`` (an
    ``Experiment``, e.g. ``EXPERIMENTS["arithmetic"]``), judge, write the workdir.

    Everything is built and traced at ``config.matmul_precision`` (``nalu_jax.units.precision``);
    a run below full precision says so in its ``summary.json`` and ``summary.md``.
    Returns the experiment's summary dict, or ``None`` in a non-zero process of a multi-host
    run (process 0 writes the results). ``warn_budget=False``: no budget warning and no
    padding note (a timing run's short budget and few seeds are not the run a user made).
    """
    name = config.get("matmul_precision", "highest")
    with use_matmul_precision(name):
        summary = _run(experiment, config, workdir, overwrite, progress, warn_budget)
    if summary is not None and precision_named(name) != Precision.HIGHEST:
        summary = _state_matmul_precision(workdir, name, summary)
    return summary


def _run(experiment, config, workdir: str, overwrite: bool, progress: bool, warn_budget: bool):
    sweep.validate(experiment, config)
    resolve_seed_block(config)  # "auto": the platform's block, recorded in config.json
    apply_precision(config)  # config.precision 64: jax_enable_x64, before anything is traced
    settings = sweep.expand(config, experiment.sweepable)
    programs = experiment.programs(config)
    populations = {label: experiment.population(cfg, settings) for label, cfg in programs}
    hparams = [h for p in populations.values() for h in p.hparams]
    for message in budget_warnings(config, hparams) if warn_budget else ():
        say(message)  # a budget that cuts the regulariser ramp short
    proc = distributed.process_info()
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    run_setting = np.repeat(np.arange(len(settings)), len(seeds))  # setting-major
    run_seed = np.tile(seeds, len(settings))
    mine = distributed.process_slice(len(run_seed), proc)
    for pop in populations.values():  # before the workdir is claimed
        check_memory(pop, mine.stop - mine.start, config)
    if warn_budget and proc.index == 0:  # a few seeds in large blocks: mostly padding
        note = padding_note(mine.stop - mine.start, config.seed_block, jax.local_device_count())
        if note is not None:
            say(note)
    prepare_workdir(workdir, config, overwrite, proc)
    try:
        previous = extended_from(workdir)  # a larger num_steps goes on from these runs' checkpoints
        populations = {
            label: experiment.prepare(config, workdir, pop, progress)
            for label, pop in populations.items()
        }
        results = {}
        for label, _ in programs:
            part = _train_program(
                populations[label], label, config, workdir, proc, settings, run_setting, run_seed,
                mine, progress, single=len(settings) == 1 and proc.count == 1 and len(programs) == 1,
                extend_from=previous,
            )  # fmt: skip
            results[label] = distributed.gather_parts(
                _label_dir(workdir, "parts", label), proc, part, len(run_seed)
            )
            if results[label] is None:
                return None
        outcome = Outcome(settings, run_setting, run_seed, populations, results)
        return _write_results(experiment, workdir, config, outcome)
    finally:
        release(workdir, remove=True)  # a finished (or stopped) run leaves no lock behind


class ProgressFile:
    """``metrics.jsonl`` while a one-setting run trains, rewritten atomically at each checkpoint.

    Only the evaluations since the last checkpoint are formatted (``lines(history, done,
    diverged_at, first)``); the lines before them are kept from earlier calls, so a long run's
    checkpoints cost what their new evaluations do, not what the whole history does. The first
    call in a process formats every line (a resumed run holds none yet).
    """

    def __init__(self, path: str, lines):
        self.path, self.lines = path, lines
        self.parts, self.done = [], 0

    def __call__(self, history, done: int, diverged_at) -> None:
        if done < self.done:  # not a continuation of what is held: start again
            self.parts, self.done = [], 0
        self.parts.append(self.lines(history, done, diverged_at, self.done))
        self.done = done
        atomic_write(self.path, "".join(self.parts))


def _train_program(pop, label, config, workdir, proc, settings, run_setting, run_seed, mine,
                   progress, single, extend_from=()) -> dict:  # fmt: skip
    """This process's runs of one program → its part of the results."""
    solved = pop.solved(run_setting[mine]) if pop.solved else None
    postfix = (lambda h, done: {"solved": int(solved(h, done).sum())}) if solved else None
    events = events_writer(workdir, label, config, proc, settings, run_setting[mine], solved)
    on_checkpoint = None
    if single and pop.metrics_jsonl is not None:  # the progress file of a one-setting run
        on_checkpoint = ProgressFile(os.path.join(workdir, "metrics.jsonl"), pop.metrics_jsonl)

    if len(settings) == 1:  # hyperparameters shared by every run; a sweep: one per run
        run_hp = pop.hparams[0]
    else:
        run_hp = PerRun(sweep.stack_hparams([pop.hparams[h] for h in run_setting[mine]]))
    try:
        result = run_population(
            pop.trainer,
            seed_keys(config.seed, run_seed[mine]),
            run_hp,
            config,
            distributed.checkpoint_dir(_label_dir(workdir, "checkpoints", label), proc),
            checkpoint_process=proc.index if proc.count > 1 else None,
            progress=progress,
            desc=label or None,
            postfix=postfix,
            on_checkpoint=on_checkpoint,
            on_evaluation=events.write if events else None,
            extend_from=extend_from,
        )
    finally:
        if events:
            events.close()
    resumed = result.resumed_from_step
    return {
        "history": result.history,
        "diverged": result.diverged,
        "diverged_at": result.diverged_at,
        "runs": np.arange(mine.start, mine.stop),
        "compile_s": result.compile_s,
        "loop_s": result.loop_s,
        "seed_steps": (mine.stop - mine.start) * result.trained_steps,
        "resumed_from_step": -1 if resumed is None else resumed,
        "stopped_at_step": -1 if result.stopped_at is None else result.stopped_at,
    }


def _write_results(experiment, workdir, config, outcome: Outcome):
    """One setting: the experiment writes ``workdir``. A sweep: each setting alone in
    ``workdir/settings/NNN``, then the combined ``summary.json`` / ``summary.md``."""
    settings = outcome.settings
    if len(settings) == 1:
        return experiment.write_results(workdir, config, outcome)
    summaries = []
    for h, setting in enumerate(settings):
        idx = np.flatnonzero(outcome.run_setting == h)
        one = Outcome(
            [setting],
            np.zeros(len(idx), int),
            outcome.run_seed[idx],
            {label: pop.setting(h) for label, pop in outcome.populations.items()},
            {label: _select(merged, idx) for label, merged in outcome.results.items()},
        )
        out = os.path.join(workdir, "settings", f"{h:03d}")
        os.makedirs(out, exist_ok=True)
        summary = experiment.write_results(out, setting.config, one)
        summary.update(setting=setting.name, setting_values=setting.values)
        _state_setting(out, h, len(settings), setting, summary)
        summaries.append(summary)
    combined = {"settings": summaries}
    atomic_write(os.path.join(workdir, "summary.json"), dumps(combined) + "\n")
    atomic_write(os.path.join(workdir, "summary.md"), experiment.format_summary(combined))
    return combined


def _state_matmul_precision(workdir: str, name: str, summary: dict) -> dict:
    """Make the workdir's ``summary.json`` (and each sweep setting's) carry ``matmul_precision``
    and its ``summary.md`` open with a sentence saying the run was below full precision."""
    note = (
        f"Matrix products at matmul_precision = {name!r}, below full float32 precision "
        "(on a GPU: TF32 or bfloat16 passes).\n\n"
    )
    settings = os.path.join(workdir, "settings")
    subdirs = sorted(os.listdir(settings)) if os.path.isdir(settings) else []
    for out in [workdir, *(os.path.join(settings, d) for d in subdirs)]:
        md, path = os.path.join(out, "summary.md"), os.path.join(out, "summary.json")
        if os.path.exists(md):
            with open(md) as f:
                atomic_write(md, note + f.read())
        if os.path.exists(path):
            with open(path) as f:
                written = json.load(f)
            if isinstance(written, dict):
                atomic_write(path, dumps({**written, "matmul_precision": name}) + "\n")
    return {**summary, "matmul_precision": name}


def _state_setting(out: str, h: int, count: int, setting, summary: dict) -> None:
    """Make ``settings/NNN``'s ``summary.md`` and ``summary.json`` say which setting they are."""
    values = ", ".join(f"{k} = {v}" for k, v in setting.values.items())
    md = os.path.join(out, "summary.md")
    if os.path.exists(md):
        with open(md) as f:
            text = f.read()
        atomic_write(md, f"Sweep setting {h:03d} of {count}: {values}.\n\n{text}")
    path = os.path.join(out, "summary.json")
    if os.path.exists(path):
        with open(path) as f:
            written = json.load(f)
        if isinstance(written, dict):
            written.update(setting=summary["setting"], setting_values=summary["setting_values"])
            atomic_write(path, dumps(written) + "\n")


def _select(merged: dict, idx) -> dict:
    """The merged results of runs ``idx`` (history ``[E, R, ...]`` → ``[E, len(idx), ...]``)."""
    history = {k: (v if k == "step" else v[:, idx]) for k, v in merged["history"].items()}
    picked = {k: merged[k][idx] for k in ("diverged", "diverged_at", "runs")}
    return {**merged, "history": history, **picked}
