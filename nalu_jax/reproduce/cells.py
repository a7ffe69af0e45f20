"""Running a table's cells: each cell is one ``nalu_jax.engine.run.run`` in ``WORKDIR/cells/OP-MODEL``.

A cell whose workdir holds a ``summary.json`` of the same config is done and skipped (its
summary is read back); one that stopped part-way resumes from its checkpoint (``run.run``).
``calibrate`` times a short run of a cell on this machine; ``estimate_s`` extrapolates it to the
cell's whole protocol.
"""

from __future__ import annotations

import json
import os
import tempfile
import time

from nalu_jax.reproduce.specs import Cell, TableSpec, cell_config

SMOKE = {"eval_every": 500, "eval_size": 1_000, "task.threshold_samples": 100_000}
#: ``--smoke``'s budget unless ``--seeds``/``--steps`` say otherwise: seconds per cell
SMOKE_SEEDS, SMOKE_STEPS, SMOKE_CALIBRATION_STEPS = 2, 2_000, 500


def cell_dir(workdir: str, cell: Cell) -> str:
    return os.path.join(workdir, "cells", cell.key)


def apply(config, overrides: dict | None, *, present_only: bool = False):
    """``config`` with dotted ``overrides`` (e.g. ``{"eval_size": 1000}``) set; checkpoints
    follow a changed ``eval_every``. ``present_only``: a field the config lacks is left out
    (``--smoke``'s sizes on an experiment of one's own)."""
    for field, value in (overrides or {}).items():
        *path, last = field.split(".")
        node = config
        try:
            for p in path:
                node = node[p]
            node[last]  # noqa: B018 - a missing field raises here
        except (KeyError, AttributeError):
            if present_only:
                continue
            raise
        node[last] = value
    if overrides and "eval_every" in overrides:
        config.checkpoint_every = config.eval_every
    return config


def configs(spec: TableSpec, cells, seeds=None, steps=None, overrides=None, items=()) -> dict:
    """``{cell.key: config}`` for the runnable cells (unavailable variants left out), with
    ``overrides`` and then the ``--config.FIELD=VALUE`` ``items`` applied, and the seed block
    resolved for this platform (``engine.blocks``): what a cell's workdir and committed
    results record."""
    from nalu_jax.config import apply_overrides
    from nalu_jax.engine import sweep
    from nalu_jax.engine.blocks import resolve_seed_block
    from nalu_jax.experiments import experiment_of

    out = {}
    for c in cells:
        if c.variant.unavailable:
            continue
        own = spec.kind == "experiment"
        config = apply(cell_config(spec, c, seeds, steps), overrides, present_only=own)
        if items:
            apply_overrides(config, items)
        # checked before any cell runs: a bad value (or an unregistered experiment) is one
        # sentence
        sweep.validate(experiment_of(config), config)
        out[c.key] = resolve_seed_block(config)
    return out


def finished(directory: str, config) -> dict | None:
    """The summary of a finished run of ``config`` in ``directory``, or None."""
    from nalu_jax.runtime.workdir import config_json

    paths = [os.path.join(directory, n) for n in ("summary.json", "config.json")]
    if not all(os.path.exists(p) for p in paths):
        return None
    with open(paths[1]) as f:
        if f.read() != config_json(config):
            return None
    with open(paths[0]) as f:
        return json.load(f)


def run_cell(cell: Cell, config, workdir: str, *, progress=True, overwrite=False, directory=None):
    """Run (or resume, or skip) one cell in ``directory`` (default ``cell_dir``); its summary,
    or None in a non-zero process. A finished run of ``config`` there is skipped, with or
    without ``overwrite``, which starts clean only a directory that holds a run of another
    config."""
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of
    from nalu_jax.runtime.workdir import resumes

    directory = directory or cell_dir(workdir, cell)
    summary = finished(directory, config)
    if summary is not None:
        return summary
    # ``overwrite`` replaces what holds another protocol; this cell's own run in the workdir
    # (stopped or shorter) goes on from its checkpoints, as the same command promises
    restart = overwrite and not resumes(directory, config)
    return run(experiment_of(config), config, directory, overwrite=restart, progress=progress)


def num_runs(config) -> int:
    """Seeds × sweep settings: the runs of one cell's program."""
    from nalu_jax.engine import sweep

    return int(config.num_seeds) * len(sweep.expand(config))


def calibrate(config, steps: int = 2_000) -> dict:
    """Time ``steps`` steps of ``config`` (its seeds and settings) in a scratch workdir.

    Returns ``{"seed_steps_per_s", "compile_s", "wall_s", "seed_steps"}``; ``seed_steps_per_s``
    counts every run of the program (seeds × settings) and includes the evaluations; the
    run checkpoints as ``config`` does (at most at its end).
    """
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of

    c = config.copy_and_resolve_references()
    c.num_steps = max(int(steps) // c.eval_every, 1) * c.eval_every
    c.checkpoint_every = min(int(config.checkpoint_every), c.num_steps)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nalu-calibrate-") as d:
        s = run(experiment_of(c), c, d, progress=False, warn_budget=False)
    wall = time.perf_counter() - t0
    s = s["settings"][0] if "settings" in s else s
    seed_steps = num_runs(c) * int(c.num_steps)
    return {  # an experiment whose summary has no timing: its wall time stands for it
        "seed_steps_per_s": float(s.get("seed_steps_per_s", seed_steps / wall)),
        "compile_s": float(s.get("compile_time_s", 0.0)),
        "wall_s": wall,
        "seed_steps": seed_steps,
    }


def estimate_s(config, calibration: dict) -> float:
    """Seconds one cell of ``config`` should take, from a ``calibrate`` result: the timing
    run's fixed cost (compilation, setup, the judgement and the files: its wall time less its
    training) plus the cell's seed-steps at the timing run's speed."""
    speed = max(calibration["seed_steps_per_s"], 1e-9)
    fixed = max(calibration["wall_s"] - calibration["seed_steps"] / speed, calibration["compile_s"])
    return fixed + num_runs(config) * int(config.num_steps) / speed


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
