"""The time-tracking grid world of Trask et al., "Neural Arithmetic Logic Units" (2018), §4.5,
in pure JAX behind gymnax's environment interface.

Each episode draws a command time ``T`` and a target cell on a ``size × size`` grid (5×5 in the
paper); the agent must *step onto* the target at exactly step ``T``. Stepping onto it ends the
episode: reward 1 if the step number equals ``T``, else 0 (early). An episode that has not
reached the target ends at step ``T + grace`` with reward 0 (``grace`` = 0: at ``T``). The
start cell is never the target and is within Manhattan distance ``T`` of it, so every episode
can be won.

Interface (gymnax's, without depending on gymnax — it would pull in gymnasium, pandas and
seaborn for an interface of five methods): explicit keys, ``EnvState``/``EnvParams`` struct
dataclasses, ``reset(key, params) -> (obs, state)``, ``step(key, state, action, params) ->
(obs, state, reward, done, info)`` with automatic reset on ``done`` (as gymnax), and the
``reset_env``/``step_env`` pair without it. Everything is ``jit``-, ``vmap``- and ``scan``-able.

Observation (float32 ``[4·size + 1]``): one-hot agent row, one-hot agent column, one-hot target
row, one-hot target column, then ``T`` itself (the raw integer as a float). The elapsed time is
*not* observed: the agent must count. Actions: 0 stay, 1 up (row − 1), 2 down (row + 1),
3 left (column − 1), 4 right (column + 1); a move into a wall leaves the agent in place.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

STAY, UP, DOWN, LEFT, RIGHT = range(5)
MOVES = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))  # (d_row, d_col) per action


@struct.dataclass
class EnvState:
    agent: jax.Array  # int32 [2] (row, col)
    target: jax.Array  # int32 [2]
    target_time: jax.Array  # int32 [] T
    time: jax.Array  # int32 [] steps taken so far


@struct.dataclass
class EnvParams:
    """Traced leaves, so evaluation at each ``T`` is a ``vmap`` over params."""

    t_min: Any = 5  # T ~ U{t_min, …, t_max} at reset
    t_max: Any = 12
    grace: Any = 0  # steps after T before an unfinished episode ends
    max_steps_in_episode: int = struct.field(pytree_node=False, default=12)  # gymnax's field


class Discrete:
    """gymnax's ``spaces.Discrete``: integers ``0 … n − 1``."""

    def __init__(self, n: int):
        self.n, self.shape, self.dtype = n, (), jnp.int32

    def sample(self, key):
        return jax.random.randint(key, (), 0, self.n, jnp.int32)

    def contains(self, x):
        return jnp.logical_and(x >= 0, x < self.n)


class Box:
    """gymnax's ``spaces.Box``: arrays of ``shape`` in ``[low, high]``."""

    def __init__(self, low, high, shape, dtype=jnp.float32):
        self.low, self.high, self.shape, self.dtype = low, high, shape, dtype

    def sample(self, key):
        return jax.random.uniform(key, self.shape, self.dtype, self.low, self.high)

    def contains(self, x):
        return jnp.all((x >= self.low) & (x <= self.high))


class GridWorld:
    """The environment (static settings only: the grid size); see the module doc."""

    def __init__(self, size: int = 5):
        if size < 2:
            raise ValueError(f"size must be >= 2, got {size!r}.")
        self.size = size

    @property
    def name(self) -> str:
        return "TimeGridWorld-v0"

    @property
    def num_actions(self) -> int:
        return len(MOVES)

    @property
    def obs_size(self) -> int:
        return 4 * self.size + 1

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    def action_space(self, params: EnvParams | None = None) -> Discrete:
        return Discrete(self.num_actions)

    def observation_space(self, params: EnvParams | None = None) -> Box:
        return Box(0.0, jnp.inf, (self.obs_size,), jnp.float32)

    def get_obs(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """``[4·size + 1]`` float32 (see the module doc)."""
        one_hot = lambda i: jax.nn.one_hot(i, self.size, dtype=jnp.float32)
        parts = [one_hot(state.agent[0]), one_hot(state.agent[1])]
        parts += [one_hot(state.target[0]), one_hot(state.target[1])]
        return jnp.concatenate([*parts, state.target_time[None].astype(jnp.float32)])

    def is_terminal(self, state: EnvState, params: EnvParams) -> jax.Array:
        on_target = jnp.all(state.agent == state.target)
        return on_target | (state.time >= state.target_time + params.grace)

    def episode_from(self, agent, target, target_time) -> EnvState:
        """The state at step 0 of a given episode (``agent``/``target`` int [2], ``T`` int)."""
        return EnvState(
            agent=jnp.asarray(agent, jnp.int32),
            target=jnp.asarray(target, jnp.int32),
            target_time=jnp.asarray(target_time, jnp.int32),
            time=jnp.zeros((), jnp.int32),
        )

    def reset_env(self, key, params: EnvParams) -> tuple[jax.Array, EnvState]:
        """T ~ U{t_min…t_max}, target uniform, start uniform over cells at Manhattan distance
        1…T from the target."""
        k_time, k_target, k_start = jax.random.split(key, 3)
        t = jax.random.randint(k_time, (), params.t_min, params.t_max + 1, jnp.int32)
        cells = self.size * self.size
        target_idx = jax.random.randint(k_target, (), 0, cells, jnp.int32)
        target = jnp.stack([target_idx // self.size, target_idx % self.size])
        idx = jnp.arange(cells)
        dist = jnp.abs(idx // self.size - target[0]) + jnp.abs(idx % self.size - target[1])
        ok = (dist >= 1) & (dist <= t)
        start_idx = jax.random.categorical(k_start, jnp.where(ok, 0.0, -jnp.inf))
        agent = jnp.stack([start_idx // self.size, start_idx % self.size]).astype(jnp.int32)
        state = self.episode_from(agent, target, t)
        return self.get_obs(state, params), state

    def step_env(self, key, state: EnvState, action, params: EnvParams):
        """One move; no reset. Returns ``(obs, state, reward, done, info)``."""
        delta = jnp.asarray(MOVES, jnp.int32)[action]
        agent = jnp.clip(state.agent + delta, 0, self.size - 1)
        state = state.replace(agent=agent, time=state.time + 1)
        on_target = jnp.all(agent == state.target)
        reward = (on_target & (state.time == state.target_time)).astype(jnp.float32)
        done = self.is_terminal(state, params)
        info = {"discount": 1.0 - done.astype(jnp.float32), "success": reward > 0}
        return self.get_obs(state, params), state, reward, done, info

    def reset(self, key, params: EnvParams | None = None):
        params = self.default_params if params is None else params
        return self.reset_env(key, params)

    def step(self, key, state: EnvState, action, params: EnvParams | None = None):
        """``step_env``, then a fresh episode where ``done`` (gymnax's auto-reset)."""
        params = self.default_params if params is None else params
        key, key_reset = jax.random.split(key)
        obs_st, state_st, reward, done, info = self.step_env(key, state, action, params)
        obs_re, state_re = self.reset_env(key_reset, params)
        state = jax.tree.map(lambda a, b: jnp.where(done, a, b), state_re, state_st)
        obs = jnp.where(done, obs_re, obs_st)
        return obs, state, reward, done, info
