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
import time
import warnings

import jax
import numpy as np

from nalu_jax import distributed, reporting, sweep
from nalu_jax.checkpoint import Checkpointer
from nalu_jax.config_utils import ConfigError, threshold_settings, validate_run
from nalu_jax.population import DevicePopulation, blocked, padded_size
from nalu_jax.tasks.thresholds import success_threshold
from nalu_jax.train import default_chunk, num_evaluations, seed_keys
from nalu_jax.workdir import prepare_workdir

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


def _empty_history(num_evals: int, num_runs: int) -> dict:
    hist = {k: np.full((num_evals, num_runs), np.nan, np.float32) for k in HISTORY_FIELDS}
    hist["step"] = np.full((num_evals,), -1, np.int64)
    return hist


def _progress(total: int, initial: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True, mininterval=1.0)


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Train every seed (of every sweep setting), judge each, write the workdir.

    Returns the summary dict (with ``"settings"``: one summary per setting, for a sweep), or
    ``None`` in a non-zero process of a multi-host run (process 0 writes the results).
    """
    validate_run(config)
    settings, program, hparams, thresholds = build_population(config)
    proc = distributed.process_info()
    prepare_workdir(workdir, config, overwrite, proc)

    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    run_setting = np.repeat(np.arange(len(settings)), len(seeds))  # setting-major
    run_seed = np.tile(seeds, len(settings))
    mine = distributed.process_slice(len(run_seed), proc)
    n = mine.stop - mine.start
    block, pop = int(config.seed_block), DevicePopulation()
    padded = np.arange(padded_size(n, block * len(pop.devices)))
    local = mine.start + np.minimum(padded, n - 1)  # padding repeats the last run
    run_threshold = np.asarray(thresholds, np.float64)[run_setting[mine]]

    t0 = time.perf_counter()
    states = jax.jit(jax.vmap(program.init))(seed_keys(config.seed, run_seed[local]))
    hp = pop.split(sweep.stack_hparams([hparams[h] for h in run_setting[local]]))
    data = pop.replicate(program.eval_data)
    parts = pop.split(states)
    evaluate = pop.compile(jax.jit(blocked(program.evaluate, block, (0, 0, None))), parts, hp, data)
    train = pop.compile(jax.jit(blocked(program.train, block, (0, 0)), donate_argnums=0), parts, hp)
    compile_s = time.perf_counter() - t0

    num_evals = num_evaluations(config)
    ckpt = Checkpointer(
        distributed.checkpoint_dir(workdir, proc), process=proc.index if proc.count > 1 else None
    )
    history, done = _empty_history(num_evals, n), 0
    if ckpt.latest_step() is not None:
        saved = ckpt.restore(ckpt.latest_step(), {"states": states, "history": history})
        parts = pop.split(saved["states"])
        history = {k: np.asarray(v) for k, v in saved["history"].items()}
        done = int(np.sum(history["step"] >= 0))
    del states

    def host_states():
        return pop.gather(parts)

    chunk, every = default_chunk(config), int(config.eval_every)
    bar = _progress(int(config.num_steps), done * every, progress)
    t_loop, trained = time.perf_counter(), 0
    for e in range(done, num_evals):
        outs = pop.run(evaluate, parts, hp, data)
        parts = [o[0] for o in outs]
        m = pop.gather([o[1] for o in outs])
        history["step"][e] = e * every
        for name, value in zip(("valid_mse", "test_mse", "sparsity"), m, strict=True):
            history[name][e] = value[:n]
        if e == num_evals - 1:
            break
        outs = pop.run(train, parts, hp)
        parts = [o[0] for o in outs]
        losses = pop.gather([o[1] for o in outs])[:n]
        with warnings.catch_warnings():  # all-NaN rows: diverged seeds
            warnings.simplefilter("ignore", RuntimeWarning)
            history["train_loss"][e + 1] = np.nanmean(losses, axis=1)
        trained += every
        if bar is not None:
            v, t = history["valid_mse"][: e + 1], history["test_mse"][: e + 1]
            solved = reporting.running_solved(v, t, run_threshold)[-1]
            diverged = sum(int(np.sum(np.asarray(p.diverged))) for p in parts)
            bar.set_postfix(solved=int(solved), diverged=diverged)
            bar.update(every)
        if (e + 1) % chunk == 0 and e + 1 < num_evals - 1:  # the last one is saved below
            snapshot = host_states()
            ckpt.save((e + 1) * every, {"states": snapshot, "history": history})
            if len(settings) == 1 and proc.count == 1:
                lines = reporting.metrics_lines(
                    history, e + 1, thresholds[0], snapshot.diverged_at[:n]
                )
                reporting.atomic_write(os.path.join(workdir, "metrics.jsonl"), lines)
    loop_s = time.perf_counter() - t_loop
    if bar is not None:
        bar.close()
    final = host_states()
    if done < num_evals:
        ckpt.save(int(config.num_steps), {"states": final, "history": history})
    ckpt.close()

    part = {
        "history": history,
        "diverged": final.diverged[:n],
        "diverged_at": final.diverged_at[:n],
        "runs": np.arange(mine.start, mine.stop),
        "compile_s": compile_s,
        "loop_s": loop_s,
        "seed_steps": n * trained,
    }
    merged = distributed.gather_parts(workdir, proc, part, len(run_seed))
    if merged is None:
        return None
    return reporting.write_population(
        workdir, config, settings, thresholds, run_setting, run_seed, merged, num_evals,
        program.task,
    )  # fmt: skip


def format_summary(summary: dict) -> str:
    if "settings" in summary:
        return reporting.combined_markdown(summary["settings"])
    return reporting.summary_markdown(summary)
