"""The NALU paper's scaled error: each seed's error against the error of the same network at
its random initialisation, for the static (arithmetic) and the recurrent task.

Trask et al. 2018 (Table 1) report, per task and model, an error "scaled relative to a randomly
initialized model": 100 is the random model, 0 is exact. Ours: for each seed, the network of
its config drawn with its own seed key (``Trainer.init``, untrained), evaluated on the run's own
validation and test sets (static: the run's own evaluation, ``Trainer.evaluate``; recurrent:
length ``task.train_length`` and ``task.test_length``); the scaled error is
``100 · MSE(trained) / MSE(random)`` on the same set (:func:`scaled_errors`). The paper does not
say how it summarises seeds; we report the median and the range over seeds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from flax import nnx

from nalu_jax import tasks as task_lib
from nalu_jax.config import as_tuples
from nalu_jax.engine import train
from nalu_jax.experiments import arithmetic
from nalu_jax.experiments.recurrent import sequence_target, trainer_for

#: a cell's per-seed baseline file (``launch/random_baseline.py`` writes it) and its header
BASELINE_CSV = "random_baseline.csv"
BASELINE_HEADER = "seed,valid_mse,test_mse"


def config_from_json(raw: dict) -> ml_collections.ConfigDict:
    """A run's config from its ``config.json`` contents: an ``ml_collections.ConfigDict`` with
    the lists back to tuples, as the config has its ranges."""

    def tuples(d):
        return {k: tuples(v) if isinstance(v, dict) else as_tuples(v) for k, v in d.items()}

    return ml_collections.ConfigDict(tuples(raw))


def baseline_rows(config) -> list[str]:
    """The lines of ``random_baseline.csv`` (no header) for ``config``'s seeds, in seed order."""
    base = random_baseline(config)
    return [
        f"{int(k)},{float(v)!r},{float(t)!r}"
        for k, v, t in zip(base["seed"], base["valid_mse"], base["test_mse"], strict=True)
    ]


def random_baseline(config, chunk: int = 250) -> dict:
    """Each seed's untrained network on the run's evaluation sets: ``{"seed" [S],
    "valid_mse" [S], "test_mse" [S]}`` (float64; the sets as the run's ``eval_data``).
    ``config.experiment`` is "arithmetic" (the static task) or "recurrent"."""
    if config.experiment == "arithmetic":
        return _static_baseline(config)
    task = arithmetic.build_task(config)
    trainer = trainer_for(config, task)
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    states = jax.vmap(trainer.init)(train.seed_keys(config.seed, seeds))
    graphdef = trainer.graphdef

    @jax.jit
    def sq_err(params, offset, xs):  # [S] params, offsets; xs [B, T, n] → [S] summed error²
        def one(p, off):
            y = nnx.merge(graphdef, p)(xs)[:, 0]
            t = sequence_target(task.op, xs, task_lib.subset_masks(task, off))
            return jnp.sum((y - t) ** 2)

        return jax.vmap(one)(params, offset)

    out = {"seed": seeds}
    for name in ("valid", "test"):
        xs = trainer.eval_data[name]
        size = xs.shape[0]
        total = sum(
            np.asarray(sq_err(states.params, states.aux.offset, xs[i : i + chunk]), np.float64)
            for i in range(0, size, chunk)
        )
        out[f"{name}_mse"] = total / size
    return out


def _static_baseline(config, seed_chunk: int = 10) -> dict:
    """The static task's: the run's own ``Trainer.evaluate`` at each seed's initial state (the
    evaluation a run makes at step 0), ``seed_chunk`` seeds at a time."""
    trainer = arithmetic.trainer_for(config)
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    keys = train.seed_keys(config.seed, seeds)

    @jax.jit
    def errors(keys):
        states = jax.vmap(trainer.init)(keys)
        _, m = jax.vmap(trainer.evaluate, in_axes=(0, None, None))(
            states, trainer.hparams, trainer.eval_data
        )
        return m.valid_mse, m.test_mse

    valid, test = [], []
    for i in range(0, len(seeds), seed_chunk):
        v, t = errors(keys[i : i + seed_chunk])
        valid.append(np.asarray(v, np.float64))
        test.append(np.asarray(t, np.float64))
    return {"seed": seeds, "valid_mse": np.concatenate(valid), "test_mse": np.concatenate(test)}


def scaled_errors(trained_mse, random_mse) -> np.ndarray:
    """``100 · trained / random`` per seed (NaN where either is not finite)."""
    trained = np.asarray(trained_mse, np.float64)
    random = np.asarray(random_mse, np.float64)
    ok = np.isfinite(trained) & np.isfinite(random) & (random > 0)
    return np.where(ok, 100.0 * trained / np.where(ok, random, 1.0), np.nan)
