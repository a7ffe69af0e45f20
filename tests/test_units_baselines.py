"""Linear and activation baselines: hand-computed outputs (also through ``jax.jit``), init
bounds and variances, and construction errors."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.models.arithmetic import ArithmeticNetwork
from nalu_jax.units import ACTIVATIONS, NAU, Activation, Linear


def apply(unit, x):
    graphdef, state = nnx.split(unit)
    f = lambda state, x: nnx.merge(graphdef, state)(x)
    x = jnp.asarray(x, jnp.float32)
    eager, jitted = f(state, x), jax.jit(f)(state, x)
    np.testing.assert_allclose(eager, jitted, rtol=1e-6, atol=1e-7)
    return jitted


def close(actual, expected, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def test_linear_is_affine():
    lin = Linear(2, 2, rngs=nnx.Rngs(0))
    close(lin.b[...], [0.0, 0.0])
    lin.w[...] = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    lin.b[...] = jnp.array([0.5, -1.0])
    close(
        apply(lin, [[1.0, 1.0], [2.0, -1.0]]), [[1 + 3 + 0.5, 2 + 4 - 1], [2 - 3 + 0.5, 4 - 4 - 1]]
    )


def _sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

EXPECTED = {
    "relu": lambda z: max(z, 0.0),
    "relu6": lambda z: min(max(z, 0.0), 6.0),
    "tanh": math.tanh,
    "sigmoid": _sigmoid,
    "softsign": lambda z: z / (1.0 + abs(z)),
    "elu": lambda z: z if z > 0 else math.exp(z) - 1.0,
    "selu": lambda z: SELU_SCALE * (z if z > 0 else SELU_ALPHA * (math.exp(z) - 1.0)),
    "leaky_relu": lambda z: z if z > 0 else 0.01 * z,
    "prelu": lambda z: z if z > 0 else 0.25 * z,
    "swish": lambda z: z * _sigmoid(z),
    "gelu": lambda z: 0.5 * z * (1.0 + math.erf(z / math.sqrt(2.0))),
}


def test_every_activation_has_a_reference():
    assert set(EXPECTED) == set(ACTIVATIONS)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activation_outputs(activation):
    unit = Activation(1, 4, activation=activation, rngs=nnx.Rngs(0))
    close(unit.b[...], jnp.zeros(4))
    unit.w[...] = jnp.array([[1.0, -1.0, 2.0, 4.0]])
    unit.b[...] = jnp.array([0.0, 0.0, 0.5, 0.0])
    x = 1.5
    pre = [x, -x, 2 * x + 0.5, 4 * x]
    close(apply(unit, [[x]]), [[EXPECTED[activation](z) for z in pre]])


def test_prelu_slope_is_a_parameter():
    unit = Activation(1, 1, activation="prelu", rngs=nnx.Rngs(0))
    close(unit.alpha[...], 0.25)
    unit.w[...] = jnp.ones((1, 1))
    unit.alpha[...] = jnp.asarray(0.5)
    close(apply(unit, [[-2.0], [3.0]]), [[-2.0 * 0.5], [3.0]])
    assert not hasattr(Activation(1, 1, activation="relu", rngs=nnx.Rngs(0)), "alpha")


FAN = 1000
GLOROT = math.sqrt(6.0 / (FAN + FAN))


def init_bound(activation, fan_in, fan_out):
    """The spec's U[−b, b] bound, by hand."""
    if activation == "tanh":
        return 5.0 / 3.0 * math.sqrt(6.0 / (fan_in + fan_out))
    if activation in ("relu", "relu6", "elu", "leaky_relu", "prelu"):
        return math.sqrt(2.0) * math.sqrt(3.0 / fan_in)
    if activation == "selu":
        return math.sqrt(3.0 / fan_in)
    return math.sqrt(6.0 / (fan_in + fan_out))


@pytest.mark.parametrize("activation", ["tanh", "relu", "selu", "gelu"])
def test_activation_init_variance(activation):
    w = Activation(FAN, FAN, activation=activation, rngs=nnx.Rngs(1)).w[...]
    bound = init_bound(activation, FAN, FAN)
    close(jnp.max(jnp.abs(w)), bound, rtol=1e-3)
    close(jnp.var(w), bound**2 / 3.0, rtol=0.02)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activation_init_bound(activation):
    w = Activation(FAN, 100, activation=activation, rngs=nnx.Rngs(2)).w[...]
    close(jnp.max(jnp.abs(w)), init_bound(activation, FAN, 100), rtol=5e-3)


def test_linear_init():
    w = Linear(FAN, FAN, rngs=nnx.Rngs(3)).w[...]
    close(jnp.max(jnp.abs(w)), GLOROT, rtol=1e-3)
    close(jnp.var(w), GLOROT**2 / 3.0, rtol=0.02)


def test_baselines_are_not_arithmetic():
    for unit in (
        Linear(2, 1, rngs=nnx.Rngs(0)),
        Activation(2, 1, activation="relu", rngs=nnx.Rngs(0)),
    ):
        assert not unit.is_arithmetic
        assert unit.sparsity_weights() == ()
        assert bool(jnp.isnan(unit.sparsity_error()))
        assert unit.regularizers(jnp.ones((1, 2))) == {}


def test_bad_construction_arguments():
    with pytest.raises(ValueError, match="in_features"):
        Linear(0, 1, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="out_features"):
        Linear(2, -1, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="in_features"):
        Activation(0, 1, activation="relu", rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="out_features"):
        Activation(2, -1, activation="relu", rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="activation") as err:
        Activation(2, 1, activation="foo", rngs=nnx.Rngs(0))
    assert "'relu'" in str(err.value) and "'foo'" in str(err.value)


def test_network_without_arithmetic_layers_is_judged_over_every_kernel():
    """ICLR 2020's analysis logged every layer's W: a Linear → ReLU network's sparsity error
    is the max of min(|W|, |1 − |W||) over both kernels (hand-computed: 0.45)."""
    first = Linear(2, 2, rngs=nnx.Rngs(0))
    first.w[...] = jnp.array([[0.3, -0.9], [1.2, 0.05]], jnp.float32)  # 0.3, 0.1, 0.2, 0.05
    second = Activation(2, 1, activation="relu", rngs=nnx.Rngs(1))
    second.w[...] = jnp.array([[0.6], [-0.45]], jnp.float32)  # 0.4, 0.45
    net = ArithmeticNetwork([first, second])
    np.testing.assert_allclose(float(net.sparsity_error()), 0.45, rtol=1e-6)
    second.w[...] = jnp.array([[0.95], [-0.0]], jnp.float32)  # 0.05, 0: the first layer's 0.3
    np.testing.assert_allclose(float(net.sparsity_error()), 0.3, rtol=1e-6)


def test_network_with_an_arithmetic_layer_ignores_the_baselines_kernels():
    nau = NAU(2, 1, rngs=nnx.Rngs(0))
    nau.w[...] = jnp.array([[0.9], [0.2]], jnp.float32)  # 0.1, 0.2
    linear = Linear(1, 1, rngs=nnx.Rngs(1))
    linear.w[...] = jnp.array([[0.5]], jnp.float32)  # 0.5, not counted
    np.testing.assert_allclose(float(ArithmeticNetwork([nau, linear]).sparsity_error()), 0.2)
