"""The recurrent arithmetic task (docs/protocols.md, "Recurrent arithmetic"): the static task's pieces over sequences.

Data: a sequence ``x [T, n]`` of i.i.d. vectors from the static task's generator (per-seed
subset offset as in §1); the target is the static op applied to the subset sums over all time
steps: ``f(Σ_t x_t @ masks)``. Training and validation at ``task.train_length`` (10), test at
``task.test_length`` (1,000); validation inputs from ``task.interpolation_range`` and test
inputs from ``task.extrapolation_range`` (the static defaults U[1,2) → U[2,6), so the test
extrapolates in length and range; set them equal for length-only extrapolation).

Model (``RecurrentNetwork``): a cell ``make_cell(model.name, n, hidden)`` with a learnable zero
initial state, unrolled over the sequence, and a readout ``hidden → 1`` on the last output.
``model.readout = "auto"`` picks the unit the op needs (``AUTO_READOUT``): NAU for add/sub,
NMU for mul/squared, NMRU for div and RealNPU for root (the NMU cannot divide or take
roots), and ``linear`` after LSTM/GRU/RNN and activation cells; ``"same"`` reuses the cell's
unit; any unit name is taken as is. NAC• cells run in log space (``LOG_SPACE_UNITS``).

Loss: MSE + λ̂·s(t)·(Σ R_sparse) + … as the static task (``arithmetic.make_recipe``), the
cell's regularisers averaged over time; the config uses λ̂ = 0.1 with s(t) = 1 − exp(−1e-5·t).

Threshold: the static §1 construction on the time-summed test inputs — ``W^ε`` (1 − ε on each
subset, ε elsewhere) applied to ``X = Σ_{t<test_length} x_t`` with x_t from the extrapolation
range, mean of ``(f(X @ W^ε) − f(X @ W⁰))²`` over ``task.threshold_samples`` sequences, cached
beside the static thresholds. It is strict: at length 1,000 a recurrent weight of 1 − 1e-6
already misses it, so only cells that reach the clamp (NAU: W_h = 1 exactly) can pass.

Observed (CPU, 8 seeds): the spec's model (hidden 2, 10 inputs, λ̂ = 0.1, lr 1e-3, 100,000
steps) solved 0/8 add seeds: the length-10 MSE reaches ~1e-4 with mixed hidden-to-hidden
weights that do not extrapolate. One accumulator (hidden 1, 4 inputs, subsets of one input,
lr 1e-2, λ̂ = 1 ramped over steps 1,000–3,000) solves 4/8 at 5,000 and 6/8 at 10,000 steps
with the reference implementations' gradient conventions (``tests/test_recurrent_task.py``).
The tuned protocol ``configs/recurrent.py:protocol=reproduce`` and the study behind it are in
docs/reproductions/recurrent.md; committed results in docs/reproductions.md.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nalu_jax import tasks as task_lib
from nalu_jax.config import ConfigError, choice, positive_int
from nalu_jax.engine import train
from nalu_jax.engine.run import Population
from nalu_jax.experiments import arithmetic
from nalu_jax.experiments.contract import Experiment
from nalu_jax.models.arithmetic import RecurrentNetwork
from nalu_jax.tasks import thresholds as thr
from nalu_jax.tasks.eval_sets import TEST_KEY, VALID_KEY
from nalu_jax.units import ACTIVATIONS, UNITS, make_unit, training_needs
from nalu_jax.units.recurrent import (
    LOG_SPACE_UNITS,
    RECURRENT_BASELINES,
    RECURRENT_INITS,
    make_cell,
)

AUTO_READOUT = {
    "add": "nau",
    "sub": "nau",
    "mul": "nmu",
    "squared": "nmu",
    "div": "nmru",
    "root": "real_npu",
}


def readout_name(config) -> str:
    """The readout unit of ``config.model`` (see the module doc)."""
    name, choice = config.model.name, config.model.get("readout", "auto")
    if choice == "auto":
        plain = name in RECURRENT_BASELINES or name in ACTIVATIONS or name == "linear"
        return "linear" if plain else AUTO_READOUT[config.task.op]
    if choice == "same":
        if name in RECURRENT_BASELINES:
            raise ConfigError(f"model.readout 'same' needs a unit cell, got cell {name!r}.")
        return name
    if choice not in UNITS:
        raise ConfigError(
            f"model.readout must be 'auto', 'same' or a unit of {sorted(UNITS)}, got {choice!r}."
        )
    return choice


def build_factory(config, task):
    """``(rngs -> RecurrentNetwork, (cell unit, readout unit))`` for ``config.model``."""
    name = config.model.name
    if name not in UNITS and name not in RECURRENT_BASELINES:
        raise ConfigError(
            f"model.name must be a cell: a unit of {sorted(UNITS)} or a baseline of "
            f"{list(RECURRENT_BASELINES)}, got {name!r}."
        )
    readout = readout_name(config)
    hidden = config.model.hidden_size
    cell_options = dict(learn_initial_state=bool(config.model.get("learn_initial_state", True)))
    recurrent_init = config.model.get("recurrent_init", "random")
    choice("model.recurrent_init", recurrent_init, RECURRENT_INITS)
    if name in UNITS:
        cell_options.update(
            log_space=name in LOG_SPACE_UNITS,
            unit_options=dict(config.model.layer1_options),
            recurrent_init=recurrent_init,
        )
    out_options = dict(config.model.layer2_options)
    readout_reg_from = int(config.model.get("readout_reg_from", 0))
    if readout_reg_from < 0:
        raise ConfigError(f"model.readout_reg_from must be a step >= 0, got {readout_reg_from}.")

    def factory(rngs):
        cell = make_cell(name, task.input_size, hidden, rngs=rngs, **cell_options)
        out = make_unit(readout, hidden, 1, rngs=rngs, **out_options)
        return RecurrentNetwork(cell, out, readout_reg_from=readout_reg_from)

    try:
        factory(nnx.Rngs(0))  # fail early, with the config's field names
    except (ValueError, TypeError) as e:
        raise ConfigError(f"model: {e}") from None
    return factory, (name, readout)


def sequence_target(op: str, xs, masks):
    """``f(Σ_t xs_t @ masks)``: ``xs [..., T, n]``, ``masks [K, n]`` → ``[...]``."""
    return task_lib.target_from_sums(op, task_lib.subset_sums(jnp.sum(xs, axis=-2), masks))


def evaluation_sequences(task, size: int, train_length: int, test_length: int) -> dict:
    """Fixed-key validation ``[size, train_length, n]`` and test ``[size, test_length, n]``."""
    n = task.input_size
    return {
        "valid": task_lib.sample_inputs(
            jax.random.key(VALID_KEY), (size, train_length, n), task.interpolation_range
        ),
        "test": task_lib.sample_inputs(
            jax.random.key(TEST_KEY), (size, test_length, n), task.extrapolation_range
        ),
    }


@functools.partial(jax.jit, static_argnames=("task", "length", "size"))
def _chunk_sq_diff(task, length: int, size: int, key, epsilon):
    def add_step(t, acc):
        x = task_lib.sample_inputs(
            jax.random.fold_in(key, t), (size, task.input_size), task.extrapolation_range
        )
        return acc + x

    summed = jax.lax.fori_loop(0, length, add_step, jnp.zeros((size, task.input_size)))
    return thr.arithmetic_sq_diff(task, summed, epsilon)


def recurrent_threshold(task, length: int, *, epsilon: float = 1e-5, num_samples: int = 100_000):
    """Success threshold at sequence ``length`` (see the module doc), cached like the static
    thresholds (``nalu_jax.tasks.thresholds.cached``)."""
    key = thr.cache_key(task, epsilon, "arithmetic", num_samples, recurrent_length=length)
    root = jax.random.fold_in(jax.random.key(thr.THRESHOLD_KEY_SEED), length)
    return thr.cached(
        key,
        lambda: thr.simulate_mean(
            lambda size, k: _chunk_sq_diff(task, length, size, k, epsilon), num_samples, root
        ),
    )


def trainer_for(config, task=None) -> train.Trainer:
    """The per-seed ``Trainer`` of a recurrent config (see the module doc)."""
    tc = config.task
    task = task or arithmetic.build_task(config)
    factory, names = build_factory(config, task)
    recipe = arithmetic.make_recipe(
        config,
        task,
        factory,
        names,
        input_shape=(int(tc.train_length), task.input_size),
        target_fn=functools.partial(sequence_target, task.op),
        eval_data=evaluation_sequences(
            task, int(config.eval_size), int(tc.train_length), int(tc.test_length)
        ),
    )
    hparams = arithmetic.build_hparams(config, names)
    return train.make_train(recipe, config, hparams, training_needs(names))


def threshold(config, task) -> float:
    """The success threshold at the test length (``recurrent_threshold``)."""
    tc = config.task
    eps = tc.threshold_epsilon if tc.threshold_epsilon is not None else 1e-5
    return recurrent_threshold(
        task, int(tc.test_length), epsilon=float(eps), num_samples=int(tc.threshold_samples)
    )


def validate(config) -> None:
    tc = config.task
    positive_int("task.train_length", tc.train_length)
    positive_int("task.test_length", tc.test_length)
    choice("task.op", tc.op, task_lib.OPS)  # the readout "auto" picks by it
    arithmetic.validate_fields(config)  # with the threshold's fields
    arithmetic.check_evaluation_memory(config, rows=tc.train_length + tc.test_length)
    name = config.model.name
    try:
        known = name in UNITS  # a "module:Class" name is imported here
        if known or name in RECURRENT_BASELINES:
            readout_name(config)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if not known and name not in RECURRENT_BASELINES:
        raise ConfigError(
            f"model.name must be a cell: a unit of {sorted(UNITS)} or a baseline of "
            f"{list(RECURRENT_BASELINES)}, got {name!r}."
        )


def population(config, settings) -> Population:
    return arithmetic.population(config, settings, make=trainer_for, threshold=threshold)


write_results = arithmetic.write_results
format_summary = arithmetic.format_summary
merge_summary = arithmetic.merge_summary

#: the static task's, but the subsets stay static (the sequences' sets store no per-layout sums)
SWEEPABLE = tuple(n for n in arithmetic.SWEEPABLE if n not in arithmetic.LAYOUT_FIELDS)


def final_states(config, workdir: str, trainer: train.Trainer | None = None):
    """The per-seed ``TrainState`` ``[S]`` at the newest checkpoint of a finished (or stopped)
    single-setting, single-process run of ``config`` in ``workdir``, and its step."""
    from nalu_jax.engine.loop import checkpoint_tree, empty_history, metrics_dict
    from nalu_jax.runtime.checkpoint import Checkpointer

    trainer = trainer or trainer_for(config)
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    states = jax.vmap(trainer.init)(train.seed_keys(config.seed, seeds))
    probe = jax.eval_shape(
        jax.vmap(trainer.evaluate, in_axes=(0, None, None)),
        states,
        trainer.hparams,
        trainer.eval_data,
    )
    history = empty_history(metrics_dict(probe[1]), train.num_evaluations(config), len(seeds))
    like = checkpoint_tree(jax.tree.map(np.asarray, states), history)
    directory = os.path.join(workdir, "checkpoints")
    if not os.path.isdir(directory):
        raise ConfigError(f"workdir {workdir!r} holds no checkpoints/ of a single-setting run.")
    ckpt = Checkpointer(directory)
    try:
        step, saved = ckpt.restore_latest(like, say=lambda s: None)
    finally:
        ckpt.close()
    if step is None:
        raise ConfigError(f"workdir {workdir!r} holds no checkpoint of this config that restores.")
    return saved["states"], int(step)


def length_sweep(config, workdir: str, lengths, *, threshold_samples: int | None = None,
                 chunk: int = 250) -> dict:  # fmt: skip
    """Each seed's final network (``final_states``) on fixed test sequences of every length in
    ``lengths``, judged against that length's threshold (``recurrent_threshold``, ε and samples
    as the config's unless ``threshold_samples``). The sequences are ``config.eval_size`` draws
    of ``task.extrapolation_range`` from the run's test key, so at ``task.test_length`` they
    are the run's own test set. Returns ``{"lengths", "thresholds" [L], "mse" [S, L], "solved"
    [S, L], "step", "seeds"}``; a diverged seed (non-finite MSE) is unsolved."""
    task = arithmetic.build_task(config)
    trainer = trainer_for(config, task)
    states, step = final_states(config, workdir, trainer)
    graphdef, size, tc = trainer.graphdef, int(config.eval_size), config.task
    eps = tc.threshold_epsilon if tc.threshold_epsilon is not None else 1e-5
    samples = int(threshold_samples or tc.threshold_samples)

    @jax.jit
    def sq_err(params, offset, xs):  # [S] params and offsets, xs [B, T, n] → [S] summed error²
        def one(p, off):
            y = nnx.merge(graphdef, p)(xs)[:, 0]
            t = sequence_target(task.op, xs, task_lib.subset_masks(task, off))
            return jnp.sum((y - t) ** 2)

        return jax.vmap(one)(params, offset)

    mse, thresholds = [], []
    for length in lengths:
        xs = task_lib.sample_inputs(
            jax.random.key(TEST_KEY), (size, int(length), task.input_size),
            task.extrapolation_range,
        )  # fmt: skip
        total = sum(
            np.asarray(sq_err(states.params, states.aux.offset, xs[i : i + chunk]), np.float64)
            for i in range(0, size, chunk)
        )
        mse.append(total / size)
        thresholds.append(
            recurrent_threshold(task, int(length), epsilon=float(eps), num_samples=samples)
        )
    mse = np.stack(mse, axis=1)
    thresholds = np.asarray(thresholds, np.float64)
    solved = np.isfinite(mse) & (mse < thresholds) & ~np.asarray(states.diverged)[:, None]
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    return {
        "lengths": [int(n) for n in lengths],
        "thresholds": thresholds,
        "mse": mse,
        "solved": solved,
        "step": step,
        "seeds": seeds,
    }


EXPERIMENT = Experiment(
    name="recurrent",
    validate=validate,
    sweepable=SWEEPABLE,
    population=population,
    write_results=write_results,
    format_summary=format_summary,
    merge_summary=merge_summary,
)
