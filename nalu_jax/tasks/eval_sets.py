"""The fixed evaluation sets of the arithmetic task, stored range-free.

Every seed, and every range setting of a sweep, is judged on the same draws: the sets hold
uniform draws ``u`` in [0, 1) (and the interval choice ``c`` of two-interval ranges) with their
subset sums at every offset, so a run's inputs are ``lo₁ + (lo₂ − lo₁)·c + w·u`` and its
targets a gather, not ``size × n`` work per evaluation.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.tasks.arithmetic import is_two_interval, range_parts

VALID_KEY = 0x5EED_0001  # fixed keys: every seed is judged on the same evaluation sets
TEST_KEY = 0x5EED_0002


def evaluation_inputs(task, size: int, layouts=None) -> dict:
    """The fixed validation (interpolation) and test (extrapolation) sets, range-free.

    For each set: ``u`` ``[size, n]`` uniform draws in [0, 1), ``c`` the interval choice (0/1,
    two-interval ranges only), and their subset sums at every offset ``usums``/``csums``
    ``[size, max_offset + 1, K]``. A run rebuilds its inputs as lo₁ + (lo₂ − lo₁)·c + w·u and
    their subset sums likewise (``range_inputs``), so every seed and every range setting of a
    sweep is judged on the same draws, and a seed's targets cost a gather, not size × n work.

    ``layouts``: the tasks of a program whose subsets are traced (``arithmetic.Layout``; one
    input size): the sums are then stored per layout, ``[layouts, size, offsets, K]`` with
    the offsets of the one with the most (the others' extra offsets are never read).
    """
    data = {}
    sums = offset_subset_sums if layouts is None else functools.partial(_layout_sums, layouts)
    ranges = (
        ("valid", VALID_KEY, task.interpolation_range),
        ("test", TEST_KEY, task.extrapolation_range),
    )
    for name, seed, rng in ranges:
        ku, kc = jax.random.split(jax.random.key(seed))
        u = jax.random.uniform(ku, (size, task.input_size), jnp.float32)
        data[f"{name}_u"], data[f"{name}_usums"] = u, sums(task, u)
        if is_two_interval(rng):
            c = jax.random.bernoulli(kc, 0.5, u.shape).astype(jnp.float32)
            data[f"{name}_c"], data[f"{name}_csums"] = c, sums(task, c)
    return data


def _layout_sums(layouts, task, x) -> jax.Array:
    """``offset_subset_sums`` of each task of ``layouts`` → ``[layouts, size, offsets, K]``."""
    del task  # the layouts' own
    parts = [np.asarray(offset_subset_sums(t, x)) for t in layouts]
    most = max(p.shape[1] for p in parts)
    pad = [np.pad(p, ((0, 0), (0, most - p.shape[1]), (0, 0))) for p in parts]
    return jnp.asarray(np.stack(pad))


def range_inputs(task, data: dict, name: str, rng, offset, layout=None):
    """``(x [size, n], subset sums [size, K])`` of set ``name`` for range ``rng`` and ``offset``
    (with a traced ``layout``: its subsets, its row of the per-layout sums)."""
    lo1, lo2, width = range_parts(rng)
    sizes = jnp.asarray(task.subset_sizes if layout is None else layout.sizes, jnp.float32)

    def at_offset(sums):
        if layout is None:
            return jnp.take(sums, offset, axis=1)
        return sums[layout.index, :, offset]

    x = lo1 + width * data[f"{name}_u"]
    sums = sizes * lo1 + width * at_offset(data[f"{name}_usums"])
    if f"{name}_c" in data:
        x = x + (lo2 - lo1) * data[f"{name}_c"]
        sums = sums + (lo2 - lo1) * at_offset(data[f"{name}_csums"])
    return x, sums


def offset_subset_sums(task, x) -> jax.Array:
    """Subset sums of ``x [size, n]`` at each offset 0…max_offset → ``[size, offsets, K]``.

    Prefix sums in float64 on the host: each subset sum is then exact to float32 rounding.
    """
    xs = np.asarray(x, np.float64)
    prefix = np.concatenate([np.zeros((xs.shape[0], 1)), np.cumsum(xs, axis=1)], axis=1)
    offsets = np.arange(task.max_offset + 1)[:, None]
    starts = offsets + np.asarray(task.subset_starts)[None, :]
    ends = starts + np.asarray(task.subset_sizes)[None, :]
    return jnp.asarray(prefix[:, ends] - prefix[:, starts], jnp.float32)
