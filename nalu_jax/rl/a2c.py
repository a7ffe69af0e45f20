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

The pieces the grid-world experiment hands to the one training core
(``nalu_jax.engine.train.make_train``, via ``nalu_jax.experiments.gridworld``)::

    loss, mean_return = episodes_loss(env, model, hp, key, train_params, batch_size, horizon)
    metrics = greedy_metrics(env, model, eval_data, eval_horizon, (lo, hi))
    tx = optimizer(grad_clip)   # Adam's direction after global-norm clipping

Keys: the core splits the seed key into an init key and a training key; update t's key
``fold_in(train_key, t)`` is split here into the episodes' reset key and the actions' key.
Evaluation is greedy on fixed episodes. This module imports nothing above the environments
and agents.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from nalu_jax.envs.gridworld import EnvParams, GridWorld

#: the optional extra the grid world's losses and policy come from (pyproject.toml)
RL_EXTRA = "pip install -e '.[rl]' (rlax and distrax)"


def rl_packages():
    """``(rlax, distrax)``, imported on first use: the core install leaves them out, so only a
    grid-world run needs them (``RL_EXTRA``); ``None`` when either is missing."""
    try:
        import distrax
        import rlax
    except ImportError:
        return None
    return rlax, distrax


EVAL_KEY = 0x5EED_0A2C  # fixed: every seed and agent is judged on the same episodes


@struct.dataclass
class A2CHParams:
    """Traced hyperparameters (each may carry a sweep axis)."""

    lr: Any
    entropy_coef: Any
    value_coef: Any
    gamma: Any
    gae_lambda: Any


class Rollout(NamedTuple):
    logits: jax.Array  # [L, B, A]
    values: jax.Array  # [L, B]
    actions: jax.Array  # [L, B]
    rewards: jax.Array  # [L, B] (0 once the episode has ended)
    dones: jax.Array  # [L, B] the episode ended at this step
    valid: jax.Array  # [L, B] the episode was still running before this step


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
    distrax = None if greedy else rl_packages()[1]

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
    rlax = rl_packages()[0]
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


def optimizer(grad_clip: float | None = None):
    """Adam's direction (default moments) after clipping the gradients' global norm at
    ``grad_clip`` (0 or None: no clipping); the core applies the learning rate."""
    adam = optax.scale_by_adam()
    return optax.chain(optax.clip_by_global_norm(grad_clip), adam) if grad_clip else adam


def episodes_loss(env: GridWorld, model, hp: A2CHParams, key, train_params: EnvParams,
                  batch_size: int, horizon: int):  # fmt: skip
    """One on-policy A2C loss: ``batch_size`` fresh episodes (``train_params``) rolled out for
    ``horizon`` steps by ``model`` from ``key`` → ``(loss, mean return)``. The rollout is
    differentiated directly; advantages and returns are stop-gradient'ed (``a2c_loss``)."""
    reset_key, act_key = jax.random.split(key)
    _, env_states = jax.vmap(env.reset_env, (0, None))(
        jax.random.split(reset_key, batch_size), train_params
    )
    return a2c_loss(rollout(env, model, env_states, train_params, act_key, horizon, False), hp)


def greedy_metrics(env: GridWorld, model, data: dict, horizon: int, train_range) -> dict:
    """Greedy success rate per test T on ``data``'s fixed episodes → ``{"success": [n_T],
    "train_success": []}`` (the mean over test T within ``train_range = (lo, hi)``), plus the
    agent's ``diagnostics()``."""
    lo, hi = train_range
    params = EnvParams(t_min=0, t_max=0, grace=data["grace"])
    ro = rollout(env, model, data["states"], params, None, horizon, True)
    times = data["times"]
    success = jnp.sum(ro.rewards, 0).reshape(times.shape[0], -1).mean(-1)
    in_range = ((times >= lo) & (times <= hi)).astype(jnp.float32)
    return {
        "success": success,
        "train_success": jnp.sum(success * in_range) / jnp.maximum(jnp.sum(in_range), 1.0),
        **model.diagnostics(),  # e.g. the memory unit's self-weight
    }


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
