"""The population loop every experiment shares: many runs of pure per-seed functions at once.

Given per-seed ``init``, ``train`` and ``evaluate`` functions and one key per run, it pads the
runs to whole blocks on every local device (``nalu_jax.population``), compiles once per
device, and loops in Python over evaluation periods: ``evaluate`` (before that step's update)
then ``train`` (``eval_every`` updates in a ``lax.scan``). Between periods it records every
metric per run, updates the progress bar and, every ``checkpoint_every`` steps, saves all
states and the history with orbax. Re-running with the same checkpoint directory resumes.

Arguments marked ``PerRun(value)`` carry a leading run axis (e.g. each run's hyperparameters);
other arguments are shared by all runs (evaluation sets, datasets).
"""

from __future__ import annotations

import time
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from nalu_jax.checkpoint import Checkpointer
from nalu_jax.population import DevicePopulation, blocked, padded_size
from nalu_jax.train import default_chunk, num_evaluations


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
    *, init, keys, train, evaluate, train_args=(), eval_args=(), config, checkpoint_dir,
    checkpoint_process=None, progress=True, desc=None, postfix=None, on_checkpoint=None,
) -> PopulationResult:  # fmt: skip
    """Train ``len(keys)`` runs for ``config.num_steps`` steps; see the module doc.

    Args:
      init: ``seed_key -> state``; ``train(state, *train_args) -> (state, losses [E])``;
        ``evaluate(state, *eval_args) -> (state, metrics)`` (a dict or NamedTuple of arrays).
      keys: ``[n]`` typed keys, one per run.
      postfix: ``(history, num_done) -> dict`` for the progress bar (diverged is added).
      on_checkpoint: ``(history, num_done, diverged_at [n])`` after each intermediate save.
    """
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
