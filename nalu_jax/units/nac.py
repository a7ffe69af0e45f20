"""Neural accumulators (Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018) and the
multiplicative variants compared in Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020.

NAC₊:     W = tanh(Ŵ) ⊙ σ(M̂);   y = xW.
NAC•:     W as NAC₊;            y = exp(log(|x| + ε) @ W).
NAC•,σ:   W = σ(Ŵ);             y = exp(log(|x| + ε) @ W)   (PosNAC).
NAC•,NMU: W ∈ [0, 1] (projection, NMU init and regularisers); y = exp(log(|x| + ε) @ W).

NAC₊/NAC• init: Ŵ, M̂ ~ U[−r, r], r = ``nac_radius(in, out)``; ε = 1e-7.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    EPS,
    ArithmeticUnit,
    glorot_normal,
    nac_radius,
    thin_matmul,
    uniform,
)
from nalu_jax.units.nau_nmu import NMU


def log_space_matmul(x, w):
    """exp(log(|x| + ε) @ W) for ``x`` ``[..., in]`` and ``w`` ``[in, out]`` -> ``[..., out]``."""
    return jnp.exp(thin_matmul(jnp.log(jnp.abs(x) + EPS), w))


class NAC(ArithmeticUnit):
    """NAC₊: params ``w_hat``, ``m_hat`` ``[in, out]``; y = x (tanh(Ŵ) ⊙ σ(M̂)). No regulariser."""

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        r = nac_radius(in_features, out_features)
        shape = (in_features, out_features)
        self.w_hat = nnx.Param(uniform(rngs.params(), shape, -r, r))
        self.m_hat = nnx.Param(uniform(rngs.params(), shape, -r, r))

    def weight(self):
        """The effective W = tanh(Ŵ) ⊙ σ(M̂), ``[in, out]``."""
        return jnp.tanh(self.w_hat[...]) * jax.nn.sigmoid(self.m_hat[...])

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return thin_matmul(x, self.weight())

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


class NACMul(NAC):
    """NAC•: the NAC₊ weight in log space, y = exp(log(|x| + ε) @ W).

    Singular for W < 0 near x = 0, as in the paper; deliberately left so.
    """

    multiplicative = True

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return log_space_matmul(x, self.weight())


class NACMulSigma(ArithmeticUnit):
    """NAC•,σ (PosNAC): param ``w_hat`` ``[in, out]`` ~ N(0, 2/(in+out)); W = σ(Ŵ)."""

    multiplicative = True

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        self.w_hat = nnx.Param(glorot_normal(rngs.params(), (in_features, out_features)))

    def weight(self):
        """The effective W = σ(Ŵ), ``[in, out]``."""
        return jax.nn.sigmoid(self.w_hat[...])

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return log_space_matmul(x, self.weight())

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


class NACMulNMU(ArithmeticUnit):
    """NAC•,NMU: param ``w`` ``[in, out]`` ~ U[0.25, 0.75], projected to [0, 1].

    Regularisers as the NMU: ``sparse`` = mean(min(W, 1 − W)), ``z`` = mean((1 − W)(1 − x̄)²).
    """

    multiplicative = True

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        self.w = nnx.Param(uniform(rngs.params(), (in_features, out_features), 0.25, 0.75))

    # The NMU's weight, regularisers and projection, borrowed rather than inherited so that
    # an ``isinstance(unit, NMU)`` check never mistakes this unit for an NMU.
    weight = NMU.weight
    regularizers = NMU.regularizers
    project = NMU.project

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return log_space_matmul(x, self.weight())

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)
