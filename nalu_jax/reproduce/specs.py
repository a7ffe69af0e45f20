"""The published tables this library reproduces: their cells and each cell's config.

A table is models × ops (the arithmetic task, one cell per model and op) or models × ranges (the
single-module benchmark: one cell per model and op whose nine ranges are one program, a
``sweep.range_index``). A cell's config is the published protocol (seeds, iterations, the
model's λ̂ schedule from ``nalu_jax.models.MODELS``) unless ``--seeds``/``--steps`` reduce it.
A variant the library lacks is a cell with ``unavailable`` set: listed in the table, never run
or faked (no table has one today).

A table of an experiment of one's own (``kind="experiment"``) builds each cell's config with
its ``config(cell)`` and is added with ``register_table`` from a module of one's own, as a unit
or an experiment is (docs/own_experiment.md, "A table of your own").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from nalu_jax.config import ConfigError, arithmetic_config
from nalu_jax.tasks.single_module import MODELS_BY_OP, RANGE_PAIRS

#: our op names → the papers' symbols
OP_LABELS = {"mul": "×", "div": "÷", "add": "+", "sub": "−", "root": "√z", "squared": "z²"}


@dataclasses.dataclass(frozen=True)
class Variant:
    """A model of a table: our model name and the config fields that make the variant."""

    key: str  # the table's name for it (a cell's model column)
    label: str  # the paper's name
    model: str  # nalu_jax.models.MODELS (arithmetic) or nalu_jax.units.UNITS (single-module)
    overrides: tuple = ()  # (("train.reg_scale", 0.0), ...) dotted config fields
    unavailable: str = ""  # why the library cannot run it ("" when it can)


@dataclasses.dataclass(frozen=True)
class Axis:
    """A figure's x axis (ICLR 2020 App. C's dataset-parameter figures): the value of one config
    field per point. ``sweep``: the points are one program, ``config.sweep[sweep]`` (traced;
    ``range_pair`` sets both ranges), else one program (one cell) per point. ``steps``: the
    published iterations per point where they differ (the input-size figure)."""

    name: str  # e.g. "hidden_size" (the cell key's suffix: "h4")
    label: str  # the x axis' label
    field: str  # dotted config field a point sets (sweep: the swept field or pair)
    points: tuple
    keys: tuple  # per point, the cell key's suffix (per-point figures)
    sweep: str = ""
    steps: tuple = ()


@dataclasses.dataclass(frozen=True)
class TableSpec:
    name: str
    kind: str  # "arithmetic", "single_module" or "experiment" (a registered table's)
    ops: tuple
    variants: tuple  # Variant, in table order
    num_seeds: int
    num_steps: int
    source: str  # citation of the published figures (or of the protocol)
    published: str | None  # file in nalu_jax/reproduce/published/, or None (no figures)
    models_by_op: dict | None = None  # op -> variant keys (single-module), else every model
    axis: Axis | None = None  # a figure's x axis (points), or None (a table)
    first_seed: int = 0  # the published runs' first seed (the λ̂ figure's are 25–49)
    #: kind "experiment": ``config(cell)`` → the cell's ConfigDict, its experiment named by
    #: ``config.experiment`` (the table's seeds, steps and the variant's overrides set on it)
    config: Callable | None = None

    def variant(self, key: str) -> Variant:
        for v in self.variants:
            if v.key == key:
                return v
        raise ConfigError(
            f"--models names {key!r}, not a model of table {self.name!r}; "
            f"allowed: {[v.key for v in self.variants]}."
        )


@dataclasses.dataclass(frozen=True)
class Cell:
    table: str
    op: str
    variant: Variant
    point: str = ""  # a per-point figure's point (its key suffix, e.g. "h4"), else ""

    @property
    def key(self) -> str:
        """The cell's directory name under ``WORKDIR/cells``."""
        return f"{self.op}-{self.variant.key}" + (f"-{self.point}" if self.point else "")


def _v(key, label, model=None, **kw):
    return Variant(key, label, model or key, **kw)


# "no W-clamp" (ICLR 2020, Appendix C ablation) is the reference's ``--oob-mode regualized
# --regualizer-oob 0`` (stable-nalu lfs_batch_jobs/function_task_static_ablation.sh at
# commit 5f0d4e4; export/function_task_static_ablation.r names a row "no W-clamp" where
# regualizer.oob == 0). The flag reaches both layers (the NAU and the NMU): neither projects
# W, both clamp it in the forward pass.
_NO_CLAMP = (("model.layer1_options.clamp_w", False), ("model.layer2_options.clamp_w", False))
_NO_RSPARSE = (("train.reg_scale", 0.0),)
_ICLR = "Madsen & Johansen, Neural Arithmetic Units, ICLR 2020 (arXiv:2001.05016)"
# The gated NAU/NMU of App. C's all-models table and of the dataset-parameter figures is the gated
# unit in both layers: stable-nalu's function_task_static.sh and function_task_static_mul_*.sh
# (b3296ac) run ``--layer-type ReRegualizedLinearNALU --nalu-two-nac --nalu-mul mnac`` with no
# ``--first-layer``, and SimpleFunctionStaticNetwork then stacks that unit twice (0% on every op
# in the all-models table). The gating table's runs (function_task_static_nalu.sh) put it over
# an NAU (``--first-layer ReRegualizedLinearNAC``, 62% on ×): the model's default.
GATED_BOTH_LAYERS = (("model.first_layer", "same"),)
_ARITH_MODELS = (
    _v("nac_mul_nmu", "NAC•,NMU"),
    _v("nac_mul_sigma", "NAC•,σ"),
    _v("nac_mul", "NAC•"),
    _v("nac_add", "NAC₊"),
    _v("gated_nau_nmu", "Gated NAU/NMU", overrides=GATED_BOTH_LAYERS),
    _v("linear", "Linear"),
    _v("nalu", "NALU"),
    _v("nau", "NAU"),
    _v("nmu", "NMU"),
    _v("relu", "ReLU"),
    _v("relu6", "ReLU6"),
)
_NALU_OVER_NAC = (("model.first_layer", "nac_add"),)
_PRIMER_UNITS = {
    "nac_mul": "NAC•",
    "nac_add": "NAC₊",
    "nalu": "NALU",
    "nmu": "NMU",
    "nau": "NAU",
    "npu": "NPU",
    "real_npu": "RealNPU",
    "inalu": "iNALU",
    "g_nalu": "G-NALU",
    "nru": "NRU",
    "nmru": "NMRU",
    "snmu": "sNMU",
}

# The Primer's redundant-input runs (its figures of iNALU at input size 10 and of the NAU at
# 10 and 100): nalm-benchmark lfs_batch_jobs/single_layer_task/benchmarking/
# single_layer_benchmark.sh runs sltr-in10/add/iNALU at 5·10⁴ iterations, sltr-in10/sub/NAU and
# sltr-in100/add/NAU at 10⁵ iterations with the regulariser ramp 50,000 → 75,000; the Primer's
# figures of the NAU at 10 and 100 inputs show + and − both, so both ops run for the NAU.
_NAU_LONG = (("num_steps", 100_000), ("train.reg_start", 50_000.0), ("train.reg_end", 75_000.0))
_PRIMER_SIZES = (
    _v("inalu_in10", "iNALU, 10 inputs", "inalu", overrides=(("task.input_size", 10),)),
    _v("nau_in10", "NAU, 10 inputs", "nau", overrides=(("task.input_size", 10), *_NAU_LONG)),
    _v("nau_in100", "NAU, 100 inputs", "nau", overrides=(("task.input_size", 100), *_NAU_LONG)),
)
_PRIMER = (
    "Mistry, Farrahi & Hare, A Primer for Neural Arithmetic Logic Modules, JMLR 2022 "
    "(arXiv:2101.09530)"
)

#: ICLR 2020 Table 1's cells of ``iclr2020-arithmetic`` (§4.1): × NAC•, NALU, NMU; + and −
#: NAC₊, Linear, NALU, NAU. The table's other cells are App. C's all-models table.
TABLE1_CELLS = ("mul-nac_mul", "mul-nalu", "mul-nmu",
                "add-nac_add", "add-linear", "add-nalu", "add-nau",
                "sub-nac_add", "sub-linear", "sub-nalu", "sub-nau")  # fmt: skip

TABLES: dict[str, TableSpec] = {
    "iclr2020-arithmetic": TableSpec(
        "iclr2020-arithmetic", "arithmetic", ("mul", "div", "add", "sub", "root", "squared"),
        _ARITH_MODELS, 100, 5_000_000,
        f"{_ICLR}, Table 1 / Appendix C (all models × ops)", "iclr2020-arithmetic.csv",
    ),
    "iclr2020-gate": TableSpec(
        "iclr2020-gate", "arithmetic", ("mul", "add"),
        (
            _v("nalu_shared", "NALU (shared)", "nalu", overrides=_NALU_OVER_NAC),
            _v("nalu_separate", "NALU (separate)", "nalu", overrides=_NALU_OVER_NAC + (
                ("model.layer2_options.separate_weights", True),)),
            _v("gated_nau_nmu", "Gated NAU/NMU"),
        ),
        100, 5_000_000, f"{_ICLR}, Appendix C (gating convergence)", "iclr2020-gate.csv",
    ),
    "iclr2020-ablation": TableSpec(
        "iclr2020-ablation", "arithmetic", ("mul",),
        (
            _v("nac_mul_sigma", "NAC•,σ"),
            _v("nac_mul", "NAC•"),
            _v("nmu", "NMU"),
            _v("nmu_no_rsparse", "NMU, no R_sparse", "nmu", overrides=_NO_RSPARSE),
            _v("nmu_no_rsparse_no_clamp", "NMU, no R_sparse, no W-clamp", "nmu",
               overrides=_NO_RSPARSE + _NO_CLAMP),
            _v("nmu_no_clamp", "NMU, no W-clamp", "nmu", overrides=_NO_CLAMP),
        ),
        100, 5_000_000, f"{_ICLR}, Appendix C (ablation)", "iclr2020-ablation.csv",
    ),
    "primer-single-module": TableSpec(
        "primer-single-module", "single_module", ("mul", "div", "add", "sub"),
        tuple(_v(k, label) for k, label in _PRIMER_UNITS.items()),
        25, 50_000,
        f"{_PRIMER}, single-module benchmark (no numeric table published)",
        None,
        models_by_op=MODELS_BY_OP,
    ),
    "primer-single-module-sizes": TableSpec(
        "primer-single-module-sizes", "single_module", ("add", "sub"), _PRIMER_SIZES, 25, 50_000,
        f"{_PRIMER}, single-module benchmark at input sizes 10 and 100 (plots only)", None,
        models_by_op={"add": ("inalu_in10", "nau_in10", "nau_in100"),
                      "sub": ("nau_in10", "nau_in100")},
    ),
}  # fmt: skip


#: the names of the tables the library itself defines (the rest were registered)
BUILT_IN: set[str] = set()


def table(name: str) -> TableSpec:
    if name not in TABLES:
        raise ConfigError(
            f"--table must be one of {sorted(TABLES)}, got {name!r}; a table of one's own is "
            "registered with nalu_jax.reproduce.register_table(TableSpec(...)) in a module "
            "named by --plugin (docs/own_experiment.md)."
        )
    return TABLES[name]


def register_table(spec: TableSpec, *, replace: bool = False) -> str:
    """Add ``spec`` to ``TABLES``: ``launch.reproduce --table=NAME`` (with the module that calls
    this named by ``--plugin`` or ``NALU_JAX_PLUGINS``) then runs, commits and tabulates its
    cells as it does a published table's. A table of one's own experiment has ``kind
    "experiment"`` and a ``config(cell)``; returns its name. A taken name is a ``ValueError``
    unless ``replace`` (the same record again, e.g. a plugin imported twice, is a no-op)."""
    if not isinstance(spec, TableSpec):
        raise TypeError(f"register_table takes a TableSpec, got {spec!r}.")
    if spec.kind not in ("arithmetic", "single_module", "experiment"):
        raise ValueError(
            f"table {spec.name!r}: kind must be 'arithmetic', 'single_module' or 'experiment', "
            f"got {spec.kind!r}."
        )
    if (spec.kind == "experiment") != callable(spec.config):
        raise ValueError(
            f"table {spec.name!r}: a table of kind 'experiment' needs config(cell) -> its "
            "config, and only such a table has one."
        )
    if not spec.ops or not spec.variants or spec.num_seeds < 1 or spec.num_steps < 1:
        raise ValueError(
            f"table {spec.name!r} needs at least one op and one variant, and positive "
            "num_seeds and num_steps."
        )
    have = TABLES.get(spec.name)
    if have is not None and have != spec and (spec.name in BUILT_IN or not replace):
        raise ValueError(
            f"table {spec.name!r} is already registered"
            + ("" if spec.name in BUILT_IN else "; pass replace=True to replace it")
            + "."
        )
    TABLES[spec.name] = spec
    return spec.name


def with_extra(spec: TableSpec, names) -> TableSpec:
    """``spec`` with one more model per name of ``names`` (``--extra_models``): a registered
    unit (``nalu_jax.units.register_unit`` or a ``"module:Class"`` name) run under the table's
    protocol beside the published models; no published figure, so its overlap columns are n/a.
    Single-module tables run it on the ops its registration names."""
    from nalu_jax.models.arithmetic import MODELS
    from nalu_jax.units import UNITS

    variants, by_op = list(spec.variants), dict(spec.models_by_op or {})
    if names and spec.kind == "experiment":
        raise ConfigError(
            f"--extra_models adds units to a published table; table {spec.name!r} is a "
            "registered one: add a Variant to its TableSpec instead."
        )
    for name in names or ():
        if any(v.key == name for v in variants):
            raise ConfigError(f"--extra_models names {name!r}, already a model of {spec.name!r}.")
        try:
            known = name in UNITS
            unit = UNITS.spec(name) if known else None
            if spec.kind == "arithmetic" and name not in MODELS:
                raise ValueError(
                    f"{name!r} is no model of the arithmetic task (a unit needs an "
                    "ArithmeticModel to be one)"
                )
        except ValueError as e:
            raise ConfigError(f"--extra_models: {e}.".replace("..", ".")) from None
        if not known and spec.kind == "single_module":
            raise ConfigError(
                f"--extra_models names {name!r}, which is not a registered unit; register it "
                "(docs/own_unit.md) or name it as module:Class."
            )
        variants.append(Variant(name, unit.label if unit else name, name))
        if spec.models_by_op is not None:
            for op in spec.ops:
                if unit is None or op in unit.ops:
                    by_op[op] = (*by_op.get(op, ()), name)
    return dataclasses.replace(
        spec, variants=tuple(variants), models_by_op=by_op if spec.models_by_op else None
    )


def cells(spec: TableSpec, models=None, ops=None, points=None) -> list[Cell]:
    """The table's cells (op-major, in table order), restricted to ``models``/``ops`` if given,
    and for a figure whose points are cells of their own, to ``points`` (keys, e.g. "h10").
    ``None`` is all of them; an empty list (``--ops=``) is refused, not read as all."""
    for flag, given in (("--models", models), ("--ops", ops), ("--points", points)):
        if given is not None and not list(given):
            raise ConfigError(f"{flag} names nothing; omit it to take every one of {spec.name!r}.")
    for op in ops or ():
        if op not in spec.ops:
            raise ConfigError(f"--ops names {op!r}; table {spec.name!r} has {list(spec.ops)}.")
    per_point = spec.axis.keys if spec.axis and not spec.axis.sweep else ()
    if points and not per_point:
        raise ConfigError(
            f"--points applies to a figure whose points are cells of their own; table "
            f"{spec.name!r} has none (its points, if any, are one program per model)."
        )
    for p in points or ():
        if p not in per_point:
            raise ConfigError(
                f"--points names {p!r}, not a point of figure {spec.name!r}; allowed: "
                f"{list(per_point)}."
            )
    keep = [p for p in per_point if not points or p in points] or [""]
    variants = [spec.variant(k) for k in models] if models else list(spec.variants)
    out = []
    for op in ops or spec.ops:
        for v in variants:
            if spec.models_by_op is None or v.key in spec.models_by_op[op]:
                out.extend(Cell(spec.name, op, v, p) for p in keep)
    if not out:
        raise ConfigError(f"no cell of table {spec.name!r} has these models and ops.")
    return out


def cell_config(spec: TableSpec, cell: Cell, num_seeds: int | None = None, num_steps=None):
    """The config of one cell: the published protocol, or reduced by ``num_seeds``/``num_steps``.

    Arithmetic: ``configs/arithmetic.py`` with the cell's model and op; single-module:
    ``configs/single_module.py`` with ``sweep.range_index = (1, …, 9)`` (one program); a
    registered table of kind "experiment": its own ``config(cell)``.
    """
    if spec.config is not None:
        return _own_cell_config(spec, cell, num_seeds, num_steps)
    c = arithmetic_config()
    c.model.name = cell.variant.model
    c.task.op = cell.op
    c.num_seeds = int(num_seeds or spec.num_seeds)
    c.num_steps = int(num_steps or spec.num_steps)
    if spec.kind == "single_module":  # as configs/single_module.py
        c.task.kind = "single_module"
        c.task.input_size = 2
        c.task.range_index = 7
        c.task.interpolation_range = None
        c.task.extrapolation_range = None
        c.model.single_unit = True
        c.train.reg_start = 20_000.0
        c.train.reg_end = 35_000.0
        c.sweep.range_index = tuple(range(1, len(RANGE_PAIRS) + 1))
        c.cpu_seed_block = 13  # as configs/single_module.py: 25 seeds, one block per core
        c.cpu_ynn_fusions = False  # as configs/single_module.py: XLA's kernels, 1.1-2.8x faster
    if c.num_steps % c.eval_every:
        raise ConfigError(f"--steps must be a multiple of {c.eval_every}, got {c.num_steps}.")
    # --steps reduces a variant's own budget too
    _set_fields(c, [o for o in cell.variant.overrides if not (o[0] == "num_steps" and num_steps)])
    # Checkpoints (and the metrics.jsonl rewrite with them) about 20 times per run, at least
    # every 10,000 steps: a 5·10⁶-step cell would otherwise save 500 times.
    if spec.axis is not None:
        _set_point(spec, cell, c, num_steps)
    c.checkpoint_every = max(10_000, c.num_steps // 20 // c.eval_every * c.eval_every)
    return c


def _set_fields(c, overrides) -> None:
    for field, value in overrides:
        *path, last = field.split(".")
        node = c
        for p in path:
            node = node[p]
        with node.unlocked():
            node[last] = value


def _own_cell_config(spec: TableSpec, cell: Cell, num_seeds, num_steps):
    """A registered table's cell: ``spec.config(cell)``, the table's seeds and steps (or the
    reduced ones), the variant's overrides; checkpoints every ``checkpoint_every`` steps as
    the config says, at most at the end."""
    import ml_collections

    c = spec.config(cell)
    if not isinstance(c, ml_collections.ConfigDict):
        raise ConfigError(
            f"table {spec.name!r}: config(cell) must return an ml_collections.ConfigDict, got "
            f"{type(c).__name__}."
        )
    c = c.copy_and_resolve_references()
    c.num_seeds = int(num_seeds or spec.num_seeds)
    c.num_steps = int(num_steps or spec.num_steps)
    _set_fields(c, [o for o in cell.variant.overrides if not (o[0] == "num_steps" and num_steps)])
    # (the experiment validates the rest, after any --config.FIELD override: cells.configs)
    c.checkpoint_every = min(int(c.checkpoint_every), c.num_steps)
    return c


def _set_point(spec: TableSpec, cell: Cell, c, num_steps) -> None:
    """A figure cell's config: its swept points, or its one point (and the point's published
    iterations, scaled by the ``num_steps`` reduction where one is asked)."""
    axis = spec.axis
    c.first_seed = spec.first_seed
    if axis.sweep:
        with c.sweep.unlocked():
            c.sweep[axis.sweep] = tuple(axis.points)
        return
    i = axis.keys.index(cell.point)
    section, field = axis.field.split(".")
    c[section][field] = axis.points[i]
    if axis.steps:
        steps = axis.steps[i] * (int(num_steps) / spec.num_steps if num_steps else 1)
        c.num_steps = max(int(steps) // c.eval_every, 1) * c.eval_every


def appendix_c_others() -> tuple[str, ...]:
    """App. C's cells on +, −, × beyond Table 1's (``TABLE1_CELLS``): the other models there."""
    spec = TABLES["iclr2020-arithmetic"]
    return tuple(c.key for c in cells(spec, ops=("mul", "add", "sub")) if c.key not in TABLE1_CELLS)
