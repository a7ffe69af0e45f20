"""The population loop shared by the recurrent experiments (sequential MNIST, number translation).

An experiment supplies a model factory, a per-batch loss and an evaluation; this module turns
them into pure per-seed functions (``make_sequence_trainer``) and runs many seeds of them at
once in fixed-width seed blocks, in jitted evaluation periods with orbax checkpoints between
chunks (``run_population``). Re-running on the same checkpoint directory resumes.

Keys: seed k's key is ``fold_in(key(config.seed), k)`` (``nalu_jax.train.seed_keys``), split into
an init key and a training key; step t draws from ``fold_in(train_key, t)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx, struct

from nalu_jax import loop
from nalu_jax.config_utils import ConfigError
from nalu_jax.loop import PopulationResult
from nalu_jax.models import MODELS
from nalu_jax.train import HParams, guarded_update, npu_beta, reg_schedule, seed_keys


@struct.dataclass
class SeqState:
    """One seed's training state (a leading seed axis under vmap)."""

    step: jax.Array  # int32 []
    params: Any  # nnx.State of the model
    opt_state: Any
    key: jax.Array  # uint32 raw key data of the seed's training key
    diverged: jax.Array  # bool []
    diverged_at: jax.Array  # int32 [] first step with a non-finite update, −1 if none


class SequenceTrainer(NamedTuple):
    init: Any  # seed_key -> SeqState
    train: Any  # (SeqState, HParams, train_data) -> (SeqState, losses [eval_every])
    evaluate: Any  # (SeqState, eval_data) -> {name: array}
    hparams: HParams
    train_data: dict  # arrays shared by all seeds (passed as arguments, never baked in)
    eval_data: dict
    graphdef: Any


def default_reg_scale(unit: str) -> float:
    """λ̂ of a cell's unit when ``train.reg_scale`` is None: the unit's value in the model table
    of units.md (NAU 0.01), else 10 (NMU and the other regularised units)."""
    spec = MODELS.get(unit)
    return spec.reg_scale if spec is not None and spec.reg_scale else 10.0


def hparams_from_config(config) -> HParams:
    """Traced hyperparameters: lr, λ̂ (``default_reg_scale`` unless set), the λ ramp, β."""
    tr = config.train
    f = lambda v: jnp.asarray(v, jnp.float32)
    scale = default_reg_scale(config.model.name) if tr.reg_scale is None else tr.reg_scale
    return HParams(
        lr=f(tr.lr),
        reg_scale=f(scale),
        reg_start=f(tr.reg_start),
        reg_end=f(tr.reg_end),
        lambda_z=f(tr.lambda_z),
        beta_start=f(tr.npu_beta_start),
        beta_end=f(tr.npu_beta_end),
    )


def regularized_loss(mse, regs: dict, hp: HParams, step):
    """``mse`` plus λ̂·s(t)·R_sparse, λ_z·R_z, R_gate and β(t)·L1 (whichever the model has)."""
    zero = jnp.zeros((), jnp.float32)
    return (
        mse
        + hp.reg_scale * reg_schedule(step, hp, "linear") * regs.get("sparse", zero)
        + hp.lambda_z * regs.get("z", zero)
        + regs.get("gate", zero)
        + npu_beta(step, hp) * regs.get("l1", zero)
    )


def make_sequence_trainer(factory, batch_loss, eval_metrics, *, train_data, eval_data, config):
    """Pure per-seed functions from an experiment's pieces (hyperparameters and the evaluation
    interval come from ``config``).

    Args:
      factory: ``rngs -> model`` (an ``nnx.Module`` with ``project()``).
      batch_loss: ``(model, hp, step, key, train_data) -> (loss, mse)`` on one fresh batch.
      eval_metrics: ``(model, eval_data) -> {name: array}`` for one seed.
    """
    try:  # abstract construction: no eager init, and bad model options fail here, not in jit
        graphdef, _ = nnx.split(nnx.eval_shape(lambda: factory(nnx.Rngs(0))))
    except (ValueError, TypeError) as e:
        raise ConfigError(f"model: {e}") from None
    tr = config.train
    hparams, eval_every = hparams_from_config(config), int(config.eval_every)
    tx = optax.scale_by_adam(b1=tr.beta1, b2=tr.beta2, eps=tr.adam_eps)
    if tr.grad_clip:
        tx = optax.chain(optax.clip(tr.grad_clip), tx)

    def init(seed_key) -> SeqState:
        init_key, train_key = jax.random.split(seed_key)
        params = nnx.split(factory(nnx.Rngs(params=init_key)))[1]
        return SeqState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            opt_state=tx.init(params),
            key=jax.random.key_data(train_key),
            diverged=jnp.zeros((), bool),
            diverged_at=jnp.full((), -1, jnp.int32),
        )

    def train_step(state: SeqState, hp: HParams, data):
        key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.step)

        def loss_fn(params):
            return batch_loss(nnx.merge(graphdef, params), hp, state.step, key, data)

        (loss, mse), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        direction, opt_state = tx.update(grads, state.opt_state, state.params)
        params = jax.tree.map(lambda p, d: p - hp.lr * d, state.params, direction)
        model = nnx.merge(graphdef, params)
        model.project()
        params = nnx.state(model)
        new = guarded_update(state, loss, params, opt_state)
        return new, jnp.where(new.diverged, jnp.nan, mse)

    def train(state: SeqState, hp: HParams, data):
        """``eval_every`` updates → (state, per-step training MSE ``[eval_every]``)."""
        return jax.lax.scan(lambda s, _: train_step(s, hp, data), state, None, length=eval_every)

    def evaluate(state: SeqState, data):
        return eval_metrics(nnx.merge(graphdef, state.params), data)

    return SequenceTrainer(init, train, evaluate, hparams, train_data, eval_data, graphdef)


def run_population(
    trainer, config, seeds, checkpoint_dir, *, progress=True, desc=None, on_checkpoint=None
) -> PopulationResult:
    """Train ``seeds`` (seed numbers ``[S]``) for ``config.num_steps`` through the shared
    population loop (``nalu_jax.loop``: every local device, checkpoints, resume).

    ``on_checkpoint(history, num_done, diverged_at)`` runs after each intermediate checkpoint
    (e.g. to rewrite ``metrics.jsonl``).
    """
    return loop.run_population(
        init=trainer.init,
        keys=seed_keys(config.seed, np.asarray(seeds)),
        train=trainer.train,
        evaluate=lambda state, data: (state, trainer.evaluate(state, data)),
        train_args=(trainer.hparams, trainer.train_data),
        eval_args=(trainer.eval_data,),
        config=config,
        checkpoint_dir=checkpoint_dir,
        progress=progress,
        desc=desc,
        on_checkpoint=on_checkpoint,
    )


def run_summary(config, seeds, result: PopulationResult) -> dict:
    """The run-level summary fields every sequence experiment reports (model, seeds, steps,
    divergence, timing); experiments add their own judgement on top."""
    trained = len(seeds) * result.trained_steps
    return {
        "model": config.model.name,
        "num_seeds": len(seeds),
        "first_seed": int(config.first_seed),
        "root_seed": int(config.seed),
        "num_steps": int(config.num_steps),
        "diverged": int(result.diverged.sum()),
        "wall_time_s": result.compile_s + result.loop_s,
        "compile_time_s": result.compile_s,
        "seed_steps_per_s": trained / result.loop_s if trained else 0.0,
        "resumed_from_step": result.resumed_from_step,
    }
