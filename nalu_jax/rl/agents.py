"""Recurrent actor-critic agents for the time-tracking grid world (Trask et al. 2018, §4.5).

* ``LSTMAgent``: obs ``[B, O]`` → LSTM (hidden ``H``) → policy logits ``[B, A]`` and value ``[B]``.
* ``MemoryAgent``: the same core, plus a memory ``m [B, K]`` that passes through an arithmetic
  unit and back into the LSTM: ``(c, h) = LSTM((c, h), [obs, m_{t−1}])``,
  ``m_t = unit([m_{t−1}, h])`` — with ``unit`` = NAC₊ the memory can keep an exact running
  count (``m_t = m_{t−1} + h_j``) that the LSTM reads at the next step. Any unit of
  ``nalu_jax.units.UNITS`` can stand in (NAU is the obvious second candidate).

Both are NNX modules with ``initial_carry(batch)`` and ``__call__(carry, obs) -> (carry, logits,
value)``; the trainer splits them once and merges inside its pure functions.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx, struct

from nalu_jax.units import make_unit
from nalu_jax.units.precision import set_layer_precision


@struct.dataclass
class AgentCarry:
    c: jax.Array  # [B, H] LSTM cell state
    h: jax.Array  # [B, H] LSTM output
    memory: Any = None  # [B, K] (MemoryAgent) or None


def _heads(self, hidden: int, num_actions: int, rngs: nnx.Rngs) -> None:
    # Small policy init: a near-uniform policy at the start explores the grid.
    self.policy = nnx.Linear(
        hidden,
        num_actions,
        kernel_init=nnx.initializers.variance_scaling(0.01, "fan_in", "normal"),
        rngs=rngs,
    )
    self.value = nnx.Linear(hidden, 1, rngs=rngs)
    set_layer_precision(self)  # the heads and the LSTM's gates (flax cells take none)


class LSTMAgent(nnx.Module):
    """The plain LSTM agent (see the module doc)."""

    def __init__(self, obs_size: int, num_actions: int, hidden: int = 32, *, rngs: nnx.Rngs):
        self.hidden = hidden
        self.lstm = nnx.LSTMCell(obs_size, hidden, rngs=rngs)
        _heads(self, hidden, num_actions, rngs)

    def initial_carry(self, batch: int) -> AgentCarry:
        zeros = jnp.zeros((batch, self.hidden), jnp.float32)
        return AgentCarry(c=zeros, h=zeros)

    def __call__(self, carry: AgentCarry, obs):
        """``obs [B, O]`` → ``(carry, logits [B, A], value [B])``."""
        (c, h), _ = self.lstm((carry.c, carry.h), obs)
        return AgentCarry(c=c, h=h), self.policy(h), self.value(h)[:, 0]

    def project(self) -> None:
        return None

    def diagnostics(self) -> dict:
        """Per-seed scalars reported with each evaluation (none for the plain LSTM)."""
        return {}


class MemoryAgent(nnx.Module):
    """The LSTM agent with an arithmetic-unit memory of ``memory_size`` cells (module doc)."""

    def __init__(
        self,
        obs_size: int,
        num_actions: int,
        hidden: int = 32,
        *,
        unit: str = "nac_add",
        memory_size: int = 1,
        rngs: nnx.Rngs,
        **unit_options,
    ):
        self.hidden, self.memory_size = hidden, memory_size
        self.lstm = nnx.LSTMCell(obs_size + memory_size, hidden, rngs=rngs)
        self.memory = make_unit(unit, memory_size + hidden, memory_size, rngs=rngs, **unit_options)
        _heads(self, hidden, num_actions, rngs)

    def initial_carry(self, batch: int) -> AgentCarry:
        zeros = jnp.zeros((batch, self.hidden), jnp.float32)
        return AgentCarry(c=zeros, h=zeros, memory=jnp.zeros((batch, self.memory_size)))

    def __call__(self, carry: AgentCarry, obs):
        """``obs [B, O]`` → ``(carry, logits [B, A], value [B])``."""
        (c, h), _ = self.lstm((carry.c, carry.h), jnp.concatenate([obs, carry.memory], -1))
        memory = self.memory(jnp.concatenate([carry.memory, h], -1))
        return AgentCarry(c=c, h=h, memory=memory), self.policy(h), self.value(h)[:, 0]

    def project(self) -> None:
        self.memory.project()

    def diagnostics(self) -> dict:
        """``memory_self_weight [K]``: the unit's weight from each memory cell to itself (1 for
        an exact accumulator; NaN for units without a weight matrix of shape [K + H, K])."""
        k = self.memory_size
        weights = self.memory.sparsity_weights()
        w = weights[0] if weights else None
        if w is None or w.shape != (k + self.hidden, k):
            return {"memory_self_weight": jnp.full((k,), jnp.nan, jnp.float32)}
        return {"memory_self_weight": jnp.diagonal(w[:k, :k])}


#: agent kind → constructor ``(obs_size, num_actions, hidden, *, rngs, **options) -> agent``
AGENTS: dict = {"lstm": LSTMAgent, "memory": MemoryAgent}


def make_agent(kind: str, obs_size: int, num_actions: int, hidden: int, *, rngs, **options):
    """Build agent ``kind``; unknown kinds raise a ``ValueError`` naming ``agent``."""
    if kind not in AGENTS:
        raise ValueError(f"agent must be one of {sorted(AGENTS)}, got {kind!r}.")
    return AGENTS[kind](obs_size, num_actions, hidden, rngs=rngs, **options)
