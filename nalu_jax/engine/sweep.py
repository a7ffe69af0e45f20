"""Sweeps in one program: listed hyperparameter values become more entries of the population.

``config.sweep`` names traced hyperparameters with a tuple of values each, e.g.
``--config.sweep.lr="(1e-3, 3e-3)" --config.sweep.range_index="(1,2,3,4,5,6,7,8,9)"``. The
settings are the grid of all listed values (a ``SWEEP_ZIPPED`` name, e.g. ``sweep.range_pair``, is one axis of that grid
whose every value sets its fields together); every setting runs all the config's seeds, and
all settings × seeds train as one population (one compiled program): each run carries its own
``HParams`` and is judged with its setting's facts. Anything that would change shapes is
static and cannot be swept; each experiment says which names it accepts (``SWEEPABLE``).
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp

from nalu_jax.config import SWEEP_ZIPPED, SWEEPABLE, ConfigError, as_tuples
from nalu_jax.tasks.arithmetic import is_two_interval


@dataclasses.dataclass
class Setting:
    """One point of the sweep grid: its name, swept values and fully resolved config."""

    name: str
    values: dict
    config: object


def swept(config, allowed=tuple(SWEEPABLE)) -> dict:
    """``{name: values}`` of the non-empty entries of ``config.sweep``, in a fixed order."""
    sweep = config.get("sweep") or {}
    out = {}
    for name in sorted(sweep.keys()):
        values = sweep[name]
        if values is None or len(values) == 0:
            continue
        parts = SWEEP_ZIPPED.get(name, (name,))
        if not all(p in allowed for p in parts):
            raise ConfigError(f"sweep.{name} is not sweepable here; allowed: {sorted(allowed)}.")
        if not isinstance(values, tuple | list):  # text, a number
            raise ConfigError(
                f"sweep.{name} must be a tuple of values, e.g. (0.1, 0.01), got {values!r}."
            )
        out[name] = tuple(as_tuples(v) for v in values)
    return out


def validate(experiment, config) -> None:
    """``experiment.validate`` of ``config`` and of each setting of its sweep: a swept value
    is refused as the same value set alone would be, in one sentence naming the setting."""
    experiment.validate(config)
    for s in expand(config, experiment.sweepable):
        if not s.values:  # nothing swept: the config itself, checked above
            continue
        try:
            experiment.validate(s.config)
        except ConfigError as e:
            raise ConfigError(f"sweep setting {s.name}: {e}") from None


def expand(config, allowed=tuple(SWEEPABLE)) -> list[Setting]:
    """The settings of ``config`` (one, named "", when nothing is swept)."""
    grid = swept(config, allowed)
    settings = []
    for values in itertools.product(*grid.values()):
        c = config.copy_and_resolve_references()
        with c.unlocked():
            named = {}
            for name, value in zip(grid, values, strict=True):
                parts = SWEEP_ZIPPED.get(name)
                named.update(zip(parts, value, strict=True) if parts else [(name, value)])
            for name, value in named.items():
                section, field = SWEEPABLE[name]
                c[section][field] = value
        name = ",".join(f"{k}={v}" for k, v in named.items())
        settings.append(Setting(name, named, c))
    return settings


def stack_hparams(hparams: list):
    """``[HParams]`` → one ``HParams`` whose leaves have a leading run axis."""
    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *hparams)


def check_static(settings, tasks, traced_layout: bool = False) -> None:
    """Settings whose tasks differ in a shape-fixing field cannot share one program; with
    ``traced_layout`` the subsets' sizes and starts are traced (``HParams.layout``), so only
    their number is fixed."""
    fields = ("op", "input_size", "num_subsets", "simple")
    if not traced_layout:
        fields += ("subset_sizes", "subset_starts")
    for s, task in zip(settings[1:], tasks[1:], strict=True):
        for field in fields:
            if getattr(task, field) != getattr(tasks[0], field):
                raise ConfigError(
                    f"sweep setting {s.name!r} changes task.{field}, which fixes shapes; "
                    "sweep only traced hyperparameters."
                )


def common_ranges(tasks) -> list[dict]:
    """Arithmetic ranges as traced hyperparameters: per setting, its two ranges in the form
    shared by all settings (``{kind: range}``):
    single and two-interval ranges cannot share one program, so if any setting has two
    intervals all run in that form."""
    out = [{} for _ in tasks]
    for kind in ("interpolation_range", "extrapolation_range"):
        ranges = [getattr(t, kind) for t in tasks]
        if len({is_two_interval(r) for r in ranges}) > 1:
            ranges = [r if is_two_interval(r) else (tuple(r), tuple(r)) for r in ranges]
        for o, r in zip(out, ranges, strict=True):
            o[kind] = r
    return out


def range_leaves(rng):
    """A range as nested tuples of float32 scalars (traced leaves under vmap)."""
    if isinstance(rng[0], tuple | list):
        return tuple(range_leaves(r) for r in rng)
    return tuple(jnp.asarray(v, jnp.float32) for v in rng)


def with_ranges(config, ranges: dict):
    """A copy of ``config`` with the given static ranges (so the trainer's shapes agree)."""
    c = config.copy_and_resolve_references()
    with c.unlocked():
        for kind, rng in ranges.items():
            c.task[kind] = rng
    return c
