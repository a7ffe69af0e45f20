"""benchmarks/floor.py's probes: NAC₊'s values and gradients, with their extra arithmetic
still in the compiled step (else the floor they measure would be NAC₊'s)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from benchmarks import floor
from nalu_jax.units import NAC

PROBES = {
    "cos": (floor.CosProbe, ("cosine", "sine")),
    # the noise drawn ahead: the probe reads it, a multiply NAC₊ does not have
    "noise": (floor.NoiseProbe, ("multiply",)),
    "noise_hash": (floor.HashNoiseProbe, ("multiply",)),
    "noise_in_step": (floor.InStepNoiseProbe, ("xor", "shift-right-logical")),  # threefry
    "log_exp": (floor.LogExpProbe, ("log", "exponential")),
    "inalu_mul": (floor.INALUMulProbe, ("log", "exponential", "sign")),
}


def _loss_and_grads(cls):
    """``(params, x, key) -> ((loss, y), grads)`` jitted (x and key are arguments, so XLA
    cannot fold the probe's arithmetic into constants), and the initial params."""
    graphdef, params = nnx.split(cls(2, 1, rngs=nnx.Rngs(3)))

    def loss(params, x, key):
        y = nnx.merge(graphdef, params)(x, training=True, key=key)
        return jnp.mean((y[:, 0] - x.sum(-1)) ** 2), y

    return jax.jit(jax.value_and_grad(loss, has_aux=True)), params


def _key_for(cls, x):
    key = jax.random.key(7)
    if getattr(cls, "draw_noise", None) is not None:
        return cls.draw_noise(key, x.shape, x.dtype)  # drawn ahead, as the core does
    return key


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_trains_as_nac_add(name):
    cls, _ = PROBES[name]
    x = jax.random.uniform(jax.random.key(0), (64, 2), minval=-3.0, maxval=3.0)
    x = x.at[0].set(0.0)  # log(|0| + ε) and a zero input: still NAC₊'s values
    probe, params = _loss_and_grads(cls)
    plain, plain_params = _loss_and_grads(NAC)
    ((loss, y), grads) = probe(params, x, _key_for(cls, x))
    ((loss0, y0), grads0) = plain(plain_params, x, None)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y0))
    assert float(loss) == float(loss0)
    for g, g0 in zip(jax.tree.leaves(grads), jax.tree.leaves(grads0), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(g0))
    # evaluation is NAC₊ itself
    model = cls(2, 1, rngs=nnx.Rngs(3))
    np.testing.assert_array_equal(np.asarray(model(x)), np.asarray(NAC(2, 1, rngs=nnx.Rngs(3))(x)))


@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_arithmetic_is_compiled(name):
    """XLA keeps ``0 · f``: the probe's functions are in its optimised, differentiated step."""
    cls, ops = PROBES[name]
    x = jax.random.uniform(jax.random.key(0), (64, 2), minval=-3.0, maxval=3.0)
    probe, params = _loss_and_grads(cls)
    text = probe.lower(params, x, _key_for(cls, x)).compile().as_text()
    plain, plain_params = _loss_and_grads(NAC)
    plain_text = plain.lower(plain_params, x, None).compile().as_text()
    for op in ops:  # more of each than NAC₊'s own step has
        assert text.count(f" {op}(") > plain_text.count(f" {op}("), op
