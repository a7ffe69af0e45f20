"""Sweeps in one program: listed hyperparameter values become more entries of the population.

``config.sweep`` names traced hyperparameters with a tuple of values each, e.g.
``--config.sweep.lr="(1e-3, 3e-3)" --config.sweep.range_index="(1,2,3,4,5,6,7,8,9)"``. The
settings are the grid of all listed values; every setting runs all the config's seeds, and
all settings × seeds train as one population (one compiled program): each run carries its own
``HParams`` (learning rate, λ̂, ramp, λ_z, NPU β, ranges) and is judged with its setting's
threshold (its own ε and ranges). Anything that would change shapes (op, input size, model,
a range's number of intervals between single and two) is static and cannot be swept;
single and two-interval ranges in one sweep are all run in the two-interval form.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax.numpy as jnp

from nalu_jax.config_utils import ConfigError, build_task
from nalu_jax.tasks.arithmetic import is_two_interval

#: sweepable name → (config section, field)
SWEEPABLE = {
    "lr": ("train", "lr"),
    "reg_scale": ("train", "reg_scale"),
    "reg_start": ("train", "reg_start"),
    "reg_end": ("train", "reg_end"),
    "lambda_z": ("train", "lambda_z"),
    "npu_beta_start": ("train", "npu_beta_start"),
    "npu_beta_end": ("train", "npu_beta_end"),
    "range_index": ("task", "range_index"),
    "interpolation_range": ("task", "interpolation_range"),
    "extrapolation_range": ("task", "extrapolation_range"),
    "threshold_epsilon": ("task", "threshold_epsilon"),
}


#: sweeping any of these makes the ranges traced hyperparameters
RANGE_FIELDS = ("range_index", "interpolation_range", "extrapolation_range")


@dataclasses.dataclass
class Setting:
    """One point of the sweep grid: its name, swept values and fully resolved config."""

    name: str
    values: dict
    config: object
    task: object = None


def _as_tuple(value):
    if isinstance(value, list | tuple):
        return tuple(_as_tuple(v) for v in value)
    return value


def swept(config) -> dict:
    """``{name: values}`` of the non-empty entries of ``config.sweep``, in a fixed order."""
    sweep = config.get("sweep") or {}
    out = {}
    for name in sorted(sweep.keys()):
        values = sweep[name]
        if values is None or len(values) == 0:
            continue
        if name not in SWEEPABLE:
            raise ConfigError(f"sweep.{name} is not sweepable; allowed: {sorted(SWEEPABLE)}.")
        out[name] = tuple(_as_tuple(v) for v in values)
    return out


def _two_interval(rng):
    return rng if is_two_interval(rng) else (tuple(rng), tuple(rng))


def expand(config) -> list[Setting]:
    """The settings of ``config`` (one, named "", when nothing is swept), each validated."""
    grid = swept(config)
    settings = []
    for values in itertools.product(*grid.values()):
        c = config.copy_and_resolve_references()
        with c.unlocked():
            for name, value in zip(grid, values, strict=True):
                section, field = SWEEPABLE[name]
                c[section][field] = value
        name = ",".join(f"{k}={v}" for k, v in zip(grid, values, strict=True))
        settings.append(Setting(name, dict(zip(grid, values, strict=True)), c))
    for s in settings:
        s.task = build_task(s.config)
    _check_static(settings)
    return settings


def _check_static(settings) -> None:
    first = settings[0].task
    for s in settings[1:]:
        for field in ("op", "input_size", "subset_sizes", "subset_starts", "simple"):
            if getattr(s.task, field) != getattr(first, field):
                raise ConfigError(
                    f"sweep setting {s.name!r} changes task.{field}, which fixes shapes; "
                    "sweep only traced hyperparameters."
                )


def common_ranges(settings) -> list[dict]:
    """Per setting, its two ranges in the form shared by all settings (``{kind: range}``).

    Ranges become traced hyperparameters in a sweep; single and two-interval ranges cannot
    share one program, so if any setting has two intervals all run in that form.
    """
    out = [{} for _ in settings]
    for kind in ("interpolation_range", "extrapolation_range"):
        ranges = [getattr(s.task, kind) for s in settings]
        if len({is_two_interval(r) for r in ranges}) > 1:
            ranges = [_two_interval(r) for r in ranges]
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


def stack_hparams(hparams: list):
    """``[HParams]`` → one ``HParams`` whose leaves have a leading run axis."""
    import jax

    return jax.tree.map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *hparams)
