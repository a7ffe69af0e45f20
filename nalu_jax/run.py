"""The run loop every experiment shares: ``run(experiment, config, workdir)``.

``run`` validates the config, expands ``config.sweep`` into settings, asks the experiment for
its population (one compiled program; per-setting hyperparameters and judging facts), claims
the workdir, takes this process's slice of the (setting, seed) runs (all of them unless
multi-host, ``nalu_jax.distributed``) and trains it with ``run_population``; process 0 merges
the parts and the experiment judges and writes its files.

``run_population`` is the loop itself: it pads the runs to whole blocks on every local device
(``nalu_jax.population``), compiles once per device, and loops in Python over evaluation
periods: ``evaluate`` (before that step's update) then ``train`` (``eval_every`` updates in a
``lax.scan``). Between periods it records every metric per run, updates the progress bar and,
every ``checkpoint_every`` steps, saves all states and the history with orbax. Re-running with
the same checkpoint directory resumes.

An experiment is a module (``nalu_jax.experiments``) with ``validate(config)``,
``SWEEPABLE`` (the sweep names it accepts), ``population(config, settings) -> Population``,
``write_results(workdir, config, outcome) -> summary`` and ``format_summary(summary) -> str``; and
optionally ``programs(config)`` (several compiled programs, e.g. one per activation) and
``prepare(config, workdir, population, progress)`` (work before training, e.g. a reference
population that sets thresholds).
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from nalu_jax import distributed, sweep
from nalu_jax.checkpoint import Checkpointer
from nalu_jax.population import DevicePopulation, blocked, padded_size
from nalu_jax.report import atomic_write, dumps
from nalu_jax.train import Trainer, default_chunk, num_evaluations, seed_keys
from nalu_jax.workdir import prepare_workdir


class PerRun(NamedTuple):
    """An argument with a leading run axis ``[n, ...]`` (split over devices with the runs)."""

    value: Any


class PopulationResult(NamedTuple):
    history: dict  # {"step": [E], "train_loss": [E, n], metric: [E, n, ...]}
    diverged: np.ndarray  # bool [n]
    diverged_at: np.ndarray  # int [n]
    compile_s: float
    loop_s: float
    trained_steps: int  # steps trained in this call (0 when resumed at the end)
    resumed_from_step: int | None  # the checkpoint this call started from; None: fresh


@dataclasses.dataclass
class Population:
    """What an experiment's ``population`` returns: the program every run shares, and per
    sweep setting its ``HParams`` and whatever the experiment needs to judge (``contexts``)."""

    trainer: Trainer
    hparams: list
    contexts: list  # one dict per setting (e.g. its task and success threshold)
    postfix: Any = None  # run_setting [n] -> ((history, num_done) -> bar fields), or None
    metrics_jsonl: Any = None  # (history, num_done, diverged_at) -> str, or None

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


def progress_bar(total: int, initial: int, enabled: bool, desc: str | None = None):
    """A tqdm bar on stderr (steps, elapsed, ETA; postfix set by the caller), or None."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total, initial=initial, unit="step", dynamic_ncols=True, mininterval=1.0, desc=desc
    )


def _metrics_dict(metrics) -> dict:
    return metrics._asdict() if hasattr(metrics, "_asdict") else dict(metrics)


def run_population(
    trainer: Trainer, keys, hparams, config, checkpoint_dir, *, checkpoint_process=None,
    progress=True, desc=None, postfix=None, on_checkpoint=None,
) -> PopulationResult:  # fmt: skip
    """Train ``len(keys)`` runs of ``trainer`` for ``config.num_steps`` steps (module doc).

    Args:
      keys: ``[n]`` typed keys, one per run.
      hparams: one ``HParams`` for every run, or ``PerRun(HParams [n])``.
      postfix: ``(history, num_done) -> dict`` for the progress bar (diverged is added).
      on_checkpoint: ``(history, num_done, diverged_at [n])`` after each intermediate save.
    """
    init, train, evaluate = trainer.init, trainer.train, trainer.evaluate
    train_args = (hparams, trainer.train_data)
    eval_args = (hparams, trainer.eval_data)
    n, block, pop = len(keys), int(config.seed_block), DevicePopulation()
    pad = np.minimum(np.arange(padded_size(n, block * len(pop.devices))), n - 1)

    def padded(a):
        return jax.tree.map(lambda x: np.asarray(x)[pad], a.value) if isinstance(a, PerRun) else a

    def per_device(args) -> list:
        """Per argument, one value per device (PerRun split, the rest replicated)."""
        return [pop.split(padded(a)) if isinstance(a, PerRun) else pop.replicate(a) for a in args]

    t0 = time.perf_counter()
    states = jax.jit(jax.vmap(init))(keys[pad])
    parts = pop.split(states)
    t_args, e_args = per_device(train_args), per_device(eval_args)
    axes = lambda args: (0, *(0 if isinstance(a, PerRun) else None for a in args))
    eval_fn = jax.jit(blocked(evaluate, block, axes(eval_args)))
    train_fn = jax.jit(blocked(train, block, axes(train_args)), donate_argnums=0)
    probe = jax.eval_shape(eval_fn, states, *(padded(a) for a in eval_args))
    shapes = _metrics_dict(probe[1])

    num_evals, every = num_evaluations(config), int(config.eval_every)
    history = {
        k: np.full((num_evals, n) + v.shape[1:], np.nan, np.float32) for k, v in shapes.items()
    }
    history["train_loss"] = np.full((num_evals, n), np.nan, np.float32)
    history["step"] = np.full((num_evals,), -1, np.int64)
    ckpt = Checkpointer(checkpoint_dir, process=checkpoint_process)
    done, resumed = 0, ckpt.latest_step()
    if resumed is not None:
        saved = ckpt.restore(resumed, {"states": states, "history": history})
        parts = pop.split(saved["states"])
        history = {k: np.asarray(v) for k, v in saved["history"].items()}
        done = int(np.sum(history["step"] >= 0))
    del states
    if done < num_evals:  # a finished run only reports
        evaluate_c = pop.compile(eval_fn, parts, *e_args)
        train_c = pop.compile(train_fn, parts, *t_args)
    compile_s = time.perf_counter() - t0

    chunk = default_chunk(config)
    bar = progress_bar(int(config.num_steps), done * every, progress, desc)
    t_loop, trained = time.perf_counter(), 0
    for e in range(done, num_evals):
        outs = pop.run(evaluate_c, parts, *e_args)
        parts = [o[0] for o in outs]
        metrics = _metrics_dict(pop.gather([o[1] for o in outs]))
        history["step"][e] = e * every
        for name, value in metrics.items():
            history[name][e] = value[:n]
        if e == num_evals - 1:
            break
        outs = pop.run(train_c, parts, *t_args)
        parts = [o[0] for o in outs]
        with warnings.catch_warnings():  # all-NaN rows: diverged runs
            warnings.simplefilter("ignore", RuntimeWarning)
            history["train_loss"][e + 1] = np.nanmean(pop.gather([o[1] for o in outs])[:n], axis=1)
        trained += every
        if bar is not None:
            extra = postfix(history, e + 1) if postfix is not None else {}
            diverged = int(np.sum(np.isnan(history["train_loss"][e + 1])))  # NaN: diverged
            bar.set_postfix(**extra, diverged=diverged)
            bar.update(every)
        if (e + 1) % chunk == 0 and e + 1 < num_evals - 1:  # the last one is saved below
            snapshot = pop.gather(parts)
            ckpt.save((e + 1) * every, {"states": snapshot, "history": history})
            if on_checkpoint is not None:
                on_checkpoint(history, e + 1, snapshot.diverged_at[:n])
    loop_s = time.perf_counter() - t_loop
    if bar is not None:
        bar.close()
    final = pop.gather(parts)
    if done < num_evals:
        ckpt.save(int(config.num_steps), {"states": final, "history": history})
    ckpt.close()
    return PopulationResult(
        history, final.diverged[:n], final.diverged_at[:n], compile_s, loop_s, trained, resumed
    )


def _label_dir(workdir: str, name: str, label: str) -> str:
    return os.path.join(workdir, name) if not label else os.path.join(workdir, name, label)


def run(experiment, config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Train every seed (of every sweep setting and program), judge, write the workdir.

    Returns the experiment's summary dict, or ``None`` in a non-zero process of a multi-host
    run (process 0 writes the results).
    """
    experiment.validate(config)
    settings = sweep.expand(config, experiment.SWEEPABLE)
    programs = experiment.programs(config) if hasattr(experiment, "programs") else [("", config)]
    populations = {label: experiment.population(cfg, settings) for label, cfg in programs}
    proc = distributed.process_info()
    prepare_workdir(workdir, config, overwrite, proc)
    if hasattr(experiment, "prepare"):
        for pop in populations.values():
            experiment.prepare(config, workdir, pop, progress)

    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    run_setting = np.repeat(np.arange(len(settings)), len(seeds))  # setting-major
    run_seed = np.tile(seeds, len(settings))
    mine = distributed.process_slice(len(run_seed), proc)
    single = len(settings) == 1 and proc.count == 1 and len(programs) == 1
    results = {}
    for label, _ in programs:
        pop = populations[label]
        postfix = pop.postfix(run_setting[mine]) if pop.postfix else None
        on_checkpoint = None
        if single and pop.metrics_jsonl is not None:
            jsonl = os.path.join(workdir, "metrics.jsonl")

            def on_checkpoint(history, done, diverged_at, pop=pop, jsonl=jsonl):
                atomic_write(jsonl, pop.metrics_jsonl(history, done, diverged_at))

        # One setting: hyperparameters shared by every run; a sweep: one per run.
        run_hp = (
            pop.hparams[0]
            if len(settings) == 1
            else PerRun(sweep.stack_hparams([pop.hparams[h] for h in run_setting[mine]]))
        )
        ckpt = _label_dir(workdir, "checkpoints", label)
        result = run_population(
            pop.trainer,
            seed_keys(config.seed, run_seed[mine]),
            run_hp,
            config,
            distributed.checkpoint_dir(ckpt, proc),
            checkpoint_process=proc.index if proc.count > 1 else None,
            progress=progress,
            desc=label or None,
            postfix=postfix,
            on_checkpoint=on_checkpoint,
        )
        part = {
            "history": result.history,
            "diverged": result.diverged,
            "diverged_at": result.diverged_at,
            "runs": np.arange(mine.start, mine.stop),
            "compile_s": result.compile_s,
            "loop_s": result.loop_s,
            "seed_steps": (mine.stop - mine.start) * result.trained_steps,
            "resumed_from_step": -1
            if result.resumed_from_step is None
            else result.resumed_from_step,
        }
        parts_dir = _label_dir(workdir, "parts", label)
        results[label] = distributed.gather_parts(parts_dir, proc, part, len(run_seed))
        if results[label] is None:
            return None
    if len(settings) == 1:
        outcome = Outcome(settings, run_setting, run_seed, populations, results)
        return experiment.write_results(workdir, config, outcome)
    summaries = []  # a sweep: each setting reported alone in settings/NNN, then one table
    for h, setting in enumerate(settings):
        idx = np.flatnonzero(run_setting == h)
        outcome = Outcome(
            [setting],
            np.zeros(len(idx), int),
            run_seed[idx],
            {label: pop.setting(h) for label, pop in populations.items()},
            {label: _select(merged, idx) for label, merged in results.items()},
        )
        out = os.path.join(workdir, "settings", f"{h:03d}")
        os.makedirs(out, exist_ok=True)
        summary = experiment.write_results(out, setting.config, outcome)
        summary.update(setting=setting.name, setting_values=setting.values)
        summaries.append(summary)
    combined = {"settings": summaries}
    atomic_write(os.path.join(workdir, "summary.json"), dumps(combined) + "\n")
    atomic_write(os.path.join(workdir, "summary.md"), experiment.format_summary(combined))
    return combined


def _select(merged: dict, idx) -> dict:
    """The merged results of runs ``idx`` (history ``[E, R, ...]`` → ``[E, len(idx), ...]``)."""
    history = {k: (v if k == "step" else v[:, idx]) for k, v in merged["history"].items()}
    picked = {k: merged[k][idx] for k in ("diverged", "diverged_at", "runs")}
    return {**merged, "history": history, **picked}
