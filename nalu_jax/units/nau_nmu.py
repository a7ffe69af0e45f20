"""NAU and NMU (Madsen & Johansen, "Neural Arithmetic Units", ICLR 2020), the gated
NAU/NMU mixture, and the stochastic NMU (sNMU, Mistry et al. 2021).

NAU:  y = x · clamp(W, −1, 1),                 W ∈ [−1, 1] by projection.
NMU:  y_j = ∏_i (W_ij x_i + 1 − W_ij),         W ∈ [0, 1] by projection.
sNMU: y = NMU(x ⊙ n) / NMU(n), n ~ U[1, 5] in training; plain NMU at evaluation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    TrainingNeeds,
    check_choice,
    clamp_param,
    glorot_uniform,
    nau_radius,
    thin_matmul,
    uniform,
)


def _x_mean(x):
    # x̄: the feature mean of the current batch, over every leading (batch) axis.
    return jnp.mean(x.reshape(-1, x.shape[-1]), axis=0)


class NAU(ArithmeticUnit):
    """Neural addition unit, param ``w`` ``[in, out]``.

    Options: none. Regularisers: ``sparse`` = mean(min(|W|, 1 − |W|)),
    ``z`` = mean_ij((1 − |W_ij|)·x̄_i²).
    """

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        r = nau_radius(in_features, out_features)
        self.w = nnx.Param(uniform(rngs.params(), (in_features, out_features), -r, r))

    def weight(self):
        return jnp.clip(self.w[...], -1.0, 1.0)

    def __call__(self, x, *, training: bool = False, key=None):
        return thin_matmul(x, self.weight())

    def regularizers(self, x) -> dict:
        a = jnp.abs(self.weight())
        xm = _x_mean(x)
        return {
            "sparse": jnp.mean(jnp.minimum(a, 1.0 - a)),
            "z": jnp.mean((1.0 - a) * (0.0 - xm)[:, None] ** 2),
        }

    def project(self) -> None:
        clamp_param(self.w, -1.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


def nmu_product(x, w):
    """∏_i (W_ij x_i + 1 − W_ij) for ``x`` ``[..., in]`` and ``w`` ``[in, out]``."""
    return jnp.prod(x[..., :, None] * w + 1.0 - w, axis=-2)


class NMU(ArithmeticUnit):
    """Neural multiplication unit, param ``w`` ``[in, out]``.

    Options: ``init`` ``"uniform"`` (U[0.25, 0.75], the reference code) or ``"variance"``
    (mean ½, variance ¼ — a N(½, ¼) draw clipped to [0, 1], as the NMU paper recommends);
    ``normalized``: c = std(x), one scalar over every entry of the batch,
    y = NMU(x / c)·c^{Σ_i W_ij}.
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
    ):
        super().__init__(in_features, out_features)
        check_choice("init", init, {"uniform", "variance"})
        shape = (in_features, out_features)
        if init == "uniform":
            w = uniform(rngs.params(), shape, 0.25, 0.75)
        else:
            w = jnp.clip(0.5 + 0.5 * jax.random.normal(rngs.params(), shape), 0.0, 1.0)
        self.w = nnx.Param(w)
        self.normalized = normalized

    def weight(self):
        return jnp.clip(self.w[...], 0.0, 1.0)

    def __call__(self, x, *, training: bool = False, key=None):
        w = self.weight()
        if not self.normalized:
            return nmu_product(x, w)
        # One scalar c over the whole batch (as the reference, torch.std(x)); the guard keeps a
        # constant batch finite.
        c = jnp.std(x) + 1e-7
        return nmu_product(x / c, w) * c ** jnp.sum(w, axis=0)

    def regularizers(self, x) -> dict:
        w = self.weight()
        xm = _x_mean(x)
        return {
            "sparse": jnp.mean(jnp.minimum(w, 1.0 - w)),
            "z": jnp.mean((1.0 - w) * (1.0 - xm)[:, None] ** 2),
        }

    def project(self) -> None:
        clamp_param(self.w, 0.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.weight(),)


class SNMU(NMU):
    """Stochastic NMU: in training y = NMU(x ⊙ n)/NMU(n), n ~ U[1, 5] with x's shape.

    Training needs ``key``; evaluation (``training=False``) is the plain NMU.
    """

    training = TrainingNeeds(noise=True)  # a key per training step for its noise

    def __call__(self, x, *, training: bool = False, key=None):
        if not training:
            return super().__call__(x)
        if key is None:
            raise ValueError("key must be given to SNMU when training=True (it draws noise).")
        n = jax.random.uniform(key, x.shape, x.dtype, 1.0, 5.0)
        return super().__call__(x * n) / super().__call__(n)


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

    def regularizers(self, x) -> dict:
        ra, rm = self.nau.regularizers(x), self.nmu.regularizers(x)
        return {k: ra[k] + rm[k] for k in ra}

    def project(self) -> None:
        self.nau.project()
        self.nmu.project()

    def sparsity_weights(self) -> tuple:
        return self.nau.sparsity_weights() + self.nmu.sparsity_weights()
