"""Pure-JAX environments with gymnax's interface (``reset``/``step`` with explicit keys)."""

from nalu_jax.envs.gridworld import EnvParams, EnvState, GridWorld

__all__ = ["EnvParams", "EnvState", "GridWorld"]
