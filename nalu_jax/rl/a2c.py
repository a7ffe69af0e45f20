"""Advantage actor-critic (A2C) on whole episodes, as pure per-seed functions.

Why A2C, not PPO: episodes here last at most ``T + grace`` (≤ 13 steps in training), so each
update rolls out a batch of whole episodes from a fresh reset and takes one gradient step on
them — no truncation, no bootstrap across batches, no recurrent-state bookkeeping between
rollouts. PPO's extra epochs over the same recurrent rollouts would multiply the compute per
sample for hundreds of seeds on a CPU, and its clipping guards against a policy drift that one
step per batch does not have. The rollout is differentiated directly (sampled actions carry no
gradient), so the agent runs forward once per step instead of twice.

Losses: GAE advantages (``rlax.truncated_generalized_advantage_estimation``), the policy
gradient and entropy losses of ``rlax`` weighted by the "episode still running" mask, and half
the squared error of the value against the λ-returns; the policy is a ``distrax.Categorical``.

Interface (like ``nalu_jax.train``'s ``Trainer``)::

    trainer = make_a2c(env, factory, ...)
    state = trainer.init(seed_key)                                   # A2CState
    state, losses = trainer.train(state, hparams)                    # losses [eval_every]
    state, metrics = trainer.evaluate(state, hparams, eval_data)     # {"success": [n_T], ...}

Keys: the seed key is split into an init key and a training key; update t draws its episodes
and actions from ``fold_in(train_key, t)``. Evaluation is greedy on fixed episodes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import rlax
from flax import nnx, struct

from nalu_jax.envs.gridworld import EnvParams, GridWorld
from nalu_jax.train import guarded_update

EVAL_KEY = 0x5EED_0A2C  # fixed: every seed and agent is judged on the same episodes


@struct.dataclass
class A2CHParams:
    """Traced hyperparameters (each may carry a sweep axis)."""

    lr: Any
    entropy_coef: Any
    value_coef: Any
    gamma: Any
    gae_lambda: Any


@struct.dataclass
class A2CState:
    step: jax.Array  # int32 []
    params: Any  # nnx.State of the agent
    opt_state: Any
    key: jax.Array  # uint32 raw key data of the training key
    diverged: jax.Array  # bool []
    diverged_at: jax.Array  # int32 [] first update that was non-finite, −1 if none


class Rollout(NamedTuple):
    logits: jax.Array  # [L, B, A]
    values: jax.Array  # [L, B]
    actions: jax.Array  # [L, B]
    rewards: jax.Array  # [L, B] (0 once the episode has ended)
    dones: jax.Array  # [L, B] the episode ended at this step
    valid: jax.Array  # [L, B] the episode was still running before this step


class A2CTrainer(NamedTuple):
    init: Any
    train: Any
    evaluate: Any
    hparams: A2CHParams
    graphdef: Any


def evaluation_episodes(env: GridWorld, test_times, episodes: int, grace: int = 0) -> dict:
    """Fixed evaluation episodes: ``episodes`` per command time in ``test_times`` (drawn by
    ``reset_env`` with ``t_min = t_max = T`` from ``fold_in(key(EVAL_KEY), T)``).

    Returns ``{"states": EnvState [n_T·N], "times": [n_T], "grace": int}`` (T-major).
    """
    states = []
    for t in test_times:
        params = EnvParams(t_min=int(t), t_max=int(t), grace=grace)
        keys = jax.random.split(jax.random.fold_in(jax.random.key(EVAL_KEY), int(t)), episodes)
        states.append(jax.vmap(lambda k, p=params: env.reset_env(k, p)[1])(keys))
    stacked = jax.tree.map(lambda *xs: jnp.concatenate(xs), *states)
    times = jnp.asarray(test_times, jnp.int32)
    return {"states": stacked, "times": times, "grace": jnp.asarray(grace, jnp.int32)}


def rollout(env, model, env_states, params: EnvParams, key, horizon: int, greedy: bool) -> Rollout:
    """Run ``horizon`` steps of a batch of episodes from ``env_states`` (``[B]``)."""
    batch = env_states.time.shape[0]
    obs = jax.vmap(env.get_obs, (0, None))(env_states, params)
    step_env = jax.vmap(env.step_env, (None, 0, 0, None))

    def body(carry, t):
        states, obs, agent, alive = carry
        agent, logits, value = model(agent, obs)
        if greedy:
            action = jnp.argmax(logits, -1)
        else:
            action = distrax.Categorical(logits=logits).sample(seed=jax.random.fold_in(key, t))
        obs, states, reward, done, _ = step_env(None, states, action, params)
        out = (logits, value, action, reward * alive, done & alive, alive)
        return (states, obs, agent, alive & ~done), out

    init = (env_states, obs, model.initial_carry(batch), jnp.ones((batch,), bool))
    _, outs = jax.lax.scan(body, init, jnp.arange(horizon))
    return Rollout(*outs)


def a2c_loss(ro: Rollout, hp: A2CHParams):
    """``(loss, aux)`` of one batch of episodes (time-major ``[L, B]``)."""
    w = ro.valid.astype(jnp.float32)
    values = jax.lax.stop_gradient(ro.values)
    bootstrap = jnp.concatenate([values, jnp.zeros_like(values[:1])])  # episodes end by L
    discounts = hp.gamma * (1.0 - ro.dones.astype(jnp.float32))
    gae = jax.vmap(rlax.truncated_generalized_advantage_estimation, (1, 1, None, 1), 1)
    adv = gae(ro.rewards, discounts, hp.gae_lambda, bootstrap)
    returns = adv + values
    pg = jax.vmap(rlax.policy_gradient_loss, (1, 1, 1, 1))(ro.logits, ro.actions, adv, w)
    ent = jax.vmap(rlax.entropy_loss, (1, 1))(ro.logits, w)
    value_loss = 0.5 * jnp.mean(w * (returns - ro.values) ** 2)
    loss = jnp.mean(pg) + hp.entropy_coef * jnp.mean(ent) + hp.value_coef * value_loss
    return loss, jnp.sum(ro.rewards) / ro.rewards.shape[1]


def make_a2c(
    env: GridWorld, factory, hparams: A2CHParams, *, train_params: EnvParams, batch_size: int,
    horizon: int, eval_horizon: int, eval_every: int, grad_clip: float | None = None,
    eval_train_range: tuple[int, int] | None = None,
) -> A2CTrainer:  # fmt: skip
    """Pure per-seed functions (module doc).

    Args:
      factory: ``rngs -> agent`` (``nalu_jax.rl.agents``).
      train_params: the environment of training episodes (T range, grace).
      batch_size: episodes per update; horizon: steps per training rollout (≥ t_max + grace).
      eval_horizon: steps per evaluation rollout (≥ the largest test T + grace).
      eval_train_range: ``(lo, hi)`` T range averaged into the ``train_success`` metric.
    """
    graphdef, _ = nnx.split(nnx.eval_shape(lambda: factory(nnx.Rngs(0))))
    adam = optax.scale_by_adam()
    tx = optax.chain(optax.clip_by_global_norm(grad_clip), adam) if grad_clip else adam
    lo, hi = eval_train_range or (int(train_params.t_min), int(train_params.t_max))

    def init(seed_key) -> A2CState:
        init_key, train_key = jax.random.split(seed_key)
        params = nnx.state(factory(nnx.Rngs(params=init_key)))
        return A2CState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            opt_state=tx.init(params),
            key=jax.random.key_data(train_key),
            diverged=jnp.zeros((), bool),
            diverged_at=jnp.full((), -1, jnp.int32),
        )

    def loss_fn(params, hp, env_states, key):
        ro = rollout(
            env, nnx.merge(graphdef, params), env_states, train_params, key, horizon, False
        )
        return a2c_loss(ro, hp)

    def train_step(state: A2CState, hp: A2CHParams):
        key = jax.random.fold_in(jax.random.wrap_key_data(state.key), state.step)
        reset_key, act_key = jax.random.split(key)
        _, env_states = jax.vmap(env.reset_env, (0, None))(
            jax.random.split(reset_key, batch_size), train_params
        )
        (loss, _), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            state.params, hp, env_states, act_key
        )
        direction, opt_state = tx.update(grads, state.opt_state, state.params)
        params = jax.tree.map(lambda p, d: p - hp.lr * d, state.params, direction)
        model = nnx.merge(graphdef, params)
        model.project()
        new = guarded_update(state, loss, nnx.state(model), opt_state)
        return new, jnp.where(new.diverged, jnp.nan, loss)

    def train(state: A2CState, hp: A2CHParams):
        """``eval_every`` updates → ``(state, per-update loss [eval_every])``."""
        return jax.lax.scan(lambda s, _: train_step(s, hp), state, None, length=eval_every)

    def evaluate(state: A2CState, hp: A2CHParams, data: dict):
        """Greedy success rate per test T on the fixed episodes → ``{"success": [n_T],
        "train_success": []}`` (the mean over test T within the training range), plus the
        agent's ``diagnostics()``."""
        model = nnx.merge(graphdef, state.params)
        params = EnvParams(t_min=0, t_max=0, grace=data["grace"])
        ro = rollout(env, model, data["states"], params, None, eval_horizon, True)
        times = data["times"]
        success = jnp.sum(ro.rewards, 0).reshape(times.shape[0], -1).mean(-1)
        in_range = ((times >= lo) & (times <= hi)).astype(jnp.float32)
        return state, {
            "success": success,
            "train_success": jnp.sum(success * in_range) / jnp.maximum(jnp.sum(in_range), 1.0),
            **model.diagnostics(),  # e.g. the memory unit's self-weight
        }

    return A2CTrainer(init, train, evaluate, hparams, graphdef)


def random_policy_success(env: GridWorld, data: dict, horizon: int, key) -> np.ndarray:
    """Success rate per test T ``[n_T]`` of the uniform random policy on ``data``'s episodes."""
    states = data["states"]
    params = EnvParams(t_min=0, t_max=0, grace=data["grace"])
    step_env = jax.vmap(env.step_env, (None, 0, 0, None))

    def body(carry, t):
        states, alive, won = carry
        action = jax.random.randint(jax.random.fold_in(key, t), alive.shape, 0, env.num_actions)
        _, states, reward, done, _ = step_env(None, states, action, params)
        return (states, alive & ~done, won + reward * alive), None

    n = states.time.shape[0]
    (_, _, won), _ = jax.lax.scan(
        body, (states, jnp.ones(n, bool), jnp.zeros(n)), jnp.arange(horizon)
    )
    return np.asarray(won.reshape(len(data["times"]), -1).mean(-1))
