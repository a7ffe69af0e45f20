"""The training core: ``make_train(config)`` → pure per-seed functions.

Static work (task layout, model definition, optimiser, evaluation inputs) happens once here.
What comes back works on ONE seed; the caller ``jax.vmap``s it over seeds (and, for sweeps,
over hyperparameters) and ``jax.jit``s it (see ``nalu_jax.engine``)::

    trainer = make_train(config)
    states = jax.vmap(trainer.init)(seed_keys)                       # [S, ...]
    states, metrics = jax.jit(jax.vmap(trainer.evaluate, (0, None, None)))(states, hp, data)
    states, losses = jax.jit(jax.vmap(trainer.train, (0, None)))(states, hp)

Keys: seed k's key is ``fold_in(key(config.seed), k)``; it is split into an init key, an offset
key and a training key, and step t draws from ``fold_in(train_key, t)``. Nothing depends on
which other seeds run alongside.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx, struct

from nalu_jax import tasks as task_lib
from nalu_jax.config_utils import build_hparams, build_model_factory, build_task
from nalu_jax.models import init_params, split_model
from nalu_jax.units._base import float_dtype

INALU_HISTORY = 5000  # iNALU: losses kept for the stall test
INALU_REG_WEIGHT = 0.05
INALU_REG_AFTER = 10_000
INALU_CHECK_EVERY = 10
NPU_BETA_EVERY = 10_000


@struct.dataclass
class HParams:
    """Traced hyperparameters: every leaf may carry a sweep axis."""

    lr: Any
    reg_scale: Any  # λ̂
    reg_start: Any  # λ_start (steps)
    reg_end: Any  # λ_end (steps)
    lambda_z: Any
    beta_start: Any  # NPU L1 β at t = 0
    beta_end: Any
    # The task's ranges as traced leaves ((lo, hi) or ((lo1, hi1), (lo2, hi2))), so that range
    # pairs of one shape can be swept in one program; None: the task's own (static) ranges.
    interpolation_range: Any = None
    extrapolation_range: Any = None


@struct.dataclass
class TrainState:
    """One seed's training state (all leaves arrays; a leading seed axis under vmap)."""

    step: jax.Array  # int32 []
    params: Any  # nnx.State of the model
    opt_state: Any
    key: jax.Array  # uint32 raw key data of the seed
    offset: jax.Array  # int32 [] subset offset of this seed
    diverged: jax.Array  # bool []
    diverged_at: jax.Array  # int32 [] first step whose update was non-finite, −1 if none
    last_valid_mse: jax.Array  # float [] latest interpolation MSE (iNALU regulariser gate)
    loss_hist: jax.Array  # float [H] iNALU stall test ring buffer (H = 1, unused, otherwise)
    hist_count: jax.Array  # int32 [] losses stored since the last reinitialisation
    reinits: jax.Array  # int32 [] iNALU reinitialisations so far


class EvalMetrics(NamedTuple):
    valid_mse: jax.Array  # [] interpolation MSE on the fixed validation set
    test_mse: jax.Array  # [] extrapolation MSE on the fixed test set
    sparsity: jax.Array  # [] sparsity error of the model


class Trainer(NamedTuple):
    """Pure per-seed functions plus the static facts the runner needs."""

    init: Any  # seed_key (typed) -> TrainState
    train: Any  # (TrainState, HParams) -> (TrainState, losses [eval_every])
    evaluate: Any  # (TrainState, HParams, data) -> (TrainState, EvalMetrics)
    eval_data: dict  # fixed evaluation inputs (shared by all seeds)
    hparams: HParams  # the config's hyperparameters (unbatched)
    task: Any
    graphdef: Any
    threshold: float | None = None  # success threshold; None: simulated from ``task``


def seed_keys(root_seed: int, seed_numbers):
    """Typed keys ``fold_in(key(root_seed), k)`` for each seed number ``k`` → ``[S]``."""
    root = jax.random.key(root_seed)
    return jax.vmap(lambda k: jax.random.fold_in(root, k))(jnp.asarray(seed_numbers, jnp.uint32))


def _or(value, default):
    return default if value is None else value


def _tree_where(cond, a, b):
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


def _all_finite(tree):
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def guarded_update(state, loss, params, opt_state, **fields):
    """The next state of one seed: its update, unless the loss, parameters or optimiser state
    became non-finite — then the seed keeps its last finite values, is marked diverged for
    good (``diverged_at`` = this step) and never touches another seed (a ``where``).

    ``state`` has ``step``, ``params``, ``opt_state``, ``diverged``, ``diverged_at``; ``fields``
    are further fields to replace.
    """
    bad = ~(jnp.isfinite(loss) & _all_finite(params) & _all_finite(opt_state))
    diverged = state.diverged | bad
    return state.replace(
        step=state.step + 1,
        params=_tree_where(diverged, state.params, params),
        opt_state=_tree_where(diverged, state.opt_state, opt_state),
        diverged=diverged,
        diverged_at=jnp.where(bad & ~state.diverged, state.step, state.diverged_at),
        **fields,
    )


def reg_schedule(step, hp: HParams, kind: str):
    """s(t): the linear ramp between λ_start and λ_end, or 1 − exp(−1e-5·t)."""
    t = step.astype(jnp.float32)
    if kind == "exp":
        return 1.0 - jnp.exp(-1e-5 * t)
    span = jnp.maximum(hp.reg_end - hp.reg_start, 1e-12)
    return jnp.clip((t - hp.reg_start) / span, 0.0, 1.0)


def npu_beta(step, hp: HParams):
    """β(t) = β_start·10^k, k = ⌊t / 10⁴⌋, multiplied only while β < β_end."""
    max_k = jnp.ceil(jnp.log10(hp.beta_end / hp.beta_start) - 1e-6)
    k = jnp.minimum(step // NPU_BETA_EVERY, jnp.maximum(max_k, 0.0))
    return hp.beta_start * 10.0**k


VALID_KEY = 0x5EED_0001  # fixed keys: every seed is judged on the same evaluation sets
TEST_KEY = 0x5EED_0002


def evaluation_inputs(task, size: int) -> dict:
    """The fixed validation (interpolation) and test (extrapolation) sets, range-free.

    For each set: ``u`` ``[size, n]`` uniform draws in [0, 1), ``c`` the interval choice (0/1,
    two-interval ranges only), and their subset sums at every offset ``usums``/``csums``
    ``[size, max_offset + 1, K]``. A run rebuilds its inputs as lo₁ + (lo₂ − lo₁)·c + w·u and
    their subset sums likewise (``range_inputs``), so every seed and every range setting of a
    sweep is judged on the same draws, and a seed's targets cost a gather, not size × n work.
    """
    data = {}
    ranges = (
        ("valid", VALID_KEY, task.interpolation_range),
        ("test", TEST_KEY, task.extrapolation_range),
    )
    for name, seed, rng in ranges:
        ku, kc = jax.random.split(jax.random.key(seed))
        u = jax.random.uniform(ku, (size, task.input_size), jnp.float32)
        data[f"{name}_u"], data[f"{name}_usums"] = u, offset_subset_sums(task, u)
        if task_lib.arithmetic.is_two_interval(rng):
            c = jax.random.bernoulli(kc, 0.5, u.shape).astype(jnp.float32)
            data[f"{name}_c"], data[f"{name}_csums"] = c, offset_subset_sums(task, c)
    return data


def range_inputs(task, data: dict, name: str, rng, offset):
    """``(x [size, n], subset sums [size, K])`` of set ``name`` for range ``rng`` and ``offset``."""
    lo1, lo2, width = task_lib.arithmetic.range_parts(rng)
    sizes = jnp.asarray(task.subset_sizes, jnp.float32)
    x = lo1 + width * data[f"{name}_u"]
    sums = sizes * lo1 + width * jnp.take(data[f"{name}_usums"], offset, axis=1)
    if f"{name}_c" in data:
        x = x + (lo2 - lo1) * data[f"{name}_c"]
        sums = sums + (lo2 - lo1) * jnp.take(data[f"{name}_csums"], offset, axis=1)
    return x, sums


def offset_subset_sums(task, x) -> jax.Array:
    """Subset sums of ``x [size, n]`` at each offset 0…max_offset → ``[size, offsets, K]``.

    Prefix sums in float64 on the host: each subset sum is then exact to float32 rounding.
    """
    xs = np.asarray(x, np.float64)
    prefix = np.concatenate([np.zeros((xs.shape[0], 1)), np.cumsum(xs, axis=1)], axis=1)
    offsets = np.arange(task.max_offset + 1)[:, None]
    starts = offsets + np.asarray(task.subset_starts)[None, :]
    ends = starts + np.asarray(task.subset_sizes)[None, :]
    return jnp.asarray(prefix[:, ends] - prefix[:, starts], jnp.float32)


def make_train(config) -> Trainer:
    """Build the per-seed pure functions for an arithmetic-task config (see module doc)."""
    task = build_task(config)
    factory, unit_names = build_model_factory(config, task)
    return make_trainer(
        config,
        task,
        factory,
        unit_names,
        input_shape=(task.input_size,),
        target_fn=functools.partial(task_lib.target, task),
        eval_data=evaluation_inputs(task, int(config.eval_size)),
    )


def make_trainer(config, task, factory, unit_names, *, input_shape, target_fn, eval_data):
    """The per-seed ``Trainer`` for a model trained on fresh inputs from ``task``'s generator.

    Args:
      factory: ``rngs -> model``; the model maps ``x [batch, *input_shape]`` to ``[batch, 1]``
        and offers ``apply_with_regularizers``, ``project`` and ``sparsity_error`` (as
        ``ArithmeticNetwork`` does).
      unit_names: the units it is built from (for ``build_hparams``, iNALU and sNMU handling).
      input_shape: one sample's shape: ``(n,)``, or ``(T, n)`` for sequences.
      target_fn: ``(x [batch, *input_shape], masks [K, n]) -> [batch]`` targets.
      eval_data: fixed evaluation sets shared by all seeds: ``evaluation_inputs(...)``, or
        ``{"valid": x, "test": x}`` inputs whose targets ``target_fn`` gives.
    """
    graphdef, _ = split_model(factory)
    hparams = build_hparams(config, unit_names)
    eval_every = int(config.eval_every)
    batch_size = int(config.train.batch_size)
    reg_kind = str(config.train.reg_schedule)
    uses_inalu = "inalu" in unit_names
    uses_noise = "snmu" in unit_names
    sweep = config.get("sweep") or {}
    uses_z = bool(config.train.lambda_z) or bool(sweep.get("lambda_z"))
    hist_len = INALU_HISTORY if uses_inalu and config.train.inalu_reinit else 0
    clip = config.train.grad_clip
    if clip is None and uses_inalu:
        clip = 0.1  # iNALU trains with element-wise gradient clipping to [−0.1, 0.1]
    adam = optax.scale_by_adam(
        b1=config.train.beta1, b2=config.train.beta2, eps=config.train.adam_eps
    )
    tx = optax.chain(optax.clip(clip), adam) if clip else adam
    interp = task.interpolation_range
    sampler = str(config.train.sampler)

    def init(seed_key) -> TrainState:
        init_key, offset_key, train_key = jax.random.split(seed_key, 3)
        params = init_params(factory, init_key)
        return TrainState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            opt_state=tx.init(params),
            key=jax.random.key_data(train_key),
            offset=task_lib.sample_offset(task, offset_key).astype(jnp.int32),
            diverged=jnp.zeros((), bool),
            diverged_at=jnp.full((), -1, jnp.int32),
            last_valid_mse=jnp.full((), jnp.inf, float_dtype()),
            # unused (length 1) without iNALU: zero-size arrays lose their seed sharding
            loss_hist=jnp.zeros((max(hist_len, 1),), float_dtype()),
            hist_count=jnp.zeros((), jnp.int32),
            reinits=jnp.zeros((), jnp.int32),
        )

    def loss_fn(params, hp, x, t, step, last_valid_mse, noise_key):
        model = nnx.merge(graphdef, params)
        y, regs = model.apply_with_regularizers(x, training=True, key=noise_key)
        mse = jnp.mean((y[:, 0] - t) ** 2)
        loss = (
            mse
            + hp.reg_scale * reg_schedule(step, hp, reg_kind) * regs["sparse"]
            + regs["gate"]
            + npu_beta(step, hp) * regs["l1"]
        )
        if uses_z:  # left out when λ_z is 0: XLA then drops the batch means R_z needs
            loss = loss + hp.lambda_z * regs["z"]
        if uses_inalu:
            on = (step > INALU_REG_AFTER) & (last_valid_mse < 1.0)
            loss = loss + jnp.where(on, INALU_REG_WEIGHT, 0.0) * regs["inalu"]
        return loss, mse

    def inalu_reinit(state: TrainState, params, opt_state, mse):
        """The per-seed stall test of iNALU; a ``where``, never a Python branch."""
        hist = state.loss_hist.at[state.hist_count % hist_len].set(mse)
        count = state.hist_count + 1
        ordered = jnp.roll(hist, -(count % hist_len))  # oldest first once the buffer is full
        first, second = ordered[: hist_len // 2], ordered[hist_len // 2 :]
        stalled = (jnp.mean(first) <= jnp.mean(second) + jnp.std(second)) & (jnp.mean(second) > 1.0)
        redo = (state.step % INALU_CHECK_EVERY == 0) & (count > hist_len) & stalled
        seed_init_key = jax.random.fold_in(jax.random.wrap_key_data(state.key), 0x1A1)
        fresh = init_params(factory, jax.random.fold_in(seed_init_key, state.reinits + 1))
        params = _tree_where(redo, fresh, params)
        opt_state = _tree_where(redo, tx.init(fresh), opt_state)
        count = jnp.where(redo, 0, count)
        return params, opt_state, hist, count, state.reinits + redo.astype(jnp.int32)

    def train_step(state: TrainState, hp: HParams):
        step_key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.step)
        data_key, noise_key = jax.random.split(step_key)
        masks = task_lib.subset_masks(task, state.offset)
        rng = interp if hp.interpolation_range is None else hp.interpolation_range
        x = task_lib.sample_inputs(data_key, (batch_size, *input_shape), rng, sampler=sampler)
        t = target_fn(x, masks)
        (loss, mse), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            state.params, hp, x, t, state.step, state.last_valid_mse,
            noise_key if uses_noise else None,
        )  # fmt: skip
        direction, opt_state = tx.update(grads, state.opt_state, state.params)
        params = jax.tree.map(lambda p, d: p - hp.lr * d, state.params, direction)
        model = nnx.merge(graphdef, params)
        model.project()
        params = nnx.state(model)
        hist, count, reinits = state.loss_hist, state.hist_count, state.reinits
        if hist_len:
            params, opt_state, hist, count, reinits = inalu_reinit(state, params, opt_state, mse)
        new = guarded_update(
            state, loss, params, opt_state, loss_hist=hist, hist_count=count, reinits=reinits
        )
        return new, jnp.where(new.diverged, jnp.nan, mse)

    def train(state: TrainState, hp: HParams):
        """``eval_every`` updates → (state, per-step training MSE ``[eval_every]``)."""
        return jax.lax.scan(lambda s, _: train_step(s, hp), state, None, length=eval_every)

    def evaluate(state: TrainState, hp: HParams, data: dict):
        """Interpolation/extrapolation MSE on the fixed sets and the sparsity error."""
        model = nnx.merge(graphdef, state.params)
        masks = task_lib.subset_masks(task, state.offset)
        ranges = {
            "valid": _or(hp.interpolation_range, task.interpolation_range),
            "test": _or(hp.extrapolation_range, task.extrapolation_range),
        }

        def mse(name):
            if f"{name}_u" in data:  # range-free draws (``evaluation_inputs``)
                x, sums = range_inputs(task, data, name, ranges[name], state.offset)
                t = task_lib.target_from_sums(task.op, sums)
            else:
                x = data[name]
                t = target_fn(x, masks)
            return jnp.mean((model(x)[:, 0] - t) ** 2)

        metrics = EvalMetrics(mse("valid"), mse("test"), model.sparsity_error())
        return state.replace(last_valid_mse=metrics.valid_mse), metrics

    return Trainer(init, train, evaluate, eval_data, hparams, task, graphdef)


def num_evaluations(config) -> int:
    """Evaluations in a full run: steps 0, E, 2E, …, num_steps."""
    return int(config.num_steps) // int(config.eval_every) + 1


def default_chunk(config) -> int:
    """Evaluation periods between checkpoints (≈ every ``checkpoint_every`` steps)."""
    every = int(config.checkpoint_every or config.num_steps)
    return max(1, math.ceil(every / int(config.eval_every)))
