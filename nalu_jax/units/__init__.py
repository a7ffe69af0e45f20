"""Every neural arithmetic unit as a Flax NNX module, and the registry ``UNITS``.

``UNITS`` is a dict (name → constructor) with each unit's defaults (``UNITS.spec(name)``; see
``nalu_jax.units.registry``). A unit of one's own joins it with ``register_unit`` or by a
``"package.module:Class"`` name (imported on first lookup); docs/own_unit.md.

>>> from flax import nnx
>>> from nalu_jax.units import make_unit
>>> nmu = make_unit("nmu", 2, 1, rngs=nnx.Rngs(0))
"""

from __future__ import annotations

from flax import nnx

from nalu_jax.units._base import (
    ArithmeticUnit,
    TrainingNeeds,
    computed_once,
    nac_radius,
    nau_radius,
    product_over_inputs,
    sparsity_error,
    thin_matmul,
)
from nalu_jax.units.baselines import ACTIVATIONS, Activation, Linear
from nalu_jax.units.inalu import INALU
from nalu_jax.units.nac import NAC, NACMul, NACMulNMU, NACMulSigma
from nalu_jax.units.nalu import GNALU, NALU
from nalu_jax.units.nau_nmu import NAU, NMU, SNMU, GatedNAUNMU
from nalu_jax.units.npu import NPU, RealNPU
from nalu_jax.units.nru import NMRU, NRU
from nalu_jax.units.registry import (
    UNITS,
    ArithmeticModel,
    UnitRegistry,
    UnitSpec,
    import_plugins,
    register_unit,
)


def _activation(name):
    def build(in_features, out_features, *, rngs, **options):
        return Activation(in_features, out_features, activation=name, rngs=rngs, **options)

    build.__name__ = f"Activation[{name}]"
    return build


#: the library's units: name -> constructor ``(in_features, out_features, *, rngs, **options)``
_LIBRARY_UNITS = {
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

#: λ̂ of a single unit's R_sparse on the single-module benchmark (0.01 for NAU-type, 10 for
#: NMU-type regularisers); every other unit of the library declares 0 (no schedule).
SINGLE_UNIT_REG_SCALE = {
    "nau": 0.01,
    "nru": 0.01,
    "nmu": 10.0,
    "snmu": 10.0,
    "nmru": 10.0,
    "nac_mul_nmu": 10.0,
    "gated_nau_nmu": 10.0,
}

for _name, _build in _LIBRARY_UNITS.items():  # arithmetic-task models: nalu_jax.models.MODELS
    register_unit(
        _build,
        _name,
        single_module_reg_scale=SINGLE_UNIT_REG_SCALE.get(_name, 0.0),
        arithmetic=None,
        reference=True,  # tests/parity holds a fixture of every unit of the library
        label=_name,
        ops=("add", "sub", "mul", "div"),
    )


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
    "ArithmeticModel",
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
    "SINGLE_UNIT_REG_SCALE",
    "SNMU",
    "TrainingNeeds",
    "UNITS",
    "UnitRegistry",
    "UnitSpec",
    "computed_once",
    "import_plugins",
    "make_unit",
    "nac_radius",
    "nau_radius",
    "product_over_inputs",
    "register_unit",
    "sparsity_error",
    "thin_matmul",
    "training_needs",
]
