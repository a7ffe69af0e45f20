"""A cheap counter-based uniform sampler for the training batches.

Drawing the fresh ``[batch, n]`` batch with ``jax.random.uniform`` (threefry, 20 rounds per
pair of words) was most of a training step on CPU: 4.9 ms of every step at 100 seeds against
0.34 ms for this sampler (``benchmarks/throughput.py``, 2-core CPU). Here threefry is used once
per call to derive two 32-bit words (k0, k1) from the step's key; element i then gets
``mix(mix(i + k0) ^ k1)``, with ``mix`` the lowbias32 integer hash (good avalanche, a bijection
on 32 bits). Two calls share a stream only if both derived words coincide (probability
2⁻⁶⁴), and the element-wise work is a few integer multiplies and shifts that XLA fuses into
the consumers. ``tests/test_rng.py`` checks moments, uniformity and independence across
elements, seeds and steps.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

SAMPLERS = ("hash", "threefry")


def unroll_threefry_on_cpu() -> bool:
    """Lower threefry2x32 on CPU unrolled, as JAX does on every other platform.

    JAX lowers it on CPU as a rolled ``while`` of 5 iterations (smaller programs, faster
    compiles); on XLA:CPU each iteration runs ~10 tiny kernels, and a training step's three
    threefry calls (the step key's ``fold_in``, its ``split``, the sampler's two words) were a
    quarter of the NMU's step and more of the cheaper models' (WORKSPACE at bcf7708,
    "Profile: arithmetic step"). Both lowerings are the same 32-bit integer arithmetic, so every random bit is
    unchanged (``tests/test_rng.py``). Uses JAX's own unrolled lowering from a private module;
    if that moves, nothing is changed and False is returned (only speed is lost).
    """
    try:
        from functools import partial

        from jax._src.random import threefry2x32 as _tf
        from jax.extend.random import threefry2x32_p
        from jax.interpreters import mlir

        rule = mlir.lower_fun(
            partial(_tf._threefry2x32_lowering, use_rolled_loops=False), multiple_results=True
        )
        mlir.register_lowering(threefry2x32_p, rule, platform="cpu")
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - a JAX internals move
        return False
    return True


UNROLLED_THREEFRY = unroll_threefry_on_cpu()


def _mix(h):
    # lowbias32 (C. Wellons' hash-prospector): a 32-bit bijection with low bias.
    h = h ^ (h >> 16)
    h = h * jnp.uint32(0x7FEB352D)
    h = h ^ (h >> 15)
    h = h * jnp.uint32(0x846CA68B)
    return h ^ (h >> 16)


class HashWords(NamedTuple):
    """The two words (k0, k1) the hash stream derives from a key (``derive``), kept so that
    a caller can derive them ahead of time: in a ``lax.scan`` of training steps, words derived
    inside the step are re-derived by every fused kernel that reads an element of the batch
    (XLA:CPU duplicates the cheap integer threefry into each consumer); derived for a whole
    chunk of steps before the scan, they are computed once (``Recipe.step_randomness``)."""

    words: jax.Array  # uint32 [2]


class HashUnits(NamedTuple):
    """A draw's values in [0, 1), computed ahead of time from its words (``units``). The same
    reason as ``HashWords``, one step further: the words are cheap to carry, but each consumer
    of the batch still re-runs the two hashes per element, and a small model's step has
    several consumers of a batch of a few hundred elements (the single-module task's NMU:
    three fused kernels, 3.7 of its 7.3 traced µs per seed-step). ``uniform`` on them is
    ``uniform`` on the words, bit for bit."""

    units: jax.Array  # float32 [*shape]


def units(key, shape) -> HashUnits:
    """The [0, 1) values ``uniform(key, shape, ...)`` scales, for a typed key or its
    ``HashWords``."""
    return HashUnits(bits_to_unit(hash_bits(key, tuple(shape))))


def derive(key, sampler: str = "hash"):
    """What ``uniform(·, sampler=sampler)`` needs from a typed ``key``: its ``HashWords`` for
    "hash" (the same words ``uniform`` would derive), the key itself for "threefry"."""
    if sampler == "hash":
        return HashWords(jax.random.bits(key, (2,), jnp.uint32))
    return key


def hash_bits(key, shape) -> jax.Array:
    """``uint32[*shape]`` pseudo-random words for ``key`` (a typed JAX key, or its
    ``HashWords``)."""
    k = key.words if isinstance(key, HashWords) else jax.random.bits(key, (2,), jnp.uint32)
    size = 1
    for d in shape:
        size *= d
    i = jax.lax.iota(jnp.uint32, size).reshape(shape)
    return _mix(_mix(i + k[0]) ^ k[1])


def bits_to_unit(bits) -> jax.Array:
    """The top 23 bits as a float32 in [0, 1) (exact: mantissa of a number in [1, 2))."""
    one_to_two = jax.lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32)
    return one_to_two - 1.0


def uniform(key, shape, minval=0.0, maxval=1.0, *, sampler: str = "hash") -> jax.Array:
    """float32 ``[*shape]`` ~ U[minval, maxval) from ``sampler`` ("hash" or "threefry");
    ``key`` a typed key, ``derive(key, sampler)``, or (hash) ``units(key, shape)``."""
    if sampler == "threefry":
        return jax.random.uniform(key, tuple(shape), jnp.float32, minval, maxval)
    if sampler != "hash":
        raise ValueError(f"sampler must be one of {list(SAMPLERS)}, got {sampler!r}.")
    if isinstance(key, HashUnits):
        if key.units.shape != tuple(shape):
            raise ValueError(f"drawn ahead for shape {key.units.shape}, asked for {tuple(shape)}.")
        u = key.units
    else:
        u = bits_to_unit(hash_bits(key, tuple(shape)))
    return jnp.maximum(minval, minval + (maxval - minval) * u)  # as jax.random.uniform does
