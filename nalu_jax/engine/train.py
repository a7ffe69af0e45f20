"""The training core: one state, one guarded update, one optimiser, one ``make_train``.

An experiment describes what differs in a ``Recipe`` (model factory, loss on a fresh batch,
evaluation, optional per-seed extras); ``make_train(recipe, config, hparams)`` turns it into
pure per-seed functions that the run loop (``nalu_jax.engine.run``) ``vmap``s over seeds and sweep
settings and ``jit``s::

    trainer = make_train(recipe, config, hparams)
    states = jax.vmap(trainer.init)(seed_keys(0, range(S)))                     # [S, ...]
    states, metrics = jax.vmap(trainer.evaluate, (0, None, None))(states, hp, eval_data)
    states, losses = jax.vmap(trainer.train, (0, None, None))(states, hp, train_data)

Keys: seed k's key is ``fold_in(key(config.seed), k)`` (``seed_keys``); the recipe splits it
into an init key, a training key and whatever else it needs; step t uses
``fold_in(train_key, t)``. Nothing depends on which other seeds run alongside.

Every traced hyperparameter takes one way down, the learning rate for one: ``config.train.lr``
→ ``build_hparams`` (the experiment's and the units' defaults where it is None) → ``HParams.lr``
(a leaf: a swept value is a vmap axis) → ``train_step(state, hp, …)`` → ``descend(params,
direction, lr)``, where ``direction`` is ``make_optimizer``'s (Adam's, clipped) and ``lr`` is
``hp.lr`` times ``lr_decay``'s factor when that is on. The optimiser holds no learning rate so
that one compiled program serves every swept value.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx, struct

from nalu_jax.config import ConfigError
from nalu_jax.units import TrainingNeeds

INALU_REG_WEIGHT = 0.05  # iNALU's regulariser weight once its condition holds
INALU_REG_AFTER = 10_000  # … after this many steps, while the last validation MSE is < 1
NPU_BETA_EVERY = 10_000  # β(t) is multiplied by 10 every this many steps
#: ``Recipe.step_randomness`` is drawn for at most this many steps at a time: a period's
#: material drawn whole (1,000 steps of the single-module batches and the sNMU's noise,
#: ~13 MB per 13-seed block each) left the two devices' caches and halved the sNMU's speed
#: (WORKSPACE at bcf7708, "Step material in parts of 100 steps").
MATERIAL_STEPS = 100


@struct.dataclass
class HParams:
    """Traced hyperparameters: every leaf may carry a sweep axis (``config.sweep``; built by
    ``build_hparams`` from ``config.train``, read by ``train_step`` and the recipe's loss)."""

    lr: Any  # the step size of ``descend`` (times ``lr_decay``'s factor when on)
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
    # The task's subsets as traced leaves (``tasks.arithmetic.Layout``), so that subset and
    # overlap ratios of one input size can be swept in one program; None: the task's own.
    layout: Any = None


@struct.dataclass
class TrainState:
    """One seed's training state (all leaves arrays; a leading seed axis under vmap)."""

    step: jax.Array  # int32 []
    params: Any  # nnx.State of the model
    opt_state: Any
    key: jax.Array  # uint32 raw key data of the seed's training key
    diverged: jax.Array  # bool []
    diverged_at: jax.Array  # int32 [] first step whose update was non-finite, −1 if none
    aux: Any = None  # the experiment's per-seed extras (e.g. subset offset, iNALU history)


class Recipe(NamedTuple):
    """What an experiment supplies to ``make_train``.

    factory: ``rngs -> model`` (an ``nnx.Module`` with ``project()``).
    loss: ``(model, hp, state, key, train_data) -> (loss, mse)`` on one fresh batch; ``key``
      is this step's key.
    evaluate: ``(model, state, hp, eval_data) -> (aux, metrics)``: the seed's metrics (a dict or
      NamedTuple of arrays) and its (possibly updated) ``aux``.
    init_aux: ``seed_key -> (init_key, train_key, aux)``; default: two keys, no aux. With
      ``init_reads_hparams``, ``(seed_key, hp) -> …``: the run's ``HParams`` (e.g. its traced
      subset layout, whose largest offset the seed's offset is drawn below).
    after_update: ``(state, params, opt_state, mse, due) -> (params, opt_state, aux)`` after
      the projection (e.g. iNALU's re-initialisation); default: none. ``due`` is a boolean
      that is the same for every seed of a population (never batched, so a ``lax.cond`` on it
      stays a branch under ``vmap``): false only on steps that are not a multiple of
      ``after_update_every``, where the hook may skip work that those steps do not use.
    after_update_every: see ``after_update``; ``None`` (or one that does not divide
      ``config.eval_every``): ``due`` is always true.
    optimizer: an optax transformation giving the update's direction (the step applies the
      traced ``hp.lr``); default: ``make_optimizer(config.train, needs)``.
    step_randomness: ``step key -> pytree``, the random material a step derives from its key
      (e.g. split keys, a sampler's words). Given, it is derived ``MATERIAL_STEPS`` steps at a
      time, before those steps' scan, and ``loss`` receives it in place of the key: the same bits,
      computed once per step, where inside the step XLA:CPU re-derives such cheap integer
      work in every fused kernel that reads it (WORKSPACE at bcf7708, "Performance:
      the single-module step").
    """

    factory: Any
    loss: Any
    evaluate: Any
    train_data: Any = None  # arrays shared by all seeds (arguments, never baked in)
    eval_data: Any = None
    init_aux: Any = None
    after_update: Any = None
    optimizer: Any = None
    step_randomness: Any = None
    after_update_every: int | None = None
    init_reads_hparams: bool = False


class Trainer(NamedTuple):
    """Pure per-seed functions plus the static facts the run loop needs."""

    init: Any  # (seed_key (typed), hp: HParams | None) -> TrainState
    train: Any  # (TrainState, HParams, train_data) -> (TrainState, losses [eval_every])
    evaluate: Any  # (TrainState, HParams, eval_data) -> (TrainState, metrics)
    hparams: HParams  # the config's hyperparameters (unbatched)
    train_data: Any
    eval_data: Any
    graphdef: Any
    factory: Any
    # True when ``train`` changes nothing of a diverged seed's state but its ``step`` (no
    # ``after_update`` hook): a population whose every seed has diverged then need not train
    # on, its later evaluations are those of the frozen states (``engine.loop``)
    frozen_when_diverged: bool = False


def seed_keys(root_seed: int, seed_numbers):
    """Typed keys ``fold_in(key(root_seed), k)`` for each seed number ``k`` → ``[S]``."""
    root = jax.random.key(root_seed)
    return jax.vmap(lambda k: jax.random.fold_in(root, k))(jnp.asarray(seed_numbers, jnp.uint32))


def init_params(factory, key):
    """Parameters of one fresh model drawn from ``key`` (pure: ``jax.vmap`` it over keys)."""
    return nnx.split(factory(nnx.Rngs(params=key)))[1]


def tree_where(cond, a, b):
    return jax.tree.map(lambda x, y: jnp.where(cond, x, y), a, b)


def _all_finite(tree):
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.array(True)


def guarded_update(state, loss, params, opt_state, **fields):
    """The next state of one seed: its update, unless the loss, parameters or optimiser state
    became non-finite — then the seed keeps its last finite values, is marked diverged for
    good (``diverged_at`` = this step) and never touches another seed (a ``where``).

    ``fields`` are further fields of ``state`` to replace.
    """
    bad = ~(jnp.isfinite(loss) & _all_finite(params) & _all_finite(opt_state))
    diverged = state.diverged | bad
    return state.replace(
        step=state.step + 1,
        params=tree_where(diverged, state.params, params),
        opt_state=tree_where(diverged, state.opt_state, opt_state),
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


def regularized_loss(mse, regs: dict, hp: HParams, step, *, schedule="linear", with_z=False,
                     gate_on=None):  # fmt: skip
    """``mse + λ̂·s(t)·R_sparse + R_gate + β(t)·L1`` (+ ``λ_z·R_z`` when ``with_z``; left out
    when λ_z is statically 0, so XLA drops the batch means R_z needs) (+ 0.05·R_inalu where
    ``gate_on``). Missing regularisers count as 0."""
    zero = jnp.zeros((), jnp.float32)
    loss = (
        mse
        + hp.reg_scale * reg_schedule(step, hp, schedule) * regs.get("sparse", zero)
        + regs.get("gate", zero)
        + npu_beta(step, hp) * regs.get("l1", zero)
    )
    if with_z:
        loss = loss + hp.lambda_z * regs.get("z", zero)
    if gate_on is not None:
        loss = loss + jnp.where(gate_on, INALU_REG_WEIGHT, 0.0) * regs.get("inalu", zero)
    return loss


def uses_z(config) -> bool:
    """Whether R_z enters the loss: λ_z set, or swept."""
    sweep = config.get("sweep") or {}
    return bool(config.train.lambda_z) or bool(sweep.get("lambda_z"))


def build_hparams(tr, needs: TrainingNeeds, *, reg_scale=0.0, reg_start=0.0, reg_end=1.0,
                  beta=(1.0, 1.0), lr=1e-3) -> HParams:  # fmt: skip
    """The traced ``HParams``: ``config.train`` values where set, else the experiment's
    defaults (keywords), with the units' own (``needs.lr``; β only for units with ``l1_beta``)."""
    value = lambda name, default: default if tr.get(name) is None else tr.get(name)
    reg_start, reg_end = value("reg_start", reg_start), value("reg_end", reg_end)
    if reg_end < reg_start:
        raise ConfigError(
            f"train.reg_end must be >= train.reg_start, got {reg_end!r} < {reg_start!r}."
        )
    beta_start, beta_end = value("npu_beta_start", beta[0]), value("npu_beta_end", beta[1])
    if needs.l1_beta and not 0 < beta_start <= beta_end:
        raise ConfigError("train.npu_beta_start must be > 0 and <= train.npu_beta_end.")
    f = lambda v: jnp.asarray(v, jnp.float32)
    return HParams(
        lr=f(value("lr", needs.lr if needs.lr is not None else lr)),
        reg_scale=f(value("reg_scale", reg_scale)),
        reg_start=f(reg_start),
        reg_end=f(reg_end),
        lambda_z=f(value("lambda_z", 0.0)),
        beta_start=f(beta_start if needs.l1_beta else 1.0),
        beta_end=f(beta_end if needs.l1_beta else 1.0),
    )


def budget_warnings(config, hparams) -> list[str]:
    """One sentence per distinct way ``config.num_steps`` cuts the regulariser ramp short: it
    ends before the ramp starts (R_sparse never switches on) or before it ends (λ never reaches
    λ̂). Such a run is not comparable with one of the full budget. Only runs with λ̂ > 0 on the
    linear ramp count (the ``exp`` schedule has no start or end)."""
    if config.get("train", {}).get("reg_schedule", "linear") != "linear":
        return []
    steps, out = int(config.num_steps), []
    for hp in hparams:
        if not all(hasattr(hp, k) for k in ("reg_scale", "reg_start", "reg_end")):
            continue  # hyperparameters without a regulariser ramp (e.g. the grid world's A2C)
        scales = np.atleast_1d(np.asarray(hp.reg_scale, np.float64))
        starts = np.atleast_1d(np.asarray(hp.reg_start, np.float64))
        ends = np.atleast_1d(np.asarray(hp.reg_end, np.float64))
        on = scales > 0
        if not on.any():
            continue
        start, end = float(starts[on].min()), float(ends[on].min())
        if steps <= start:
            msg = (
                f"warning: num_steps={steps} ends before the regulariser ramp starts "
                f"(reg_start={start:g}), so R_sparse never switches on and the results are not "
                "comparable with a run of the full budget."
            )
        elif steps < end:
            msg = (
                f"warning: num_steps={steps} ends before the regulariser ramp ends "
                f"(reg_end={end:g}), so λ never reaches λ̂ and the results are not comparable "
                "with a run of the full budget."
            )
        else:
            continue
        if msg not in out:
            out.append(msg)
    return out


def make_optimizer(tr, needs: TrainingNeeds):
    """Adam's direction after element-wise clipping at ``train.grad_clip`` or the units' own
    clip. It holds no learning rate: ``train_step`` applies ``hp.lr`` (``HParams``, traced, so
    a swept lr is a vmap axis of one program) in ``descend``."""
    clip = tr.get("grad_clip")
    clip = needs.grad_clip if clip is None else clip
    adam = optax.scale_by_adam(b1=tr.beta1, b2=tr.beta2, eps=tr.adam_eps)
    return optax.chain(optax.clip(clip), adam) if clip else adam


def descend(params, direction, lr):
    """The update: ``params − lr · direction`` leaf by leaf (``lr``: ``hp.lr``, times
    ``lr_decay``'s factor when on; ``direction``: ``make_optimizer``'s)."""
    return jax.tree.map(lambda p, d: p - lr * d, params, direction)


def lr_decay(config):
    """``step -> factor`` of ``train.lr_decay_from`` / ``train.lr_decay_to`` (None when off).

    The learning rate stays at ``lr`` until step ``lr_decay_from``, then falls linearly to
    ``lr · lr_decay_to`` at ``num_steps``. Off (the default) leaves the update untouched.
    Used by the recurrent task's reproduction protocol: Adam's steps at a constant rate keep
    irrelevant NAU weights jittering at ~1e-4, which a length-1,000 sum multiplies by 1,000.
    """
    tr = config.get("train", {})
    start = tr.get("lr_decay_from")
    if start is None:
        return None
    end, to = float(config.num_steps), float(tr.get("lr_decay_to", 0.01))
    if not 0 <= float(start) < end:
        raise ConfigError(
            f"train.lr_decay_from must be in [0, num_steps={int(end)}), got {start!r}."
        )
    if not 0 < to <= 1:
        raise ConfigError(f"train.lr_decay_to must be in (0, 1], got {to!r}.")
    start = float(start)

    def factor(step):
        frac = jnp.clip((step.astype(jnp.float32) - start) / (end - start), 0.0, 1.0)
        return 1.0 - frac * (1.0 - to)

    return factor


def abstract_graphdef(factory):
    """The static graph of ``factory``'s model, built abstractly (no eager initialisation)."""
    return nnx.split(nnx.eval_shape(lambda: factory(nnx.Rngs(0))))[0]


def make_train(
    recipe: Recipe, config, hparams: HParams, needs: TrainingNeeds | None = None
) -> Trainer:
    """The per-seed ``Trainer`` of ``recipe`` (see the module doc); ``config.eval_every``
    updates per ``train`` call, the optimiser from ``config.train`` and ``needs``."""
    graphdef = abstract_graphdef(recipe.factory)
    tx = recipe.optimizer
    if tx is None:
        tx = make_optimizer(config.train, needs or TrainingNeeds())
    eval_every = int(config.eval_every)
    lr_factor = lr_decay(config)
    split_keys = recipe.init_aux or (lambda k: (*jax.random.split(k), None))

    def init(seed_key, hp: HParams | None = None) -> TrainState:
        """A seed's fresh state; ``hp`` (the run's, or None: the config's) is read only by a
        recipe that says so (``Recipe.init_reads_hparams``)."""
        if recipe.init_reads_hparams:
            init_key, train_key, aux = split_keys(seed_key, hparams if hp is None else hp)
        else:
            init_key, train_key, aux = split_keys(seed_key)
        params = init_params(recipe.factory, init_key)
        return TrainState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            opt_state=tx.init(params),
            key=jax.random.key_data(train_key),
            diverged=jnp.zeros((), bool),
            diverged_at=jnp.full((), -1, jnp.int32),
            aux=aux,
        )

    def step_key(state: TrainState, step):
        return jax.random.fold_in(jax.random.wrap_key_data(state.key), step)

    every = recipe.after_update_every
    # the phase of a step within its ``train`` call is the phase of its step number: calls
    # start at multiples of ``eval_every`` (whole evaluation periods, from step 0)
    phased = recipe.after_update is not None and bool(every) and eval_every % every == 0

    def train_step(state: TrainState, hp: HParams, data, key=None, due=True):
        if key is None:  # no step_randomness: the step derives from its own key
            key = step_key(state, state.step)

        def loss_fn(params):
            return recipe.loss(nnx.merge(graphdef, params), hp, state, key, data)

        (loss, mse), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        direction, opt_state = tx.update(grads, state.opt_state, state.params)
        lr = hp.lr if lr_factor is None else hp.lr * lr_factor(state.step)
        params = descend(state.params, direction, lr)
        model = nnx.merge(graphdef, params)
        model.project()
        params, aux = nnx.state(model), state.aux
        if recipe.after_update is not None:
            params, opt_state, aux = recipe.after_update(state, params, opt_state, mse, due)
        new = guarded_update(state, loss, params, opt_state, aux=aux)
        return new, jnp.where(new.diverged, jnp.nan, mse)

    def run(state: TrainState, hp: HParams, data, phases, length: int):
        """``length`` updates → (state, their training MSE ``[length]``)."""
        material = None  # without step_randomness each step derives from its own key
        if recipe.step_randomness is not None:
            steps = state.step + jnp.arange(length, dtype=state.step.dtype)
            material = jax.vmap(lambda t: recipe.step_randomness(step_key(state, t)))(steps)

        def step(s, xs):
            key, due = xs
            return train_step(s, hp, data, key, True if due is None else due)

        return jax.lax.scan(step, state, (material, phases), length=length)

    def train(state: TrainState, hp: HParams, data):
        """``eval_every`` updates → (state, per-step training MSE ``[eval_every]``)."""
        # under ``vmap`` the phases stay unbatched: an arange, not derived from the state
        phases = jnp.arange(eval_every) % every == 0 if phased else None
        part = MATERIAL_STEPS
        if recipe.step_randomness is None or eval_every <= part:
            return run(state, hp, data, phases, eval_every)
        # the material of ``part`` steps at a time: the same values (a pure function of the
        # step's key), drawn in parts that stay in cache
        n, rest = divmod(eval_every, part)
        head = None if phases is None else phases[: n * part].reshape(n, part)
        state, mse = jax.lax.scan(lambda s, p: run(s, hp, data, p, part), state, head, length=n)
        mse = mse.reshape(n * part)
        if rest:
            tail = None if phases is None else phases[n * part :]
            state, last = run(state, hp, data, tail, rest)
            mse = jnp.concatenate([mse, last])
        return state, mse

    def evaluate(state: TrainState, hp: HParams, data):
        aux, metrics = recipe.evaluate(nnx.merge(graphdef, state.params), state, hp, data)
        return state.replace(aux=aux), metrics

    train_data = {} if recipe.train_data is None else recipe.train_data
    eval_data = {} if recipe.eval_data is None else recipe.eval_data
    return Trainer(
        init, train, evaluate, hparams, train_data, eval_data, graphdef, recipe.factory,
        frozen_when_diverged=recipe.after_update is None,
    )  # fmt: skip


def num_evaluations(config) -> int:
    """Evaluations in a full run: steps 0, E, 2E, …, num_steps."""
    return int(config.num_steps) // int(config.eval_every) + 1


def default_chunk(config) -> int:
    """Evaluation periods between checkpoints (≈ every ``checkpoint_every`` steps)."""
    every = int(config.get("checkpoint_every") or config.num_steps)
    return max(1, math.ceil(every / int(config.eval_every)))
