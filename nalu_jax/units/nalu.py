"""The NALU (Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018) and the golden-ratio
G-NALU (Rana et al., "GNALU: golden ratio based neural arithmetic logic unit", 2019).

NALU:   W = tanh(Ŵ) ⊙ σ(M̂);  a = xW;  m = exp(log(|x| + ε) @ W);  g = σ(xG [+ b]);
        y = g ⊙ a + (1 − g) ⊙ m.
        Options: separate mul weights (Ŵ_m, M̂_m), a second gate g_mul = σ(xG_mul [+ b_mul])
        in place of 1 − g, gate biases, and the gate regulariser R_g = Σ g²(1 − g)².
G-NALU: tanh(v) → tanh(v·ln φ) and σ(v) → σ(v·ln φ) in the NAC weight and the gate,
        φ = (1 + √5)/2.

Init: Ŵ, M̂ ~ U[−r, r], r = ``nac_radius(in, out)``; G ~ Glorot-uniform; biases 0; ε = 1e-7.

Parity: ``NALULayer`` of ``AndreasMadsen/stable-nalu`` and, for the G-NALU, the golden-ratio
``nac_weight``/gate/mul modes of ``bmistry4/nalm-benchmark``. log(|x| + ε) has input gradient
0 at x = 0, as there. No R_z (the reference NALU would sum it over both NAC calls).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    float_dtype,
    glorot_uniform,
    nac_radius,
    thin_matmul,
    uniform,
)
from nalu_jax.units.nac import log_space_matmul

LN_PHI = math.log((1.0 + math.sqrt(5.0)) / 2.0)  # ≈ 0.4812


class NALU(ArithmeticUnit):
    """Neural arithmetic logic unit.

    Params ``w_hat``, ``m_hat``, ``g`` ``[in, out]``; with ``separate_weights`` also ``w_hat_m``,
    ``m_hat_m`` ``[in, out]``; with ``two_gates`` also ``g_mul`` ``[in, out]``; with
    ``gate_bias`` also ``g_bias`` ``[out]`` (and ``g_mul_bias`` ``[out]`` with ``two_gates``).
    Regulariser ``gate`` (only with ``gate_regularizer``): Σ over batch and outputs of
    g²(1 − g)², summed over both gates when there are two.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        rngs: nnx.Rngs,
        separate_weights: bool = False,
        two_gates: bool = False,
        gate_bias: bool = False,
        gate_regularizer: bool = False,
    ):
        super().__init__(in_features, out_features)
        self.separate_weights = separate_weights
        self.two_gates = two_gates
        self.gate_bias = gate_bias
        self.gate_regularizer = gate_regularizer
        r = nac_radius(in_features, out_features)
        shape = (in_features, out_features)
        self.w_hat = nnx.Param(uniform(rngs.params(), shape, -r, r))
        self.m_hat = nnx.Param(uniform(rngs.params(), shape, -r, r))
        self.g = nnx.Param(glorot_uniform(rngs.params(), shape))
        if separate_weights:
            self.w_hat_m = nnx.Param(uniform(rngs.params(), shape, -r, r))
            self.m_hat_m = nnx.Param(uniform(rngs.params(), shape, -r, r))
        if two_gates:
            self.g_mul = nnx.Param(glorot_uniform(rngs.params(), shape))
        if gate_bias:
            self.g_bias = nnx.Param(jnp.zeros((out_features,), float_dtype()))
            if two_gates:
                self.g_mul_bias = nnx.Param(jnp.zeros((out_features,), float_dtype()))

    def scale(self, v):
        """The pre-activation scaling hook: identity here, v·ln φ in the G-NALU."""
        return v

    def _tanh(self, v):
        return jnp.tanh(self.scale(v))

    def _sigmoid(self, v):
        return jax.nn.sigmoid(self.scale(v))

    def add_weight(self):
        """W = tanh(Ŵ) ⊙ σ(M̂), ``[in, out]``."""
        return self._tanh(self.w_hat[...]) * self._sigmoid(self.m_hat[...])

    def mul_weight(self):
        """The multiplicative path's W, ``[in, out]``: the add weight unless separate."""
        if not self.separate_weights:
            return self.add_weight()
        return self._tanh(self.w_hat_m[...]) * self._sigmoid(self.m_hat_m[...])

    def gates(self, x):
        """(g_add, g_mul), each ``[..., out]``; g_mul = 1 − g_add with a single gate."""
        z = thin_matmul(x, self.g[...])
        if self.gate_bias:
            z = z + self.g_bias[...]
        g = self._sigmoid(z)
        if not self.two_gates:
            return g, 1.0 - g
        z_mul = thin_matmul(x, self.g_mul[...])
        if self.gate_bias:
            z_mul = z_mul + self.g_mul_bias[...]
        return g, self._sigmoid(z_mul)

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        a = thin_matmul(x, self.add_weight())
        m = log_space_matmul(x, self.mul_weight())
        g_add, g_mul = self.gates(x)
        return g_add * a + g_mul * m

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        if not self.gate_regularizer:
            return {}
        g_add, g_mul = self.gates(x)
        reg = jnp.sum(g_add**2 * (1.0 - g_add) ** 2)
        if self.two_gates:
            reg = reg + jnp.sum(g_mul**2 * (1.0 - g_mul) ** 2)
        return {"gate": reg}

    def sparsity_weights(self) -> tuple:
        if self.separate_weights:
            return (self.add_weight(), self.mul_weight())
        return (self.add_weight(),)


class GNALU(NALU):
    """G-NALU: the NALU with tanh and σ applied to v·ln φ (same params and options)."""

    def scale(self, v):
        return v * LN_PHI
