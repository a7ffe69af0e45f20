"""The fixed evaluation sets of the arithmetic task, stored range-free.

Every seed, and every range setting of a sweep, is judged on the same draws: the sets hold
uniform draws ``u`` in [0, 1) (and the interval choice ``c`` of two-interval ranges) with their
subset sums at every offset, so a run's inputs are ``lo₁ + (lo₂ − lo₁)·c + w·u`` and its
targets a gather, not ``size × n`` work per evaluation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.tasks.arithmetic import is_two_interval, range_parts

VALID_KEY = 0x5EED_0001  # fixed keys: every seed is judged on the same evaluation sets
TEST_KEY = 0x5EED_0002


def evaluation_inputs(task, size: int) -> dict:
    """The fixed validation (interpolation) and test (extrapolation) sets, range-free.

    For each set: ``u`` ``[size, n]`` uniform draws in [0, 1), ``c`` the interval choice (0/1,
    two-interval ranges only), and their subset sums at every offset ``usums``/``csums``
    ``[size, max_offset + 1, K]``. A run rebuilds its inputs as lo₁ + (lo₂ − lo₁)·c + w·u and
    their subset sums likewise (``range_inputs``), so every seed and every range setting of a
    sweep is judged on the same draws, and a seed's targets cost a gather, not size × n work.
    """
    data = {}
    ranges = (
        ("valid", VALID_KEY, task.interpolation_range),
        ("test", TEST_KEY, task.extrapolation_range),
    )
    for name, seed, rng in ranges:
        ku, kc = jax.random.split(jax.random.key(seed))
        u = jax.random.uniform(ku, (size, task.input_size), jnp.float32)
        data[f"{name}_u"], data[f"{name}_usums"] = u, offset_subset_sums(task, u)
        if is_two_interval(rng):
            c = jax.random.bernoulli(kc, 0.5, u.shape).astype(jnp.float32)
            data[f"{name}_c"], data[f"{name}_csums"] = c, offset_subset_sums(task, c)
    return data


def range_inputs(task, data: dict, name: str, rng, offset):
    """``(x [size, n], subset sums [size, K])`` of set ``name`` for range ``rng`` and ``offset``."""
    lo1, lo2, width = range_parts(rng)
    sizes = jnp.asarray(task.subset_sizes, jnp.float32)
    x = lo1 + width * data[f"{name}_u"]
    sums = sizes * lo1 + width * jnp.take(data[f"{name}_usums"], offset, axis=1)
    if f"{name}_c" in data:
        x = x + (lo2 - lo1) * data[f"{name}_c"]
        sums = sums + (lo2 - lo1) * jnp.take(data[f"{name}_csums"], offset, axis=1)
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
