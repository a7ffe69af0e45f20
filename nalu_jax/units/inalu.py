"""The improved NALU (Schlör, Ring & Hotho, "iNALU: Improved Neural Arithmetic Logic Unit",
Frontiers in Artificial Intelligence, 2020).

W_a = tanh(Ŵ_a) ⊙ σ(M̂_a);  W_m = tanh(Ŵ_m) ⊙ σ(M̂_m);  g = σ(ĝ), ĝ ∈ ℝ^out.
a = xW_a;  m = exp(min(log(max(|x|, ε)) @ W_m, ω));
s_j = ∏_i (|W_m,ij|·sign(x_i) + 1 − |W_m,ij|);
y = g ⊙ a + (1 − g) ⊙ m ⊙ s,  ε = 1e-7, ω = 20.

Init: Ŵ ~ N(0.88, 0.2²), M̂ ~ N(0.5, 0.2²), ĝ ~ N(0, 0.2²).
Regulariser ``inalu``: Σ_{P ∈ {Ŵ_a, M̂_a, Ŵ_m, M̂_m, ĝ}} mean(max(20 − |P|, 0)); its weight
(0.05), its start condition, gradient clipping and reinitialisation belong to training.

Parity with ``INALULayer`` of ``bmistry4/nalm-benchmark``: |x|, |W_m| and |P| have gradient 0
at 0 (``_base.tabs``, PyTorch's convention), and the sparsity error is the *mean* of W_a's and
W_m's errors, as the reference reports it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    TrainingNeeds,
    float_dtype,
    product_over_inputs,
    sparsity_error,
    tabs,
    thin_matmul,
)

W_HAT_MEAN, M_HAT_MEAN, INIT_STD = 0.88, 0.5, 0.2
# ε = 1e-7 rounded to float32 (≈ 1.0000000117e-7), as the reference builds it
# (``torch.full(..., 1e-7, dtype=torch.float32)``): the same value in float64 runs.
EPS = float(np.float32(1e-7))
REG_THRESHOLD = 20.0
OMEGA = 20.0  # the log-space clamp ω


def _normal(key, shape, mean: float):
    return mean + INIT_STD * jax.random.normal(key, shape, float_dtype())


def multiplicative_path(x, w_m, omega: float):
    """(m, s): m = exp(min(log(max(|x|, ε)) @ W_m, ω)) and the sign s_j = ∏_i (|W_m,ij|·sign(x_i)
    + 1 − |W_m,ij|), each ``[..., out]``; the unit's output is g ⊙ a + (1 − g) ⊙ m ⊙ s."""
    log_m = thin_matmul(jnp.log(jnp.maximum(tabs(x), EPS)), w_m)
    m = jnp.exp(jnp.minimum(log_m, omega))
    w_abs = tabs(w_m)
    s = product_over_inputs(w_abs * jnp.sign(x)[..., :, None] + 1.0 - w_abs)
    return m, s


class INALU(ArithmeticUnit):
    """Improved NALU: params ``w_hat_a``, ``m_hat_a``, ``w_hat_m``, ``m_hat_m`` ``[in, out]`` and
    the input-independent gate ``g`` ``[out]``. Option ``omega``: the log-space clamp (20).
    """

    #: clipped gradients, the gated regulariser and per-seed re-initialisation on a stall
    training = TrainingNeeds(
        grad_clip=0.1, gated_regularizer=True, stall_reinit=True
    )  # fmt: skip

    def __init__(
        self, in_features: int, out_features: int, *, rngs: nnx.Rngs, omega: float = OMEGA
    ):
        super().__init__(in_features, out_features)
        self.omega = omega
        shape = (in_features, out_features)
        self.w_hat_a = nnx.Param(_normal(rngs.params(), shape, W_HAT_MEAN))
        self.m_hat_a = nnx.Param(_normal(rngs.params(), shape, M_HAT_MEAN))
        self.w_hat_m = nnx.Param(_normal(rngs.params(), shape, W_HAT_MEAN))
        self.m_hat_m = nnx.Param(_normal(rngs.params(), shape, M_HAT_MEAN))
        self.g = nnx.Param(_normal(rngs.params(), (out_features,), 0.0))

    def add_weight(self):
        """W_a = tanh(Ŵ_a) ⊙ σ(M̂_a), ``[in, out]``."""
        return jnp.tanh(self.w_hat_a[...]) * jax.nn.sigmoid(self.m_hat_a[...])

    def mul_weight(self):
        """W_m = tanh(Ŵ_m) ⊙ σ(M̂_m), ``[in, out]``."""
        return jnp.tanh(self.w_hat_m[...]) * jax.nn.sigmoid(self.m_hat_m[...])

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        w_a, w_m = self.add_weight(), self.mul_weight()
        a = thin_matmul(x, w_a)
        m, s = multiplicative_path(x, w_m, self.omega)
        g = jax.nn.sigmoid(self.g[...])
        return g * a + (1.0 - g) * m * s

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        del x
        params = (self.w_hat_a, self.m_hat_a, self.w_hat_m, self.m_hat_m, self.g)
        reg = sum(jnp.mean(jnp.maximum(REG_THRESHOLD - tabs(p[...]), 0.0)) for p in params)
        return {"inalu": reg}

    def sparsity_weights(self) -> tuple:
        return (self.add_weight(), self.mul_weight())

    def sparsity_error(self):
        """(error(W_a) + error(W_m)) / 2, the reference's reported value (not the max)."""
        return 0.5 * (sparsity_error(self.add_weight()) + sparsity_error(self.mul_weight()))
