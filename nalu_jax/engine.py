"""``train_and_evaluate(config, workdir)``: many seeds in one compiled program, judged and reported.

The population is every (sweep setting, seed) pair — one setting unless ``config.sweep`` lists
values. This process takes its slice of it (all of it unless multi-host, see
``nalu_jax.distributed``), pads it to whole blocks on every local device and runs the loop:
Python over jitted evaluation periods, each one ``evaluate`` (before that step's update) and
``eval_every`` updates in a ``lax.scan``, ``vmap``-ed over a block of runs, ``lax.map``-ed over
blocks (``nalu_jax.population``). Between periods it records metrics, updates the progress bar
and, every ``checkpoint_every`` steps, saves the states and evaluation history (orbax).
Re-running the same command on the same workdir resumes from the last checkpoint and ends with
the same per-seed results.
"""

from __future__ import annotations

import importlib
import os

import numpy as np

from nalu_jax import distributed, reporting, sweep
from nalu_jax.config_utils import (
    ConfigError,
    apply_precision,
    threshold_settings,
    validate_run,
)
from nalu_jax.loop import PerRun, run_population
from nalu_jax.tasks.thresholds import success_threshold
from nalu_jax.train import num_evaluations, seed_keys
from nalu_jax.workdir import prepare_workdir

#: ``config.task.kind`` → the ``make_train`` building its per-seed ``Trainer`` ("module:function")
TRAINERS: dict[str, str] = {
    "arithmetic": "nalu_jax.train:make_train",
    "single_module": "nalu_jax.train:make_train",
    "recurrent": "nalu_jax.recurrent:make_train",
}


def build_trainer(config):
    """The ``Trainer`` of ``config.task.kind`` (see ``nalu_jax.train.Trainer``)."""
    kind = config.task.kind
    if kind not in TRAINERS:
        raise ConfigError(f"task.kind must be one of {sorted(TRAINERS)}, got {kind!r}.")
    module, function = TRAINERS[kind].split(":")
    return getattr(importlib.import_module(module), function)(config)


def build_population(config):
    """Settings, the trainer whose program all runs share, per-setting hparams and thresholds."""
    settings = sweep.expand(config)
    trainers = [build_trainer(s.config) for s in settings]
    thresholds = [
        t.threshold
        if t.threshold is not None
        else success_threshold(t.task, **threshold_settings(s.config))
        for s, t in zip(settings, trainers, strict=True)
    ]
    hparams = [t.hparams for t in trainers]
    program = trainers[0]
    if set(sweep.swept(config)) & set(sweep.RANGE_FIELDS):  # ranges become traced leaves
        ranges = sweep.common_ranges(settings)
        program = build_trainer(sweep.with_ranges(settings[0].config, ranges[0]))
        hparams = [
            hp.replace(**{k: sweep.range_leaves(v) for k, v in r.items()})
            for hp, r in zip(hparams, ranges, strict=True)
        ]
    return settings, program, hparams, thresholds


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Train every seed (of every sweep setting), judge each, write the workdir.

    Returns the summary dict (with ``"settings"``: one summary per setting, for a sweep), or
    ``None`` in a non-zero process of a multi-host run (process 0 writes the results).
    """
    validate_run(config)
    apply_precision(config)  # before anything is traced
    settings, program, hparams, thresholds = build_population(config)
    proc = distributed.process_info()
    prepare_workdir(workdir, config, overwrite, proc)

    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    run_setting = np.repeat(np.arange(len(settings)), len(seeds))  # setting-major
    run_seed = np.tile(seeds, len(settings))
    mine = distributed.process_slice(len(run_seed), proc)
    run_threshold = np.asarray(thresholds, np.float64)[run_setting[mine]]
    single = len(settings) == 1 and proc.count == 1

    tracker = reporting.SolvedTracker(mine.stop - mine.start, run_threshold)

    def postfix(history, done):  # incremental: each evaluation row is read once
        while tracker.rows < done:
            tracker.update(history["valid_mse"][tracker.rows], history["test_mse"][tracker.rows])
        return {"solved": tracker.solved}

    def write_metrics(history, done, diverged_at):  # progress file of a single-setting run
        lines = reporting.metrics_lines(history, done, thresholds[0], diverged_at)
        reporting.atomic_write(os.path.join(workdir, "metrics.jsonl"), lines)

    run_hp = PerRun(sweep.stack_hparams([hparams[h] for h in run_setting[mine]]))
    result = run_population(
        init=program.init,
        keys=seed_keys(config.seed, run_seed[mine]),
        train=program.train,
        evaluate=program.evaluate,
        train_args=(run_hp,),
        eval_args=(run_hp, program.eval_data),
        config=config,
        checkpoint_dir=distributed.checkpoint_dir(workdir, proc),
        checkpoint_process=proc.index if proc.count > 1 else None,
        progress=progress,
        postfix=postfix,
        on_checkpoint=write_metrics if single else None,
    )  # fmt: skip
    part = {
        "history": result.history,
        "diverged": result.diverged,
        "diverged_at": result.diverged_at,
        "runs": np.arange(mine.start, mine.stop),
        "compile_s": result.compile_s,
        "loop_s": result.loop_s,
        "seed_steps": (mine.stop - mine.start) * result.trained_steps,
    }
    merged = distributed.gather_parts(workdir, proc, part, len(run_seed))
    if merged is None:
        return None
    return reporting.write_population(
        workdir, config, settings, thresholds, run_setting, run_seed, merged,
        num_evaluations(config),
    )  # fmt: skip


def format_summary(summary: dict) -> str:
    if "settings" in summary:
        return reporting.combined_markdown(summary["settings"])
    return reporting.summary_markdown(summary)
