"""Every neural arithmetic unit as a Flax NNX module, and the plain-dict registry ``UNITS``.

>>> from flax import nnx
>>> from nalu_jax.units import make_unit
>>> nmu = make_unit("nmu", 2, 1, rngs=nnx.Rngs(0))
"""

from __future__ import annotations

from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    TrainingNeeds,
    nac_radius,
    nau_radius,
    sparsity_error,
)
from nalu_jax.units.baselines import ACTIVATIONS, Activation, Linear
from nalu_jax.units.inalu import INALU
from nalu_jax.units.nac import NAC, NACMul, NACMulNMU, NACMulSigma
from nalu_jax.units.nalu import GNALU, NALU
from nalu_jax.units.nau_nmu import NAU, NMU, SNMU, GatedNAUNMU
from nalu_jax.units.npu import NPU, RealNPU
from nalu_jax.units.nru import NMRU, NRU


def _activation(name):
    def build(in_features, out_features, *, rngs, **options):
        return Activation(in_features, out_features, activation=name, rngs=rngs, **options)

    build.__name__ = f"Activation[{name}]"
    return build


#: name -> constructor ``(in_features, out_features, *, rngs, **options) -> unit``
UNITS: dict = {
    "linear": Linear,
    **{name: _activation(name) for name in ACTIVATIONS},
    "nac_add": NAC,
    "nac_mul": NACMul,
    "nac_mul_sigma": NACMulSigma,
    "nac_mul_nmu": NACMulNMU,
    "nalu": NALU,
    "g_nalu": GNALU,
    "inalu": INALU,
    "nau": NAU,
    "nmu": NMU,
    "gated_nau_nmu": GatedNAUNMU,
    "snmu": SNMU,
    "npu": NPU,
    "real_npu": RealNPU,
    "nru": NRU,
    "nmru": NMRU,
}


def make_unit(name: str, in_features: int, out_features: int, *, rngs: nnx.Rngs, **options):
    """Build the registered unit ``name``; unknown names raise a ``ValueError`` listing them."""
    if name not in UNITS:
        raise ValueError(f"unit must be one of {sorted(UNITS)}, got {name!r}.")
    return UNITS[name](in_features, out_features, rngs=rngs, **options)


def training_needs(names) -> TrainingNeeds:
    """The combined ``TrainingNeeds`` of the units ``names`` (activations need nothing)."""
    needs = TrainingNeeds()
    for name in names:
        needs = needs.merge(getattr(UNITS.get(name), "training", TrainingNeeds()))
    return needs


__all__ = [
    "ACTIVATIONS",
    "Activation",
    "ArithmeticUnit",
    "GNALU",
    "GatedNAUNMU",
    "INALU",
    "Linear",
    "NAC",
    "NACMul",
    "NACMulNMU",
    "NACMulSigma",
    "NALU",
    "NAU",
    "NMRU",
    "NMU",
    "NPU",
    "NRU",
    "RealNPU",
    "SNMU",
    "TrainingNeeds",
    "UNITS",
    "make_unit",
    "nac_radius",
    "nau_radius",
    "sparsity_error",
    "training_needs",
]
