"""``train_and_evaluate(config, workdir)``: many seeds in one compiled program, judged and reported.

The loop is Python over jitted evaluation periods; each period is one ``evaluate`` (before that
step's update) and ``eval_every`` updates in a ``lax.scan``, both ``vmap``-ed over seeds.
Between periods it records metrics, updates the progress bar and, every ``checkpoint_every``
steps, saves all seeds' states and the evaluation history (orbax). Re-running the same command
on the same workdir resumes from the last checkpoint and ends with the same per-seed results.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import time
import warnings

import jax
import numpy as np

from nalu_jax import metrics as metrics_lib
from nalu_jax import reporting
from nalu_jax.checkpoint import Checkpointer
from nalu_jax.config_utils import ConfigError, threshold_settings, validate_run
from nalu_jax.population import pad_seed_numbers, seed_mesh, shard_population, sharded
from nalu_jax.tasks.thresholds import success_threshold
from nalu_jax.train import default_chunk, num_evaluations, seed_keys

HISTORY_FIELDS = ("valid_mse", "test_mse", "sparsity", "train_loss")

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


def config_json(config) -> str:
    return json.dumps(json.loads(config.to_json_best_effort()), indent=2, sort_keys=True) + "\n"


def prepare_workdir(workdir: str, config, overwrite: bool) -> None:
    """Create ``workdir``; refuse one that holds a run of a different config (unless overwrite)."""
    try:
        os.makedirs(workdir, exist_ok=True)
        probe = os.path.join(workdir, ".write-test")
        with open(probe, "w") as f:
            f.write("")
        os.unlink(probe)
    except OSError as e:
        raise ConfigError(f"workdir {workdir!r} is not writable ({e.strerror}).") from None
    path = os.path.join(workdir, "config.json")
    text = config_json(config)
    if os.path.exists(path):
        with open(path) as f:
            same = f.read() == text
        if not same and not overwrite:
            raise ConfigError(
                f"workdir {workdir!r} holds a run of a different config; "
                "use another workdir or pass --overwrite to replace it."
            )
        if not same:
            for name in os.listdir(workdir):
                target = os.path.join(workdir, name)
                shutil.rmtree(target) if os.path.isdir(target) else os.unlink(target)
    reporting.atomic_write(path, text)


def _empty_history(num_evals: int, num_seeds: int) -> dict:
    hist = {k: np.full((num_evals, num_seeds), np.nan, np.float32) for k in HISTORY_FIELDS}
    hist["step"] = np.full((num_evals,), -1, np.int64)
    return hist


def _progress(total: int, initial: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True, mininterval=1.0)


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Train ``config.num_seeds`` seeds, judge each, write the workdir; returns the summary."""
    validate_run(config)
    trainer = build_trainer(config)
    threshold = trainer.threshold
    if threshold is None:
        threshold = success_threshold(trainer.task, **threshold_settings(config))
    prepare_workdir(workdir, config, overwrite)

    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    num_evals = num_evaluations(config)
    hp, data = trainer.hparams, trainer.eval_data
    block = int(config.seed_block)
    n = len(seeds)
    mesh = seed_mesh()
    init = jax.jit(jax.vmap(trainer.init))
    evaluate = jax.jit(sharded(trainer.evaluate, block, (0, None, None), mesh))
    train = jax.jit(sharded(trainer.train, block, (0, None), mesh), donate_argnums=0)

    t0 = time.perf_counter()
    padded = pad_seed_numbers(seeds, block * mesh.size)
    states = shard_population(init(seed_keys(config.seed, padded)), mesh)
    evaluate_c = evaluate.lower(states, hp, data).compile()
    train_c = train.lower(states, hp).compile() if config.num_steps else None
    compile_s = time.perf_counter() - t0

    ckpt = Checkpointer(os.path.join(workdir, "checkpoints"))
    history, done = _empty_history(num_evals, len(seeds)), 0
    latest = ckpt.latest_step()
    if latest is not None:
        saved = ckpt.restore(latest, {"states": states, "history": history})
        states = shard_population(saved["states"], mesh)
        history = {k: np.asarray(v) for k, v in saved["history"].items()}
        done = int(np.sum(history["step"] >= 0))

    chunk = default_chunk(config)
    bar = _progress(int(config.num_steps), done * int(config.eval_every), progress)
    t_loop = time.perf_counter()
    trained_steps = 0
    for e in range(done, num_evals):
        states, m = evaluate_c(states, hp, data)
        history["step"][e] = e * config.eval_every
        for name, value in zip(("valid_mse", "test_mse", "sparsity"), m, strict=True):
            history[name][e] = np.asarray(value)[:n]
        if e == num_evals - 1:
            break
        states, losses = train_c(states, hp)
        with warnings.catch_warnings():  # all-NaN rows: diverged seeds
            warnings.simplefilter("ignore", RuntimeWarning)
            history["train_loss"][e + 1] = np.nanmean(np.asarray(losses)[:n], axis=1)
        trained_steps += int(config.eval_every)
        if bar is not None:
            solved = reporting.running_solved(
                history["valid_mse"][: e + 1], history["test_mse"][: e + 1], threshold
            )[-1]
            bar.set_postfix(solved=int(solved), diverged=int(np.sum(states.diverged[:n])))
            bar.update(int(config.eval_every))
        if (e + 1) % chunk == 0 and e + 1 < num_evals - 1:  # the last one is saved below
            ckpt.save((e + 1) * config.eval_every, {"states": states, "history": history})
            lines = reporting.metrics_lines(
                history, e + 1, threshold, np.asarray(states.diverged_at)[:n]
            )
            reporting.atomic_write(os.path.join(workdir, "metrics.jsonl"), lines)
    loop_s = time.perf_counter() - t_loop
    if bar is not None:
        bar.close()
    if done < num_evals:
        ckpt.save(int(config.num_steps), {"states": states, "history": history})
    ckpt.close()

    diverged = np.asarray(states.diverged)[:n]
    diverged_at = np.asarray(states.diverged_at)[:n]
    judgement = metrics_lib.judge_seeds(
        history["step"],
        history["valid_mse"],
        history["test_mse"],
        history["sparsity"],
        threshold,
        diverged,
    )
    summary = metrics_lib.summarize(judgement, threshold)
    task = trainer.task
    summary.update(
        model=config.model.name,
        task=config.task.kind,
        op=task.op,
        input_size=task.input_size,
        interpolation_range=task.interpolation_range,
        extrapolation_range=task.extrapolation_range,
        num_steps=int(config.num_steps),
        first_seed=int(config.first_seed),
        root_seed=int(config.seed),
        threshold=float(threshold),
        wall_time_s=compile_s + loop_s,
        compile_time_s=compile_s,
        seed_steps_per_s=(len(seeds) * trained_steps / loop_s) if trained_steps else 0.0,
    )
    write_outputs(workdir, seeds, judgement, diverged_at, history, num_evals, threshold, summary)
    return summary


def format_summary(summary: dict) -> str:
    return reporting.summary_markdown(summary)


def write_outputs(workdir, seeds, judgement, diverged_at, history, num_evals, threshold, summary):
    """metrics.jsonl, seeds.csv, summary.json, summary.md and curves.png (all atomic)."""
    join = lambda name: os.path.join(workdir, name)
    reporting.atomic_write(
        join("metrics.jsonl"), reporting.metrics_lines(history, num_evals, threshold, diverged_at)
    )
    reporting.atomic_write(join("seeds.csv"), reporting.seeds_csv(seeds, judgement, diverged_at))
    reporting.atomic_write(join("summary.json"), reporting.dumps(summary) + "\n")
    reporting.atomic_write(join("summary.md"), reporting.summary_markdown(summary))
    reporting.atomic_write(join("curves.png"), reporting.curves_png(history, num_evals, threshold))
