"""The population loop shared by the recurrent experiments (sequential MNIST, number translation).

An experiment supplies a model factory, a per-batch loss and an evaluation; this module turns
them into pure per-seed functions (``make_sequence_trainer``) and runs many seeds of them at
once in fixed-width seed blocks, in jitted evaluation periods with orbax checkpoints between
chunks (``run_population``). Re-running on the same checkpoint directory resumes.

Keys: seed k's key is ``fold_in(key(config.seed), k)`` (``nalu_jax.train.seed_keys``), split into
an init key and a training key; step t draws from ``fold_in(train_key, t)``.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx, struct

from nalu_jax.checkpoint import Checkpointer
from nalu_jax.config_utils import ConfigError, positive_int
from nalu_jax.engine import _progress
from nalu_jax.models import MODELS
from nalu_jax.population import blocked, pad_seed_numbers
from nalu_jax.train import (
    HParams,
    _all_finite,
    _tree_where,
    default_chunk,
    npu_beta,
    num_evaluations,
    reg_schedule,
    seed_keys,
)


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


def validate_common(config, positive=()) -> None:
    """The run fields every recurrent experiment shares, plus ``positive`` (name, value) pairs
    that must be integers >= 1; the first bad one raises a one-sentence ``ConfigError``."""
    for name, value in (
        ("num_seeds", config.num_seeds),
        ("eval_every", config.eval_every),
        ("seed_block", config.seed_block),
        ("train.batch_size", config.train.batch_size),
        *positive,
    ):
        positive_int(name, value)
    for name in ("seed", "first_seed", "num_steps"):
        positive_int(name, config[name], 0)
    if config.num_steps % config.eval_every:
        raise ConfigError(
            f"eval_every must divide num_steps, got eval_every={config.eval_every} "
            f"and num_steps={config.num_steps}."
        )
    if config.checkpoint_every is not None:
        positive_int("checkpoint_every", config.checkpoint_every)
    if not config.train.lr > 0:
        raise ConfigError(f"train.lr must be a positive number, got {config.train.lr!r}.")


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


def make_sequence_trainer(
    factory, batch_loss, eval_metrics, *, hparams, eval_every, train_data, eval_data, config
):
    """Pure per-seed functions from an experiment's pieces.

    Args:
      factory: ``rngs -> model`` (an ``nnx.Module`` with ``project()``).
      batch_loss: ``(model, hp, step, key, train_data) -> (loss, mse)`` on one fresh batch.
      eval_metrics: ``(model, eval_data) -> {name: array}`` for one seed.
    """
    graphdef, _ = nnx.split(nnx.eval_shape(lambda: factory(nnx.Rngs(0))))  # no eager init
    tr = config.train
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
        bad = ~(jnp.isfinite(loss) & _all_finite(params) & _all_finite(opt_state))
        diverged = state.diverged | bad
        new = state.replace(
            step=state.step + 1,
            params=_tree_where(diverged, state.params, params),
            opt_state=_tree_where(diverged, state.opt_state, opt_state),
            diverged=diverged,
            diverged_at=jnp.where(bad & ~state.diverged, state.step, state.diverged_at),
        )
        return new, jnp.where(diverged, jnp.nan, mse)

    def train(state: SeqState, hp: HParams, data):
        """``eval_every`` updates → (state, per-step training MSE ``[eval_every]``)."""
        return jax.lax.scan(lambda s, _: train_step(s, hp, data), state, None, length=eval_every)

    def evaluate(state: SeqState, data):
        return eval_metrics(nnx.merge(graphdef, state.params), data)

    return SequenceTrainer(init, train, evaluate, hparams, train_data, eval_data, graphdef)


class PopulationResult(NamedTuple):
    history: dict  # {"step": [E], "train_loss": [E, S], name: [E, S, ...] per metric}
    diverged: np.ndarray  # bool [S]
    diverged_at: np.ndarray  # int [S]
    compile_s: float
    loop_s: float
    trained_steps: int  # steps trained in this call (0 when resumed from the end)
    resumed_from_step: int | None  # the checkpoint this call started from; None: fresh


def run_population(
    trainer, config, seeds, checkpoint_dir, *, progress=True, desc=None, on_checkpoint=None
):
    """Train ``seeds`` (seed numbers ``[S]``) for ``config.num_steps``, evaluating every
    ``config.eval_every`` steps (and at steps 0 and num_steps); resumes from ``checkpoint_dir``.

    ``on_checkpoint(history, num_done, diverged_at)`` runs after each intermediate checkpoint
    (e.g. to rewrite ``metrics.jsonl``).
    """
    seeds = np.asarray(seeds)
    n, block = len(seeds), int(config.seed_block)
    eval_every = int(config.eval_every)
    num_evals = num_evaluations(config)
    init = jax.jit(jax.vmap(trainer.init))
    evaluate = jax.jit(blocked(trainer.evaluate, block, (0, None)))
    train = jax.jit(blocked(trainer.train, block, (0, None, None)), donate_argnums=0)
    hp, tdata, edata = trainer.hparams, trainer.train_data, trainer.eval_data

    states = init(seed_keys(config.seed, pad_seed_numbers(seeds, block)))
    shapes = jax.eval_shape(evaluate, states, edata)
    history = {
        k: np.full((num_evals, n) + v.shape[1:], np.nan, np.float32) for k, v in shapes.items()
    }
    history["train_loss"] = np.full((num_evals, n), np.nan, np.float32)
    history["step"] = np.full((num_evals,), -1, np.int64)

    ckpt = Checkpointer(checkpoint_dir)
    done, resumed = 0, ckpt.latest_step()
    if resumed is not None:
        saved = ckpt.restore(resumed, {"states": states, "history": history})
        states = saved["states"]
        history = {k: np.asarray(v) for k, v in saved["history"].items()}
        done = int(np.sum(history["step"] >= 0))

    t0 = time.perf_counter()
    if done < num_evals:  # a finished run only reports
        evaluate_c = evaluate.lower(states, edata).compile()
        train_c = train.lower(states, hp, tdata).compile() if config.num_steps else None
    compile_s = time.perf_counter() - t0

    chunk = default_chunk(config)
    bar = _progress(int(config.num_steps), done * eval_every, progress)
    if bar is not None and desc:
        bar.set_description(desc)
    t_loop, trained = time.perf_counter(), 0
    for e in range(done, num_evals):
        metrics = evaluate_c(states, edata)
        history["step"][e] = e * eval_every
        for name, value in metrics.items():
            history[name][e] = np.asarray(value)[:n]
        if e == num_evals - 1:
            break
        states, losses = train_c(states, hp, tdata)
        with warnings.catch_warnings():  # all-NaN rows: diverged seeds
            warnings.simplefilter("ignore", RuntimeWarning)
            history["train_loss"][e + 1] = np.nanmean(np.asarray(losses)[:n], axis=1)
        trained += eval_every
        if bar is not None:
            bar.set_postfix(diverged=int(np.sum(np.asarray(states.diverged)[:n])))
            bar.update(eval_every)
        if (e + 1) % chunk == 0 and e + 1 < num_evals - 1:  # the last one is saved below
            ckpt.save((e + 1) * eval_every, {"states": states, "history": history})
            if on_checkpoint is not None:
                on_checkpoint(history, e + 1, np.asarray(states.diverged_at)[:n])
    loop_s = time.perf_counter() - t_loop
    if bar is not None:
        bar.close()
    if done < num_evals:
        ckpt.save(int(config.num_steps), {"states": states, "history": history})
    ckpt.close()
    return PopulationResult(
        history,
        np.asarray(states.diverged)[:n],
        np.asarray(states.diverged_at)[:n],
        compile_s,
        loop_s,
        trained,
        resumed,
    )
