"""The unit registry: one registration point for the library's units and a user's own.

``UNITS`` (a ``dict`` subclass: name → constructor) holds every unit; ``UNITS.spec(name)`` its
defaults (``UnitSpec``): the λ̂ of its R_sparse on the single-module benchmark (per op or one
value), how a model of the arithmetic task is built from it (``ArithmeticModel``), whether a
PyTorch reference fixture exists, and its label in tables. A unit of one's own is registered
with ``register_unit(MyUnit, "my_unit")`` (keywords, or the class attributes of the same names)
and is then usable everywhere a unit name is: the single-module benchmark, the arithmetic task,
recurrent cells, ``launch/compare_models.py`` and ``launch/reproduce.py --extra_models``.

A name ``"package.module:Class"`` needs no registration call: looking it up (``name in UNITS``,
``UNITS[name]``) imports ``package.module`` and registers ``Class`` under that name from its
class attributes. A unit that declares no single-module λ̂ (``None``) is refused when the
benchmark needs one — never trained silently with λ̂ = 0.

>>> class Scaled(NAU):
...     single_module_reg_scale = 0.01
>>> register_unit(Scaled, "scaled")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from collections.abc import Callable, Mapping

#: the single-module benchmark's ops (``nalu_jax.tasks.single_module.SINGLE_MODULE_OPS``)
OPS = ("add", "sub", "mul", "div")

_UNSET = object()
_IMPORTABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclasses.dataclass(frozen=True)
class ArithmeticModel:
    """The arithmetic task's network built from a unit ``u``: ``first_layer → u`` (``"same"``:
    ``u → u``), with the λ̂ schedule of R_sparse (λ̂ from ``reg_start`` to ``reg_end`` steps)."""

    reg_scale: float
    reg_start: float = 0.0
    reg_end: float = 1.0
    first_layer: str = "nau"


@dataclasses.dataclass(frozen=True)
class UnitSpec:
    """What the library knows of a registered unit besides its constructor."""

    name: str
    #: λ̂ of R_sparse on the single-module benchmark: one value for every op, ``{op: value}``,
    #: or None (undeclared: the benchmark refuses the unit). 0: no regulariser schedule.
    single_module_reg_scale: float | Mapping[str, float] | None = None
    #: the arithmetic task's model of this unit; None: built by ``nalu_jax.models.MODELS``
    #: (the library's units) or not offered.
    arithmetic: ArithmeticModel | None = None
    #: a PyTorch reference fixture exists (``tests/parity``); False: "no reference"
    reference: bool = False
    #: the unit's name in tables and plots
    label: str = ""
    #: ops of the single-module benchmark it is meant for (a ``reproduce.py`` extra row)
    ops: tuple = OPS

    def reg_scale_for(self, op: str) -> float:
        """λ̂ on the single-module benchmark for ``op``; ``ValueError`` when undeclared."""
        value = self.single_module_reg_scale
        if isinstance(value, Mapping):
            value = value.get(op)
        if value is None or isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(
                f"model.name {self.name!r} declares no single-module λ̂ for op {op!r} "
                f"(got {self.single_module_reg_scale!r}); set the unit's "
                "single_module_reg_scale (0.0 for no regulariser) or pass train.reg_scale."
            )
        return float(value)


class UnitRegistry(dict):
    """``name → constructor`` with each unit's ``UnitSpec``; ``"module:Class"`` names are
    imported and registered on first lookup."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.specs: dict[str, UnitSpec] = {}
        self.listeners: list[Callable] = []  # (name, spec or None) on (un)registration

    # --- lookups (a "module:Class" name is imported on demand) -------------------------------
    def __contains__(self, name) -> bool:
        if isinstance(name, str) and not dict.__contains__(self, name) and _IMPORTABLE.match(name):
            self._import(name)
        return dict.__contains__(self, name)

    def __missing__(self, name):
        if isinstance(name, str) and _IMPORTABLE.match(name):
            self._import(name)
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def get(self, name, default=None):
        return self[name] if name in self else default

    def spec(self, name: str) -> UnitSpec:
        """The ``UnitSpec`` of ``name`` (a ``ValueError`` listing the units if unknown)."""
        if name not in self:
            raise ValueError(f"unit must be one of {sorted(self)}, got {name!r}.")
        return self.specs.get(name) or UnitSpec(name)

    def _import(self, name: str) -> None:
        module_name, cls_name = name.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise ValueError(
                f"{name!r} names module {module_name!r}, which cannot be imported ({e}); "
                "put its folder on PYTHONPATH or install it."
            ) from None
        cls = getattr(module, cls_name, None)
        if cls is None:
            raise ValueError(f"{name!r} names {cls_name!r}, which module {module_name!r} lacks.")
        if not dict.__contains__(self, name):  # the module may have registered it itself
            register_unit(cls, name, registry=self)

    # --- registration --------------------------------------------------------------------
    def add(self, name: str, build, spec: UnitSpec, *, replace: bool = False) -> None:
        if dict.__contains__(self, name) and not replace:
            if self[name] is build and self.specs.get(name) == spec:
                return  # the same registration again (a module imported twice)
            raise ValueError(f"unit {name!r} is already registered; pass replace=True.")
        dict.__setitem__(self, name, build)
        self.specs[name] = spec
        for listener in self.listeners:
            listener(name, spec)

    def remove(self, name: str) -> None:
        """Forget a registered unit (tests; a unit of the library is never removed)."""
        dict.pop(self, name, None)
        self.specs.pop(name, None)
        for listener in self.listeners:
            listener(name, None)


#: the registry of every unit (filled by ``nalu_jax.units``; re-exported there)
UNITS = UnitRegistry()


def _check_scale(name: str, value) -> None:
    values = value.values() if isinstance(value, Mapping) else [value]
    if isinstance(value, Mapping):
        bad = sorted(set(value) - set(OPS))
        if bad:
            raise ValueError(
                f"single_module_reg_scale of {name!r} names ops {bad}; allowed: {OPS}."
            )
    for v in values:
        ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        if not ok:
            raise ValueError(
                f"single_module_reg_scale of {name!r} must be a number >= 0 or {{op: number}}, "
                f"got {value!r}."
            )


def register_unit(
    unit,
    name: str | None = None,
    *,
    single_module_reg_scale=_UNSET,
    arithmetic=_UNSET,
    reference=_UNSET,
    label=_UNSET,
    ops=_UNSET,
    replace: bool = False,
    registry: UnitRegistry | None = None,
) -> str:
    """Make ``unit`` (a class or constructor ``(in, out, *, rngs, **options) -> module``)
    usable by name everywhere; returns the name.

    Each keyword left out is read from the class attribute of the same name
    (``single_module_reg_scale``, ``arithmetic`` (an ``ArithmeticModel``), ``reference``,
    ``label``, ``ops``); ``name`` defaults to the class's ``name`` attribute or its lowercase
    class name.
    """
    registry = UNITS if registry is None else registry
    pick = lambda given, attr, default: (  # noqa: E731
        getattr(unit, attr, default) if given is _UNSET else given
    )
    name = name or getattr(unit, "name", None) or unit.__name__.lower()
    if not isinstance(name, str) or not name:
        raise ValueError(f"a unit's name must be a non-empty string, got {name!r}.")
    scale = pick(single_module_reg_scale, "single_module_reg_scale", None)
    if scale is not None:
        _check_scale(name, scale)
    model = pick(arithmetic, "arithmetic", None)
    if model is not None and not isinstance(model, ArithmeticModel):
        raise ValueError(f"arithmetic of {name!r} must be an ArithmeticModel, got {model!r}.")
    ops_ = tuple(pick(ops, "ops", OPS))
    if not set(ops_) <= set(OPS):
        raise ValueError(f"ops of {name!r} must be among {OPS}, got {ops_}.")
    spec = UnitSpec(
        name=name,
        single_module_reg_scale=dict(scale) if isinstance(scale, Mapping) else scale,
        arithmetic=model,
        reference=bool(pick(reference, "reference", False)),
        label=str(pick(label, "label", "") or name),
        ops=ops_,
    )
    registry.add(name, unit, spec, replace=replace)
    return name


def import_plugins(modules) -> None:
    """Import each module of ``modules`` (names, or one comma-separated string): a plugin
    registers its units when imported. ``ValueError`` naming a module that cannot be."""
    if isinstance(modules, str):
        modules = modules.split(",")
    for module in filter(None, (m.strip() for m in modules or ())):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ValueError(
                f"--plugin names module {module!r}, which cannot be imported ({e}); put its "
                "folder on PYTHONPATH or install it."
            ) from None
