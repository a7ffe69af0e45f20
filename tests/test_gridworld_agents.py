"""Agents (shapes, the memory loop with known weights), the A2C loss by hand, config errors."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import load_config
from flax import nnx

from nalu_jax.config import ConfigError
from nalu_jax.rl.a2c import A2CHParams, Rollout, a2c_loss
from nalu_jax.rl.agents import MemoryAgent, make_agent


@pytest.mark.parametrize("kind,options", [("lstm", {}), ("memory", {"unit": "nac_add"}),
                                          ("memory", {"unit": "nau", "memory_size": 2})])  # fmt: skip
def test_agent_shapes(kind, options):
    agent = make_agent(kind, 21, 5, 8, rngs=nnx.Rngs(0), **options)
    carry = agent.initial_carry(3)
    carry, logits, value = agent(carry, jnp.ones((3, 21)))
    assert logits.shape == (3, 5) and value.shape == (3,) and carry.h.shape == (3, 8)
    if kind == "memory":
        assert carry.memory.shape == (3, options.get("memory_size", 1))


def test_memory_accumulates_through_the_unit():
    """NAU memory with W = [1 (old memory), 1 (h_0), 0, …]: m_t = m_{t−1} + h_0,t exactly."""
    agent = MemoryAgent(21, 5, 4, unit="nau", rngs=nnx.Rngs(1))
    agent.memory.w[...] = jnp.asarray([[1.0], [1.0], [0.0], [0.0], [0.0]])
    obs = jax.random.normal(jax.random.key(2), (3, 2, 21))
    carry, total = agent.initial_carry(2), np.zeros(2)
    for t in range(3):
        (c, h), _ = agent.lstm((carry.c, carry.h), jnp.concatenate([obs[t], carry.memory], -1))
        carry, _, _ = agent(carry, obs[t])
        np.testing.assert_allclose(np.asarray(carry.h), np.asarray(h), rtol=1e-6)
        total += np.asarray(h[:, 0])
        np.testing.assert_allclose(np.asarray(carry.memory[:, 0]), total, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(agent.diagnostics()["memory_self_weight"]), [1.0])


def test_memory_self_weight_of_nac():
    """NAC₊: W = tanh(Ŵ)·σ(M̂); Ŵ₀₀ = atanh(0.5), M̂₀₀ = 0 gives 0.5·0.5 = 0.25."""
    agent = MemoryAgent(21, 5, 4, unit="nac_add", rngs=nnx.Rngs(1))
    agent.memory.w_hat[...] = agent.memory.w_hat[...].at[0, 0].set(math.atanh(0.5))
    agent.memory.m_hat[...] = agent.memory.m_hat[...].at[0, 0].set(0.0)
    np.testing.assert_allclose(np.asarray(agent.diagnostics()["memory_self_weight"]), [0.25])
    assert make_agent("lstm", 21, 5, 4, rngs=nnx.Rngs(0)).diagnostics() == {}


def test_unknown_agent():
    with pytest.raises(ValueError, match="agent must be one of"):
        make_agent("gru", 21, 5, 8, rngs=nnx.Rngs(0))


def _hp(entropy=0.01, value=0.5, gamma=1.0, lam=1.0):
    f = lambda v: jnp.float32(v)
    return A2CHParams(lr=f(1e-3), entropy_coef=f(entropy), value_coef=f(value), gamma=f(gamma),
                      gae_lambda=f(lam))  # fmt: skip


def test_a2c_loss_by_hand():
    """Uniform policy over 5 actions, reward 1 at the end of a two-step episode, γ = λ = 1:
    advantages 1 − v_t; a third step after the end is masked out (but counts in the mean)."""
    ro = Rollout(
        logits=jnp.zeros((3, 1, 5)),
        values=jnp.asarray([[0.2], [0.5], [0.9]]),
        actions=jnp.asarray([[0], [1], [3]]),
        rewards=jnp.asarray([[0.0], [1.0], [0.0]]),
        dones=jnp.asarray([[False], [True], [False]]),
        valid=jnp.asarray([[True], [True], [False]]),
    )
    loss, ret = jax.jit(a2c_loss)(ro, _hp())
    log5 = math.log(5.0)
    pg = log5 * ((1 - 0.2) + (1 - 0.5)) / 3
    ent = -(2 * log5) / 3
    value = 0.5 * ((1 - 0.2) ** 2 + (1 - 0.5) ** 2) / 3
    np.testing.assert_allclose(float(loss), pg + 0.01 * ent + 0.5 * value, rtol=1e-5)
    assert float(ret) == 1.0


def test_a2c_loss_discounting():
    """γ = 0.5, λ = 1: advantage at step 0 is 0.5·1 − v_0."""
    ro = Rollout(
        logits=jnp.zeros((2, 1, 5)),
        values=jnp.asarray([[0.0], [0.0]]),
        actions=jnp.asarray([[0], [0]]),
        rewards=jnp.asarray([[0.0], [1.0]]),
        dones=jnp.asarray([[False], [True]]),
        valid=jnp.asarray([[True], [True]]),
    )
    loss, _ = jax.jit(a2c_loss)(ro, _hp(entropy=0.0, value=0.0, gamma=0.5))
    np.testing.assert_allclose(float(loss), math.log(5.0) * (0.5 + 1.0) / 2, rtol=1e-5)


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("env.train_t_max", 3, "env.train_t_max"),
        ("env.test_times", (0, 3), "env.test_times"),
        ("model.agents", ("lstm", "gru"), "model.agents"),
        ("model.unit", "nope", "model.unit"),
        ("train.gamma", 1.5, "train.gamma"),
        ("judge.master_rate", 0.0, "judge.master_rate"),
    ],
)
def test_config_errors(tmp_path, field, value, match):
    from nalu_jax.experiments import train_and_evaluate

    config = load_config("gridworld", "smoke")
    section, name = field.split(".")
    config[section][name] = value
    with pytest.raises(ConfigError, match=match):
        train_and_evaluate(config, str(tmp_path / "w"), progress=False)
    assert not (tmp_path / "w").exists()  # errors come before the workdir


def test_lr_is_sweepable_one_program_per_agent():
    from nalu_jax.engine import sweep
    from nalu_jax.experiments import gridworld

    config = load_config("gridworld", "smoke")
    config.sweep.lr = (3e-3, 5e-3)
    settings = sweep.expand(config, gridworld.SWEEPABLE)
    assert [s.name for s in settings] == ["lr=0.003", "lr=0.005"]
    assert [label for label, _ in gridworld.programs(config)] == ["lstm", "memory"]
    label, cfg = gridworld.programs(config)[1]
    pop = gridworld.population(cfg, settings)
    assert [float(hp.lr) for hp in pop.hparams] == pytest.approx([3e-3, 5e-3])
    assert pop.trainer.factory is not None and pop.solved is None
