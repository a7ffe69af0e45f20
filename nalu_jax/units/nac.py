"""Neural accumulators (Trask et al., "Neural Arithmetic Logic Units", NeurIPS 2018) and the
multiplicative variants compared in Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020.

NAC₊:     W = tanh(Ŵ) ⊙ σ(M̂);   y = xW.
NAC•:     W as NAC₊;            y = exp(log(|x| + ε) @ W).
NAC•,σ:   W = σ(Ŵ);             y = exp(log(|x| + ε) @ W)   (PosNAC).
NAC•,NMU: W ∈ [0, 1] (projection, NMU init and regularisers); y = exp(log(|x| + ε) @ W).

NAC₊/NAC• init: Ŵ, M̂ ~ U[−r, r], r = ``nac_radius(in, out)``; ε = 1e-7.

Parity with ``AndreasMadsen/stable-nalu`` (``NACLayer``, ``PosNACLayer``,
``ReRegualizedLinearPosNACLayer`` inside the network's exp/log wrap, clip mode): |x| has
gradient 0 at x = 0 (``_base.tabs``), so an input of exactly 0 gets input gradient 0, not
~1/ε; R_z is the NAU-type one of the layer's own input, which for the log-space units is
log(|x| + ε).
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
    tabs,
    thin_matmul,
    uniform,
)
from nalu_jax.units.nau_nmu import NMU, nau_z


def log_input(x):
    """log(|x| + ε), the log-space units' input (gradient 0 at x = 0, as the reference)."""
    return jnp.log(tabs(x) + EPS)


def log_space_matmul(x, w):
    """exp(log(|x| + ε) @ W) for ``x`` ``[..., in]`` and ``w`` ``[in, out]`` -> ``[..., out]``."""
    return jnp.exp(thin_matmul(log_input(x), w))


class NAC(ArithmeticUnit):
    """NAC₊: params ``w_hat``, ``m_hat`` ``[in, out]``; y = x (tanh(Ŵ) ⊙ σ(M̂)).

    Regulariser ``z`` (only used when λ_z > 0): mean_ij((1 − |W_ij|)·x̄_i²), x = the input.
    """

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

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        return {"z": nau_z(self.weight(), x)}

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


class NACMul(NAC):
    """NAC•: the NAC₊ weight in log space, y = exp(log(|x| + ε) @ W).

    Singular for W < 0 near x = 0, as in the paper; deliberately left so. R_z as the NAC₊'s,
    of the log-space input log(|x| + ε).
    """

    multiplicative = True

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return log_space_matmul(x, self.weight())

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        return {"z": nau_z(self.weight(), log_input(x))}


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

    Regularisers as the NMU: ``sparse`` = mean(min(|W|, |1 − W|)), and ``z`` =
    mean((1 − W)(1 − x̄)²) of the log-space input x = log(|input| + ε), as the reference (an
    NMU-weight linear layer inside exp/log) computes it.
    """

    multiplicative = True

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        self.w = nnx.Param(uniform(rngs.params(), (in_features, out_features), 0.25, 0.75))

    # The NMU's weight, regularisers and projection, borrowed rather than inherited so that
    # an ``isinstance(unit, NMU)`` check never mistakes this unit for an NMU.
    weight = NMU.weight
    project = NMU.project
    clamp_w = True  # what the borrowed methods read: always projected

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return log_space_matmul(x, self.weight())

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        return NMU.regularizers(self, log_input(x))

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)
