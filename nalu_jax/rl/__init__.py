"""Reinforcement learning on the pure-JAX environments: agents (NNX) and an A2C trainer."""

from nalu_jax.rl.agents import AGENTS, AgentCarry, LSTMAgent, MemoryAgent, make_agent

__all__ = ["AGENTS", "AgentCarry", "LSTMAgent", "MemoryAgent", "make_agent"]
