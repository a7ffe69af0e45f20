"""A unit of one's own: the "scaled NAU", y = s · x · clamp(W, −1, 1), s a learned scalar.

Registered from outside the library, by naming it on the command line
(``--config.model.name=scaled_nau:ScaledNAU`` with this folder on ``PYTHONPATH``) or by importing
this module (``--plugin=scaled_nau``), which calls ``register_unit`` below. docs/own_unit.md.
"""

import jax.numpy as jnp
from flax import nnx

from nalu_jax.units import ArithmeticModel, ArithmeticUnit, nau_radius, register_unit
from nalu_jax.units.nau_nmu import nau_sparse, nau_z
from nalu_jax.units.precision import matmul


class ScaledNAU(ArithmeticUnit):
    """y = s · x · clamp(W, −1, 1); W ∈ [−1, 1] by projection, s starts at 1."""

    single_module_reg_scale = 0.01  # λ̂ of R_sparse on the single-module benchmark (as NAU's)
    arithmetic = ArithmeticModel(reg_scale=0.01, reg_start=5e3, reg_end=5e4)  # NAU → this unit
    label = "Scaled NAU"
    ops = ("add", "sub")  # the single-module ops it is meant for (a reproduce.py extra row)

    def __init__(self, in_features: int, out_features: int, *, rngs: nnx.Rngs):
        super().__init__(in_features, out_features)
        r = nau_radius(in_features, out_features)
        shape = (in_features, out_features)
        self.w = nnx.Param(nnx.initializers.uniform(2 * r)(rngs.params(), shape) - r)
        self.s = nnx.Param(jnp.ones(()))

    def __call__(self, x, *, training: bool = False, key=None):
        return self.s[...] * matmul(x, jnp.clip(self.w[...], -1.0, 1.0))  # x @ W

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        return {"sparse": nau_sparse(self.w[...]), "z": nau_z(self.w[...], x)}

    def project(self) -> None:
        self.w[...] = jnp.clip(self.w[...], -1.0, 1.0)

    def sparsity_weights(self) -> tuple:
        return (self.w[...],)


register_unit(ScaledNAU, "scaled_nau")  # for --plugin=scaled_nau; a "module:Class" name needs none
