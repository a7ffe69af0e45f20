"""Units that divide: the neural reciprocal unit (NRU) and the neural multiplicative
reciprocal unit (NMRU) (Mistry, Farrahi & Hare, "Learning Division with Neural Arithmetic
Logic Modules", 2021).

NRU:   y_j = ∏_i (sign(x_i)·|x_i|^{W_ij}·|W_ij| + 1 − |W_ij|),   W ∈ [−1, 1] by projection.
       W_ij = 1 selects x_i, W_ij = −1 selects 1/x_i, W_ij = 0 ignores it.
NMRU:  x' = [x, 1/(x + ε)],  y = NMU_W(|x'|) ⊙ cos(k' @ W),  k' = π·𝟙[x' < 0],
       W ∈ [0, 1] by projection, ``[2·in, out]``; ε = float32 eps in training, 0 at evaluation.

Parity with ``ReciprocalNMULayer`` (``nru_div_mode=div``) and
``ConcatReciprocalNMUSignRetrievalLayer`` of ``bmistry4/nalm-division`` (clip mode): the
forwards use W unclamped (the projection bounds it); the NRU gates with tanh(1000·W)² in
training by default; each factor is computed as p·gate + (1 − gate), so W = 1 keeps a tiny
p in float32; R_sparse/R_z as the NAU's (NRU) and the NMU's of |x'| (NMRU).
Deliberate difference: at x_i = 0 the NRU's factor is 1 − gate (the term sign(0)·|0|^W is 0)
with finite gradients, where the reference's 0^W gives NaN (W < 0 or its gradient in W).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    F32_EPS,
    ArithmeticUnit,
    clamp_param,
    cos,
    nau_radius,
    product_over_inputs,
    tabs,
    thin_matmul,
    uniform,
)
from nalu_jax.units.nau_nmu import nau_sparse, nau_z, nmu_product, nmu_sparse, nmu_z


def _signed_power(x, w):
    """sign(x_i)·|x_i|^{W_ij}, ``[..., in, out]`` for ``x`` ``[..., in]``, ``w`` ``[in, out]``.

    At x_i = 0 the sign is 0, so the term is 0 whatever W; a guarded log keeps the forward
    free of 0·inf and the gradients (wrt x and W) finite there.
    """
    a = jnp.abs(x)[..., :, None]
    nonzero = a > 0
    log_a = jnp.log(jnp.where(nonzero, a, 1.0))
    power = jnp.where(nonzero, jnp.exp(w * log_a), 0.0)
    return jnp.sign(x)[..., :, None] * power


class NRU(ArithmeticUnit):
    """Neural reciprocal unit, param ``w`` ``[in, out]`` (U[±nau_radius], projected to [−1, 1]).

    Option ``tanh_abs`` (default on, as the reference trains): when ``training=True`` the
    gating |W| is replaced by tanh(1000·W)² (the exponent stays W). Regularisers (raw W):
    ``sparse`` = mean(min(|W|, |1 − |W||)), ``z`` = mean_ij((1 − |W_ij|)·x̄_i²).
    """

    multiplicative = True

    def __init__(
        self, in_features: int, out_features: int, *, rngs: nnx.Rngs, tanh_abs: bool = True
    ):
        super().__init__(in_features, out_features)
        r = nau_radius(in_features, out_features)
        self.w = nnx.Param(uniform(rngs.params(), (in_features, out_features), -r, r))
        self.tanh_abs = tanh_abs

    def weight(self):
        return self.w[...]

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        w = self.weight()
        gate = jnp.tanh(1000.0 * w) ** 2 if (self.tanh_abs and training) else tabs(w)
        # (1 − gate) first: p·gate + 1 − gate left to right loses p < 6e-8 in float32.
        return product_over_inputs(_signed_power(x, w) * gate + (1.0 - gate))

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        w = self.weight()
        return {"sparse": nau_sparse(w), "z": nau_z(w, x)}

    def project(self) -> None:
        clamp_param(self.w, -1.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


class NMRU(ArithmeticUnit):
    """Neural multiplicative reciprocal unit, param ``w`` ``[2·in, out]``.

    Rows ``:in`` weight x, rows ``in:`` weight 1/x. Init U[0.25, 0.75], projection [0, 1].
    Regularisers (raw W): ``sparse`` = mean(min(|W|, |1 − W|)), ``z`` = the NMU's of |x'|.
    """

    multiplicative = True

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        self.w = nnx.Param(uniform(rngs.params(), (2 * in_features, out_features), 0.25, 0.75))

    def weight(self):
        return self.w[...]

    def _extended(self, x, training: bool):
        # ε keeps 1/x finite for the training batches; evaluation is the exact reciprocal.
        eps = F32_EPS if training else 0.0
        return jnp.concatenate([x, 1.0 / (x + eps)], axis=-1)

    def from_extended(self, xr):
        """The output for the extended input x' ``[..., 2·in]``."""
        w = self.weight()
        # The magnitude goes through the NMU; the sign comes from the NPU-style cosine.
        k = jnp.where(xr < 0, math.pi, 0.0)
        return nmu_product(tabs(xr), w) * cos(thin_matmul(k, w))

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        return self.from_extended(self._extended(x, training))

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        w = self.weight()
        return {"sparse": nmu_sparse(w), "z": nmu_z(w, tabs(self._extended(x, training)))}

    def project(self) -> None:
        clamp_param(self.w, 0.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)
