"""NAU and NMU (Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020), the gated
NAU/NMU mixture, and the stochastic NMU (sNMU, Mistry et al. 2021).

NAU:  y = x · clamp(W, −1, 1),                 W ∈ [−1, 1] by projection.
NMU:  y_j = ∏_i (W_ij x_i + 1 − W_ij),         W ∈ [0, 1] by projection.
sNMU: y = NMU(x ⊙ n) / NMU(n), n ~ U[1, 5] in training; plain NMU at evaluation.

Parity with the reference (``AndreasMadsen/stable-nalu``, ``--oob-mode clip``; sNMU from
``bmistry4/nalm-division``), checked by ``tests/test_units_parity.py``: the NAU clamps with
``torch.clamp``'s gradient (1 on the bound, see ``_base.clamp``); the NMU forward uses W
unclamped, as the reference does in clip mode (the projection keeps W in [0, 1]); R_sparse is
taken on the raw W with |·|'s gradient 0 at 0, so a weight on 0 or ±1 is not pushed by it.

``clamp_w=False`` (NAU and NMU) is the reference's ``--oob-mode regualized
--regualizer-oob 0``, the "no W-clamp" rows of the ICLR 2020 ablation (Appendix C): no
projection after the step, so the stored W may leave the range; the forward pass and the
sparsity error use W clamped to the range (``torch.clamp``'s gradient); the regularisers
stay on the raw W; the reference's out-of-bound regulariser has weight 0 there and is not
implemented.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    TrainingNeeds,
    check_choice,
    clamp,
    clamp_param,
    float_dtype,
    glorot_uniform,
    nau_radius,
    product_over_inputs,
    tabs,
    thin_matmul,
    uniform,
)


def _x_mean(x):
    # x̄: the feature mean of the current batch, over every leading (batch) axis.
    return jnp.mean(x.reshape(-1, x.shape[-1]), axis=0)


def nau_sparse(w):
    """NAU-type R_sparse, mean(min(|W|, |1 − |W||)), with gradient 0 at W ∈ {0, ±1}."""
    a = tabs(w)
    return jnp.mean(jnp.minimum(a, tabs(1.0 - a)))


def nau_z(w, x):
    """NAU-type R_z, mean_ij((1 − |W_ij|)·(0 − x̄_i)²)."""
    return jnp.mean((1.0 - tabs(w)) * (0.0 - _x_mean(x))[:, None] ** 2)


def nmu_sparse(w):
    """NMU-type R_sparse, mean(min(|W|, |1 − W|)), with gradient 0 at W ∈ {0, 1}."""
    return jnp.mean(jnp.minimum(tabs(w), tabs(1.0 - w)))


def nmu_z(w, x):
    """NMU-type R_z, mean_ij((1 − W_ij)·(1 − x̄_i)²)."""
    return jnp.mean((1.0 - w) * (1.0 - _x_mean(x))[:, None] ** 2)


class NAU(ArithmeticUnit):
    """Neural addition unit, param ``w`` ``[in, out]``.

    Options: ``clamp_w`` (default True): project W to [−1, 1] after each step; False is the
    reference's ``--oob-mode regualized`` (no projection; the forward clamps W either way).
    Regularisers (on the raw W): ``sparse`` = mean(min(|W|, |1 − |W||)),
    ``z`` = mean_ij((1 − |W_ij|)·x̄_i²).
    """

    def __init__(
        self, in_features: int, out_features: int, *, rngs: nnx.Rngs, clamp_w: bool = True
    ):
        super().__init__(in_features, out_features)
        check_choice("clamp_w", clamp_w, {False, True})
        r = nau_radius(in_features, out_features)
        self.w = nnx.Param(uniform(rngs.params(), (in_features, out_features), -r, r))
        self.clamp_w = bool(clamp_w)

    def weight(self):
        return clamp(self.w[...], -1.0, 1.0)

    def __call__(self, x, *, training: bool = False, key=None):
        return thin_matmul(x, self.weight())

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        w = self.w[...]
        return {"sparse": nau_sparse(w), "z": nau_z(w, x)}

    def project(self) -> None:
        if self.clamp_w:
            clamp_param(self.w, -1.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


def nmu_terms(x, w):
    """The factors W_ij x_i + 1 − W_ij ``[..., in, out]`` of the NMU's product."""
    return x[..., :, None] * w + 1.0 - w


def nmu_product(x, w):
    """∏_i (W_ij x_i + 1 − W_ij) for ``x`` ``[..., in]`` and ``w`` ``[in, out]`` (the product's
    gradient in closed form: ``_base.product_over_inputs``)."""
    return product_over_inputs(nmu_terms(x, w))


class NMU(ArithmeticUnit):
    """Neural multiplication unit, param ``w`` ``[in, out]``.

    Options: ``init`` ``"uniform"`` (U[0.25, 0.75], the reference code) or ``"variance"``
    (mean ½, variance ¼ — a N(½, ¼) draw clipped to [0, 1], as the NMU paper recommends);
    ``normalized``: c = std(x) (unbiased, as ``torch.std``), one scalar over every entry of
    the batch, y = NMU(x / c)·c^{Σ_i W_ij}.

    ``clamp_w`` (default True): project W to [0, 1] after each step, the forward using W as
    stored (the reference's ``--oob-mode clip``: only the projection bounds it). False: the
    reference's ``--oob-mode regualized --regualizer-oob 0`` ("NMU, no W-clamp", ICLR 2020
    Appendix C ablation): no projection, the forward (and the sparsity error) use
    clamp(W, 0, 1) with ``torch.clamp``'s gradient.
    Regularisers (on the raw W): ``sparse`` = mean(min(|W|, |1 − W|)),
    ``z`` = mean_ij((1 − W_ij)·(1 − x̄_i)²).
    """

    multiplicative = True

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        rngs: nnx.Rngs,
        init: str = "uniform",
        normalized: bool = False,
        clamp_w: bool = True,
    ):
        super().__init__(in_features, out_features)
        check_choice("init", init, {"uniform", "variance"})
        check_choice("clamp_w", clamp_w, {False, True})
        shape = (in_features, out_features)
        if init == "uniform":
            w = uniform(rngs.params(), shape, 0.25, 0.75)
        else:
            w = jax.random.normal(rngs.params(), shape, float_dtype())
            w = jnp.clip(0.5 + 0.5 * w, 0.0, 1.0)
        self.w = nnx.Param(w)
        self.normalized = normalized
        self.clamp_w = bool(clamp_w)

    def weight(self):
        return self.w[...] if self.clamp_w else clamp(self.w[...], 0.0, 1.0)

    def __call__(self, x, *, training: bool = False, key=None):
        w = self.weight()
        if not self.normalized:
            return nmu_product(x, w)
        # One scalar c over the whole batch, as the reference's torch.std(x) (unbiased, no ε:
        # a constant batch gives NaN there and here).
        c = jnp.std(x, ddof=1)
        return nmu_product(x / c, w) * c ** jnp.sum(w, axis=0)

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        w = self.w[...]
        return {"sparse": nmu_sparse(w), "z": nmu_z(w, x)}

    def project(self) -> None:
        if self.clamp_w:
            clamp_param(self.w, 0.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


class SNMU(NMU):
    """Stochastic NMU: in training y = NMU(x ⊙ n)/NMU(n), n ~ U[1, 5] with x's shape.

    Training needs ``key``; evaluation (``training=False``) is the plain NMU. In training R_z
    is taken on the noised input x ⊙ n (the same n, drawn from the same ``key``), as the
    reference does.
    """

    training = TrainingNeeds(noise=True)  # a key per training step for its noise

    def noise(self, x, key):
        """n ~ U[1, 5], ``x``'s shape and dtype, drawn from ``key``; or ``key`` is that noise
        already drawn (``draw_noise``: the arithmetic task draws a training chunk's noise
        ahead, the same bits, where XLA:CPU would re-derive the draw in every fused kernel
        that reads it)."""
        if key is None:
            raise ValueError("key must be given to SNMU when training=True (it draws noise).")
        if jnp.issubdtype(key.dtype, jnp.floating):  # drawn ahead
            return key
        return self.draw_noise(key, x.shape, x.dtype)

    @staticmethod
    def draw_noise(key, shape, dtype):
        """The noise of an input of ``shape`` and ``dtype``: n ~ U[1, 5]."""
        return jax.random.uniform(key, shape, dtype, 1.0, 5.0)

    def noised(self, x, n):
        """NMU(x ⊙ n) / NMU(n) for a given noise ``n`` (``x``'s shape).

        Unnormalised, the quotient of the two products is taken as one product of quotients,
        ∏_i (W_ij x_i n_i + 1 − W_ij) / (W_ij n_i + 1 − W_ij): the same function (each
        denominator ≥ 1 for W in [0, 1] and n ≥ 1), one product and its closed-form gradient
        instead of two: 1.4× the seed-steps/s on the single-module task (WORKSPACE at
        bcf7708, "The sNMU as one product of quotients").
        """
        if self.normalized:  # each NMU call scales by its own input's std
            return super().__call__(x * n) / super().__call__(n)
        w = self.weight()
        return product_over_inputs(nmu_terms(x * n, w) / nmu_terms(n, w))

    def __call__(self, x, *, training: bool = False, key=None):
        if not training:
            return super().__call__(x)
        return self.noised(x, self.noise(x, key))

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        if training and key is not None:
            x = x * self.noise(x, key)
        return super().regularizers(x)


class GatedNAUNMU(ArithmeticUnit):
    """y = g ⊙ NAU(x) + (1 − g) ⊙ NMU(x), g = σ(xG); separate weights.

    Params ``nau.w``, ``nmu.w`` and gate ``g`` ``[in, out]`` (Glorot-uniform, as the NALU gate).
    Regularisers: the NAU's and NMU's, summed per name.
    """

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        self.nau = NAU(in_features, out_features, rngs=rngs)
        self.nmu = NMU(in_features, out_features, rngs=rngs)
        self.g = nnx.Param(glorot_uniform(rngs.params(), (in_features, out_features)))

    def gate(self, x):
        return jax.nn.sigmoid(thin_matmul(x, self.g[...]))

    def __call__(self, x, *, training: bool = False, key=None):
        g = self.gate(x)
        return g * self.nau(x) + (1.0 - g) * self.nmu(x)

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        ra, rm = self.nau.regularizers(x), self.nmu.regularizers(x)
        return {k: ra[k] + rm[k] for k in ra}

    def project(self) -> None:
        self.nau.project()
        self.nmu.project()

    def sparsity_weights(self) -> tuple:
        return self.nau.sparsity_weights() + self.nmu.sparsity_weights()
