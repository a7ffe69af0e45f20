"""The neural power unit (NPU) and its real-valued variant (Heim, van Gerven & Reinhold,
"Neural Power Units", NeurIPS 2020).

With ĝ = clamp(g, 0, 1), the relevance-gated input magnitude r = ĝ ⊙ (|x| + ε) + (1 − ĝ)
(ε = float32 machine eps) and the phase k = ĝ ⊙ π·𝟙[x < 0], the NPU raises the complex
number x = r·e^{ik} to the complex weight W_re + i·W_im and keeps the real part:

    NPU:      y = exp(log r @ W_re − k @ W_im) ⊙ cos(k @ W_re + log r @ W_im)
    RealNPU:  y = exp(log r @ W_re) ⊙ cos(k @ W_re)

The cosine supplies the sign: a negative input with weight 1 contributes cos(π) = −1.
Regulariser: ``l1`` = Σ|θ| over all parameters (the loss scales it by β(t)).

Parity with ``NPULayer``/``RealNPULayer`` of ``bmistry4/nalm-benchmark``: the gate clamp has
``torch.clamp``'s gradient (1 on the bound), and |·| has gradient 0 at 0 in the input
magnitude and in the L1 norm, so W_im, which starts at 0, stays there while nothing else moves
it. Deliberate difference: the reference reports no sparsity error for the NPU; here it is
W_re's (W_im and the gate are not judged), so the NPU has a value in the tables.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    F32_EPS,
    ArithmeticUnit,
    TrainingNeeds,
    check_choice,
    clamp,
    clamp_param,
    cos,
    float_dtype,
    glorot_uniform,
    nau_radius,
    tabs,
    thin_matmul,
    uniform,
)


def _npu_polar(x, g):
    """log r and k, both ``[..., in]``, for ``x`` ``[..., in]`` and the raw gate ``g`` ``[in]``."""
    gate = clamp(g, 0.0, 1.0)
    # r ≥ min(ε, 1) > 0 for every x, so the log (and its gradient) is always finite.
    r = gate * (tabs(x) + F32_EPS) + (1.0 - gate)
    k = gate * jnp.where(x < 0, math.pi, 0.0)
    return jnp.log(r), k


def _init_w_re(key, in_features: int, out_features: int, init: str):
    check_choice("init", init, {"glorot", "nau"})
    shape = (in_features, out_features)
    if init == "glorot":
        return glorot_uniform(key, shape)
    r = nau_radius(in_features, out_features)
    return uniform(key, shape, -r, r)


class RealNPU(ArithmeticUnit):
    """Real NPU, params ``w_re`` ``[in, out]`` and the relevance gate ``g`` ``[in]``.

    Options: ``init`` ``"glorot"`` (Glorot-uniform W_re) or ``"nau"`` (U[±nau_radius]);
    ``project``: clamp W_re to [−1, 1] and g to [0, 1] after each update (default off).
    """

    multiplicative = True

    #: lr 5e-3 by default and the L1 penalty on the β(t) schedule (Heim et al. 2020)
    training = TrainingNeeds(lr=5e-3, l1_beta=True)

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        rngs: nnx.Rngs,
        init: str = "glorot",
        project: bool = False,
    ):
        super().__init__(in_features, out_features)
        self.w_re = nnx.Param(_init_w_re(rngs.params(), in_features, out_features, init))
        self.g = nnx.Param(jnp.full((in_features,), 0.5, float_dtype()))
        self.use_projection = project

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        log_r, k = _npu_polar(x, self.g[...])
        w_re = self.w_re[...]
        return jnp.exp(thin_matmul(log_r, w_re)) * cos(thin_matmul(k, w_re))

    def _params(self) -> tuple:
        return (self.w_re[...], self.g[...])

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        del x
        return {"l1": sum(jnp.sum(tabs(p)) for p in self._params())}

    def project(self) -> None:
        if self.use_projection:
            clamp_param(self.w_re, -1.0, 1.0)
            clamp_param(self.g, 0.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.w_re[...],)


class NPU(RealNPU):
    """Complex-weight NPU, params ``w_re``, ``w_im`` ``[in, out]`` and gate ``g`` ``[in]``.

    W_im starts at 0, so at initialisation the NPU equals the RealNPU with the same W_re.
    Options as :class:`RealNPU`; ``project`` also clamps W_im to [−1, 1].
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        rngs: nnx.Rngs,
        init: str = "glorot",
        project: bool = False,
    ):
        super().__init__(in_features, out_features, rngs=rngs, init=init, project=project)
        self.w_im = nnx.Param(jnp.zeros((in_features, out_features), float_dtype()))

    def __call__(self, x, *, training: bool = False, key=None):
        """``x`` ``[..., in]`` -> ``[..., out]``."""
        log_r, k = _npu_polar(x, self.g[...])
        w_re, w_im = self.w_re[...], self.w_im[...]
        mm = thin_matmul
        return jnp.exp(mm(log_r, w_re) - mm(k, w_im)) * cos(mm(k, w_re) + mm(log_r, w_im))

    def _params(self) -> tuple:
        return (self.w_re[...], self.w_im[...], self.g[...])

    def project(self) -> None:
        super().project()
        if self.use_projection:
            clamp_param(self.w_im, -1.0, 1.0)
