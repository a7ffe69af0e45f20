"""Non-arithmetic baselines: an affine layer, and an affine layer followed by an activation.

Linear:     y = xW + b.
Activation: y = f(xW + b), f one of ``ACTIVATIONS``.

Inits (the reference implementations): Glorot-uniform (gain 5/3 for tanh); Kaiming-uniform with the
ReLU gain √2, U[±√2·√(3/fan_in)], for relu/relu6/elu/leaky_relu/prelu; U[±√(3/fan_in)] for
selu; b = 0. These are not arithmetic units: ``sparsity_weights()`` is empty, and
``weight_matrices()`` is the kernel ``w``.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    check_choice,
    float_dtype,
    glorot_uniform,
    kaiming_uniform,
    thin_matmul,
)

ACTIVATIONS = (
    "relu",
    "relu6",
    "tanh",
    "sigmoid",
    "softsign",
    "elu",
    "selu",
    "leaky_relu",
    "prelu",
    "swish",
    "gelu",
)

PRELU_INIT = 0.25
LEAKY_SLOPE = 0.01

_KAIMING_RELU = frozenset({"relu", "relu6", "elu", "leaky_relu", "prelu"})

# prelu is absent: its slope is a parameter, applied in ``Activation.__call__``.
_FUNCTIONS = {
    "relu": jax.nn.relu,
    "relu6": jax.nn.relu6,
    "tanh": jnp.tanh,
    "sigmoid": jax.nn.sigmoid,
    "softsign": jax.nn.soft_sign,
    "elu": jax.nn.elu,
    "selu": jax.nn.selu,
    # z > 0, not jax.nn.leaky_relu's z >= 0: PyTorch's gradient at z = 0 is the slope.
    "leaky_relu": lambda z: jnp.where(z > 0, z, LEAKY_SLOPE * z),
    "swish": jax.nn.silu,
    # The exact erf form, as the reference (PyTorch) GELU.
    "gelu": functools.partial(jax.nn.gelu, approximate=False),
}


def activation_init(key, shape, activation: str):
    """The weight init ``[in, out]`` that the spec assigns to ``activation``."""
    if activation == "tanh":
        return glorot_uniform(key, shape, gain=5.0 / 3.0)
    if activation in _KAIMING_RELU:
        return kaiming_uniform(key, shape, gain=math.sqrt(2.0))
    if activation == "selu":
        return kaiming_uniform(key, shape, gain=1.0)
    return glorot_uniform(key, shape)


class Linear(ArithmeticUnit):
    """Affine layer y = xW + b; params ``w`` ``[in, out]`` (Glorot-uniform), ``b`` ``[out]`` (0)."""

    is_arithmetic = False

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        self.w = nnx.Param(glorot_uniform(rngs.params(), (in_features, out_features)))
        self.b = nnx.Param(jnp.zeros((out_features,), float_dtype()))

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return thin_matmul(x, self.w[...]) + self.b[...]

    def weight_matrices(self) -> tuple:
        return (self.w[...],)


class Activation(ArithmeticUnit):
    """y = f(xW + b); params ``w`` ``[in, out]``, ``b`` ``[out]`` and, for prelu, the scalar
    slope ``alpha`` (init 0.25). ``activation`` is one of ``ACTIVATIONS``.
    """

    is_arithmetic = False

    def __init__(self, in_features: int, out_features: int, *, activation: str, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        check_choice("activation", activation, ACTIVATIONS)
        self.activation = activation
        shape = (in_features, out_features)
        self.w = nnx.Param(activation_init(rngs.params(), shape, activation))
        self.b = nnx.Param(jnp.zeros((out_features,), float_dtype()))
        if activation == "prelu":
            self.alpha = nnx.Param(jnp.asarray(PRELU_INIT, float_dtype()))

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        z = thin_matmul(x, self.w[...]) + self.b[...]
        if self.activation == "prelu":
            return jnp.where(z > 0, z, self.alpha[...] * z)  # gradient α at 0, as PyTorch
        return _FUNCTIONS[self.activation](z)

    def weight_matrices(self) -> tuple:
        return (self.w[...],)
