"""Arithmetic networks built from registered units, and the model table (λ̂ and schedule per model).

* ``ArithmeticNetwork``: a stack of units (two layers ``in → hidden → 1`` for the arithmetic
  task, one unit ``in → 1`` for the single-module benchmark).
* ``MODELS``: model name → (layer₁ unit, layer₂ unit, default λ̂, λ_start, λ_end); a unit
  registered with an ``ArithmeticModel`` (``nalu_jax.units.register_unit``) joins it.
* ``RecurrentNetwork``: a recurrent cell unrolled over a sequence and a readout unit.
* ``build_model(...)`` / ``model_factory(...)``: the network for a model name.
* ``init_params(factory, key)`` / ``split_model(factory)``: the pure view the training core
  uses — one static ``graphdef`` and a parameter pytree per seed (``jax.vmap`` over keys).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units import ACTIVATIONS, UNITS, ArithmeticUnit, UnitSpec, make_unit
from nalu_jax.units import sparsity_error as matrix_sparsity_error
from nalu_jax.units.recurrent import final_output

REG_KEYS = ("sparse", "z", "gate", "l1", "inalu")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Layer units and the default sparsity-regulariser schedule (λ̂ = 0: none)."""

    layer1: str
    layer2: str
    reg_scale: float = 0.0
    reg_start: float = 0.0
    reg_end: float = 1.0


_NMU_REG = dict(reg_scale=10.0, reg_start=1e6, reg_end=2e6)


class ModelTable(dict):
    """``name → ModelSpec``; a registered unit that declares an ``ArithmeticModel`` is a model
    of its own name (a ``"module:Class"`` name is imported on first lookup, as in ``UNITS``)."""

    def __contains__(self, name) -> bool:
        if isinstance(name, str) and not dict.__contains__(self, name) and ":" in name:
            UNITS.get(name)  # imports and registers the unit (see _follow_units)
        return dict.__contains__(self, name)

    def __missing__(self, name):
        if name in self:
            return dict.__getitem__(self, name)
        raise KeyError(name)

    def get(self, name, default=None):
        return self[name] if name in self else default


def _follow_units(name: str, spec: UnitSpec | None) -> None:
    """Keep ``MODELS`` in step with the units registered with an arithmetic-task model."""
    if spec is None or spec.arithmetic is None:
        if name in _USER_MODELS:
            _USER_MODELS.discard(name)
            dict.pop(MODELS, name, None)
        return
    a = spec.arithmetic
    first = name if a.first_layer == "same" else a.first_layer
    dict.__setitem__(MODELS, name, ModelSpec(first, name, a.reg_scale, a.reg_start, a.reg_end))
    _USER_MODELS.add(name)


_USER_MODELS: set = set()

MODELS: dict[str, ModelSpec] = {
    "nmu": ModelSpec("nau", "nmu", **_NMU_REG),
    "nau": ModelSpec("nau", "nau", reg_scale=0.01, reg_start=5e3, reg_end=5e4),
    "nac_mul": ModelSpec("nac_add", "nac_mul"),
    "nac_mul_sigma": ModelSpec("nac_add", "nac_mul_sigma"),
    "nac_mul_nmu": ModelSpec("nau", "nac_mul_nmu", **_NMU_REG),
    "gated_nau_nmu": ModelSpec("nau", "gated_nau_nmu", **_NMU_REG),
    "nac_add": ModelSpec("nac_add", "nac_add"),
    "nalu": ModelSpec("nalu", "nalu"),
    "linear": ModelSpec("linear", "linear"),
    **{name: ModelSpec(name, "linear") for name in ACTIVATIONS},
    # Units proposed as a second layer over an NAU; `first_layer="same"` stacks the unit twice.
    # λ̂ then regularises the NAU (and the unit, where it has an R_sparse) as in the nmu row.
    **{
        name: ModelSpec("nau", name, **_NMU_REG)
        for name in ("inalu", "g_nalu", "npu", "real_npu", "nru", "nmru", "snmu")
    },
}
MODELS = ModelTable(MODELS)  # the library's models; registered units join (_follow_units)
UNITS.listeners.append(_follow_units)
for _name, _spec in list(UNITS.specs.items()):  # units registered before this import
    _follow_units(_name, _spec)


class ArithmeticNetwork(nnx.Module):
    """Units applied in sequence; ``x`` ``[batch, in]`` → ``[batch, out]``."""

    def __init__(self, layers: list[ArithmeticUnit]):
        self.layers = nnx.List(layers) if hasattr(nnx, "List") else list(layers)

    def __call__(self, x, *, training: bool = False, key=None):
        return self.apply_with_regularizers(x, training=training, key=key)[0]

    def apply_with_regularizers(self, x, *, training: bool = False, key=None, step=None):
        """Output and the regularisers summed over layers (each on its own input batch).

        Returns ``(y [batch, out], {name: scalar})`` with every name of the loss present.
        ``key`` is split into one key per layer, or is a tuple of per-layer entries already
        (``layer_noise``). ``step`` (the training step) is unused here: ``RecurrentNetwork``
        takes it too.
        """
        regs = {k: jnp.zeros((), jnp.float32) for k in REG_KEYS}
        if key is None:
            keys = [None] * len(self.layers)
        elif isinstance(key, tuple):  # one entry per layer: its key, or its noise drawn ahead
            keys = key
        else:
            keys = jax.random.split(key, len(self.layers))
        for layer, k in zip(self.layers, keys, strict=True):
            for name, value in layer.regularizers(x, training=training, key=k).items():
                regs[name] = regs[name] + value
            x = layer(x, training=training, key=k)
        return x, regs

    def project(self) -> None:
        for layer in self.layers:
            layer.project()

    @staticmethod
    def layer_noise(factory, x_shape, x_dtype=jnp.float32):
        """For a network whose units draw training noise (``draw_noise``): ``key -> tuple``,
        per layer the noise it would draw inside ``apply_with_regularizers(x, key=key)`` for an
        input ``x`` of ``x_shape`` (the same split, shapes and dtypes, so the same bits), or its
        key where it draws none. ``None`` when no layer draws noise or the model is not an
        ``ArithmeticNetwork``."""
        abstract = nnx.eval_shape(lambda: factory(nnx.Rngs(0)))
        if not isinstance(abstract, ArithmeticNetwork):
            return None
        draws = [getattr(type(layer), "draw_noise", None) for layer in abstract.layers]
        if not any(draws):
            return None
        graphdef, state = nnx.split(abstract)

        def inputs(state, x):
            model, seen = nnx.merge(graphdef, state), []
            for layer in model.layers:
                seen.append(x)
                x = layer(x, training=False)
            return seen

        avals = jax.eval_shape(inputs, state, jax.ShapeDtypeStruct(x_shape, x_dtype))

        def draw(key):
            keys = jax.random.split(key, len(draws))
            return tuple(
                k if d is None else d(k, a.shape, a.dtype)
                for d, k, a in zip(draws, keys, avals, strict=True)
            )

        return draw

    def sparsity_error(self):
        """Max over the arithmetic layers; a network with none (Linear, ReLU, …) over every
        layer's weight matrix, as the ICLR 2020 analysis logged each layer's W (its Table 1
        gives Linear a sparsity error); NaN when no layer has one."""
        errs = [layer.sparsity_error() for layer in self.layers if layer.is_arithmetic]
        if not errs:
            errs = [
                matrix_sparsity_error(w) for layer in self.layers for w in layer.weight_matrices()
            ]
        if not errs:
            return jnp.array(jnp.nan, jnp.float32)
        return jnp.max(jnp.stack(errs))


class RecurrentNetwork(nnx.Module):
    """A cell unrolled over ``xs [batch, T, in]`` and a readout unit on its last output.

    ``readout_reg_from`` > 0 leaves the readout's regularisers out of the loss before that
    training step (the cell's always count; 0, the default: from the start); the readout is
    always projected and counted in the sparsity error."""

    def __init__(self, cell, readout, *, readout_reg_from: int = 0):
        self.cell = cell
        self.readout = readout
        self.readout_reg_from = int(readout_reg_from)

    def __call__(self, xs, *, training: bool = False, key=None):
        return self.apply_with_regularizers(xs, training=training, key=key)[0]

    def apply_with_regularizers(self, xs, *, training: bool = False, key=None, step=None):
        """``(y [batch, 1], {name: scalar})``: cell regularisers averaged over time + readout's
        (from step ``readout_reg_from``; ``step`` None counts them)."""
        cell_key, out_key = (None, None) if key is None else tuple(jax.random.split(key))
        # Only the last output is needed: the length-1,000 evaluation stays O(batch·hidden).
        h, _, cell_regs = final_output(self.cell, xs, training=training, key=cell_key)
        regs = {k: cell_regs.get(k, jnp.zeros((), jnp.float32)) for k in REG_KEYS}
        on = None
        if self.readout_reg_from > 0 and step is not None:
            on = jnp.asarray(step >= self.readout_reg_from, jnp.float32)
        for n, v in self.readout.regularizers(h, training=training, key=out_key).items():
            regs[n] = regs[n] + (v if on is None else on * v)
        return self.readout(h, training=training, key=out_key), regs

    def project(self) -> None:
        self.cell.project()
        self.readout.project()

    def sparsity_error(self):
        """Max over the arithmetic parts (cell, readout); NaN when neither is arithmetic."""
        parts = [p.sparsity_error() for p in (self.cell, self.readout) if p.is_arithmetic]
        return jnp.max(jnp.stack(parts)) if parts else jnp.array(jnp.nan, jnp.float32)


def resolve_layers(name: str, *, single_unit: bool = False, first_layer: str | None = None):
    """Unit names of the network's layers for a model name (see ``MODELS``)."""
    if single_unit:
        if name not in UNITS:
            raise ValueError(f"model.name must be one of the units {sorted(UNITS)}, got {name!r}.")
        return (name,)
    if name not in MODELS:
        hint = ""
        if name in UNITS:
            hint = (
                f" (unit {name!r} declares no arithmetic-task model: give it "
                "`arithmetic = ArithmeticModel(reg_scale=...)`)"
            )
        raise ValueError(f"model.name must be one of {sorted(MODELS)}, got {name!r}{hint}.")
    spec = MODELS[name]
    if first_layer in (None, "", "default"):
        return (spec.layer1, spec.layer2)
    if first_layer == "same":
        return (spec.layer2, spec.layer2)
    if first_layer not in UNITS:
        raise ValueError(
            f"model.first_layer must be 'default', 'same' or a unit of {sorted(UNITS)}, "
            f"got {first_layer!r}."
        )
    return (first_layer, spec.layer2)


def build_model(
    name: str,
    in_features: int,
    *,
    rngs: nnx.Rngs,
    hidden_size: int = 2,
    out_features: int = 1,
    single_unit: bool = False,
    first_layer: str | None = None,
    layer_options: tuple[dict, ...] | None = None,
) -> ArithmeticNetwork:
    """The network for model ``name``: two layers ``in → hidden → out`` or one unit ``in → out``.

    ``layer_options`` gives each layer's unit options (e.g. ``({}, {"init": "variance"})``).
    """
    units = resolve_layers(name, single_unit=single_unit, first_layer=first_layer)
    if isinstance(hidden_size, bool) or not isinstance(hidden_size, int) or hidden_size < 1:
        raise ValueError(f"model.hidden_size must be a positive integer, got {hidden_size!r}.")
    sizes = (in_features, out_features) if single_unit else (in_features, hidden_size, out_features)
    options = tuple(layer_options or ({},) * len(units))
    if len(options) != len(units):
        raise ValueError(f"layer_options must have {len(units)} entries, got {len(options)}.")
    layers = [
        make_unit(u, sizes[i], sizes[i + 1], rngs=rngs, **dict(options[i]))
        for i, u in enumerate(units)
    ]
    return ArithmeticNetwork(layers)


def model_factory(name: str, in_features: int, **kwargs):
    """``rngs -> ArithmeticNetwork`` with everything but the randomness fixed."""
    build_model(name, in_features, rngs=nnx.Rngs(0), **kwargs)  # fail early on bad arguments
    return lambda rngs: build_model(name, in_features, rngs=rngs, **kwargs)


def stack_factory(units, in_features: int, *, widths, out_features: int = 1, layer_options=None):
    """``(rngs -> ArithmeticNetwork, units)``: the registered ``units`` (names, or
    ``"module:Class"``) in sequence, ``in → widths[0] → … → widths[-1] → out``, each built with
    its ``layer_options`` entry. ``ValueError`` naming ``units``, ``widths`` or
    ``layer_options`` (checked by building one network)."""
    units = tuple(units)
    if not units or not all(isinstance(u, str) and u for u in units):
        raise ValueError(f"units must be a non-empty list of unit names, got {list(units)!r}.")
    for u in units:
        if u not in UNITS:
            raise ValueError(f"units must be units of {sorted(UNITS)}, got {u!r}.")
    widths = tuple(widths)
    if len(widths) != len(units) - 1 or not all(
        isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in widths
    ):
        raise ValueError(
            f"widths must be {len(units) - 1} positive integers (one per hidden layer of "
            f"{len(units)} units), got {list(widths)!r}."
        )
    options = tuple(layer_options or ({},) * len(units))
    if len(options) != len(units):
        raise ValueError(f"layer_options must have {len(units)} entries, got {len(options)}.")
    sizes = (in_features, *widths, out_features)

    def build(rngs):
        return ArithmeticNetwork(
            [
                make_unit(u, sizes[i], sizes[i + 1], rngs=rngs, **options[i])
                for i, u in enumerate(units)
            ]
        )

    build(nnx.Rngs(0))  # fail early on bad options
    return build, units


def split_model(factory):
    """The static ``graphdef`` and one example parameter state of ``factory``."""
    return nnx.split(factory(nnx.Rngs(0)))


def init_params(factory, key):
    """Parameters of one fresh model drawn from ``key`` (pure: ``jax.vmap`` it over keys)."""
    return nnx.split(factory(nnx.Rngs(params=key)))[1]
