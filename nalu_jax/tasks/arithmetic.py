"""The static arithmetic task ("static arithmetic datasets", docs/protocols.md, "Static arithmetic").

An input ``x`` has ``n`` i.i.d. entries. ``K`` subsets of ``S = ⌊s·n⌋`` consecutive entries,
each overlapping the previous one by ``O = ⌊o·S⌋``, are shifted by one per-seed offset
``~ U{0, …, n − span}``; the target is a function of the subset sums (``a``, ``b``, …):

    add = Σ_k sum_k   sub = a − b   mul = ∏_k sum_k   div = a / b   squared = a²   root = √a

or any function of them, a ``Target`` of one's own (e.g. ``a·b + c``: docs/own_experiment.md).

The configuration (:class:`ArithmeticTask`) is static and hashable, so it can be a static
argument of ``jax.jit``; the offset and the random keys are traced, so everything below can be
``jit``-ed and ``vmap``-ed over seeds.

>>> task = ArithmeticTask("mul")
>>> offset = sample_offset(task, jax.random.key(0))
>>> x, t = sample_batch(task, jax.random.key(1), 128, offset, task.interpolation_range)
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import math
import numbers
import operator
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nalu_jax import rng as rng_lib

OPS = ("add", "sub", "mul", "div", "squared", "root")

# Number of leading subsets each operation reads (None: all K).
_SUBSETS_USED = {"add": None, "sub": 2, "mul": None, "div": 2, "squared": 1, "root": 1}
# Slack for ⌊s·n⌋ so that e.g. s = 0.29, n = 100 gives 29, not 28 (0.29·100 = 28.999…).
_FLOOR_SLACK = 1e-9


def _floor(value: float) -> int:
    return int(math.floor(value + _FLOOR_SLACK))


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def normalize_range(value, name: str) -> tuple:
    """Return ``(lo, hi)`` or ``((lo1, hi1), (lo2, hi2))`` as Python floats; ``ValueError`` else."""
    allowed = "(lo, hi) with lo < hi, or ((lo1, hi1), (lo2, hi2)) of equal widths"
    try:
        pair = tuple(value)
    except TypeError:
        pair = ()
    if len(pair) != 2:
        raise ValueError(f"{name} must be {allowed}, got {value!r}.")
    if all(_is_real(v) for v in pair):
        lo, hi = float(pair[0]), float(pair[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"{name} must have finite lo < hi, got {value!r}.")
        return (lo, hi)
    try:
        intervals = tuple(tuple(p) for p in pair)
    except TypeError:
        intervals = ()
    if len(intervals) != 2 or not all(len(p) == 2 and all(map(_is_real, p)) for p in intervals):
        raise ValueError(f"{name} must be {allowed}, got {value!r}.")
    intervals = tuple(normalize_range(p, name) for p in intervals)
    (lo1, hi1), (lo2, hi2) = intervals
    if not math.isclose(hi1 - lo1, hi2 - lo2, rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(f"{name} must be two intervals of equal width, got {value!r}.")
    return intervals


@dataclasses.dataclass(frozen=True)
class Target:
    """A target of one's own: ``fn(sums [..., K]) -> [...]``, any ``jnp`` function of the
    subset sums (``sums[..., 0]`` is ``a``, ``sums[..., 1]`` is ``b``, …), traced like the
    built-in ops. ``label`` names it in reports (e.g. ``"a·b + c"``); ``subsets`` is how many
    leading subsets it reads (``num_subsets`` must be at least that)."""

    label: str
    fn: Callable
    subsets: int

    def __post_init__(self):
        if not isinstance(self.label, str) or not self.label:
            raise ValueError(f"a Target's label must be a non-empty string, got {self.label!r}.")
        if not callable(self.fn):
            raise ValueError(f"a Target's fn must be callable, got {self.fn!r}.")
        if isinstance(self.subsets, bool) or not isinstance(self.subsets, int) or self.subsets < 1:
            raise ValueError(f"a Target's subsets must be an integer >= 1, got {self.subsets!r}.")

    def fingerprint(self) -> str:
        """The label and a digest of ``fn``'s code: a threshold cached for one target is never
        reused for another (an edited ``fn`` gets a new digest)."""
        code = getattr(self.fn, "__code__", None)
        text = marshal.dumps(code) if code is not None else repr(self.fn).encode()
        return f"{self.label}#{hashlib.sha256(text).hexdigest()[:16]}"


def op_label(op) -> str:
    """An op's name in reports: a built-in op's name, or a ``Target``'s label."""
    return op.label if isinstance(op, Target) else op


def op_key(op) -> str:
    """An op in a cache key: a built-in op's name, or a ``Target``'s fingerprint."""
    return op.fingerprint() if isinstance(op, Target) else op


def range_bounds(rng) -> tuple[float, float]:
    """The smallest and largest value a (normalised) range can produce."""
    if isinstance(rng[0], tuple):
        return min(rng[0][0], rng[1][0]), max(rng[0][1], rng[1][1])
    return rng


@dataclasses.dataclass(frozen=True)
class ArithmeticTask:
    """Static configuration of the arithmetic task (hashable: usable as a jit static argument).

    ``simple=True`` is the ``simple`` variant: ``input_size`` becomes 4 and ``num_subsets`` 2,
    with subsets [0, 4) and [0, 2) and no offset; the ratios are then ignored. Ranges are
    normalised to tuples of floats. Invalid values raise ``ValueError`` naming the field.
    ``op`` is a built-in op's name or a ``Target`` of one's own.
    """

    op: str | Target
    input_size: int = 100
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5
    num_subsets: int = 2
    simple: bool = False
    interpolation_range: tuple = (1.0, 2.0)
    extrapolation_range: tuple = (2.0, 6.0)

    def __post_init__(self):
        if self.simple is True:
            object.__setattr__(self, "input_size", 4)
            object.__setattr__(self, "num_subsets", 2)
        for name in ("interpolation_range", "extrapolation_range"):
            object.__setattr__(self, name, normalize_range(getattr(self, name), name))
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` (one sentence naming the field) on an invalid configuration."""
        if not isinstance(self.op, Target) and self.op not in OPS:
            raise ValueError(f"op must be one of {list(OPS)}, got {self.op!r}.")
        if not isinstance(self.simple, bool):
            raise ValueError(f"simple must be True or False, got {self.simple!r}.")
        for name in ("input_size", "num_subsets"):
            value = getattr(self, name)
            try:
                ok = not isinstance(value, bool) and operator.index(value) >= 1
            except TypeError:
                ok = False
            if not ok:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
        if not _is_real(self.subset_ratio) or not 0 < self.subset_ratio <= 1:
            raise ValueError(f"subset_ratio must be in (0, 1], got {self.subset_ratio!r}.")
        if not _is_real(self.overlap_ratio) or not 0 <= self.overlap_ratio <= 1:
            raise ValueError(f"overlap_ratio must be in [0, 1], got {self.overlap_ratio!r}.")
        needed = self.op.subsets if isinstance(self.op, Target) else _SUBSETS_USED[self.op] or 1
        if self.num_subsets < needed:
            raise ValueError(
                f"num_subsets must be >= {needed} for op {op_label(self.op)!r}, got "
                f"{self.num_subsets}."
            )
        for name in ("interpolation_range", "extrapolation_range"):
            normalize_range(getattr(self, name), name)
            if self.op == "root" and range_bounds(getattr(self, name))[0] < 0:
                raise ValueError(
                    f"{name} must not reach below 0 for op 'root' (square root of a negative "
                    f"sum), got {getattr(self, name)!r}."
                )
        if self.simple:
            return
        if self.subset_size < 1:
            raise ValueError(
                f"subset_ratio must give at least one element per subset "
                f"(⌊subset_ratio·input_size⌋ >= 1), got {self.subset_ratio!r} "
                f"with input_size {self.input_size}."
            )
        if self.span > self.input_size:
            raise ValueError(
                f"subset_ratio is too large for input_size {self.input_size}: "
                f"{self.num_subsets} subsets (num_subsets) of {self.subset_size} inputs "
                f"overlapping by {self.overlap} span {self.span}; lower subset_ratio or "
                f"num_subsets, or raise overlap_ratio."
            )

    @property
    def subset_size(self) -> int:
        """``S = ⌊s·n⌋`` (for ``simple``: 4, the size of the first subset)."""
        return 4 if self.simple else _floor(self.subset_ratio * self.input_size)

    @property
    def overlap(self) -> int:
        """``O = ⌊o·S⌋`` entries shared by consecutive subsets (for ``simple``: 2)."""
        return 2 if self.simple else _floor(self.overlap_ratio * self.subset_size)

    @property
    def subset_sizes(self) -> tuple[int, ...]:
        """Size of each of the ``K`` subsets."""
        return (4, 2) if self.simple else (self.subset_size,) * self.num_subsets

    @property
    def subset_starts(self) -> tuple[int, ...]:
        """Start of each subset at offset 0: ``start_0 = 0``, ``start_k = end_{k−1} − O``."""
        if self.simple:
            return (0, 0)
        step = self.subset_size - self.overlap
        return tuple(k * step for k in range(self.num_subsets))

    @property
    def span(self) -> int:
        """End of the last subset at offset 0."""
        return max(s + n for s, n in zip(self.subset_starts, self.subset_sizes, strict=True))

    @property
    def max_offset(self) -> int:
        """Largest offset: ``n − span`` (0 for ``simple``)."""
        return 0 if self.simple else self.input_size - self.span

    @property
    def subsets_used(self) -> int:
        """How many leading subsets the op reads (all ``K`` for add and mul)."""
        if isinstance(self.op, Target):
            return self.op.subsets
        return _SUBSETS_USED[self.op] or self.num_subsets


@struct.dataclass
class Layout:
    """A task's subsets as traced values, so that settings of one input size whose subset or
    overlap ratio differ (the same ``K``) can train as one program (``config.sweep``): where
    its ``K`` subsets start at offset 0, their sizes, the largest offset, and which of the
    program's layouts it is (``index``: the evaluation sets' subset sums are stored per
    layout). ``layout(task)`` builds it; ``None`` everywhere below is the task's own, static."""

    index: jax.Array  # int32 []
    starts: jax.Array  # int32 [K]
    sizes: jax.Array  # int32 [K]
    max_offset: jax.Array  # int32 []


def layout(task: ArithmeticTask, index: int = 0) -> Layout:
    """``task``'s subsets as a ``Layout`` (the ``index``-th of its program's layouts)."""
    return Layout(
        index=jnp.asarray(index, jnp.int32),
        starts=jnp.asarray(task.subset_starts, jnp.int32),
        sizes=jnp.asarray(task.subset_sizes, jnp.int32),
        max_offset=jnp.asarray(task.max_offset, jnp.int32),
    )


def sample_offset(task: ArithmeticTask, key, layout: Layout | None = None) -> jax.Array:
    """Per-seed offset ``~ U{0, …, max_offset}``: int32 scalar ``[]`` (a traced ``layout``'s
    largest offset draws the same value as the static one: ``randint``'s bound is a value)."""
    top = task.max_offset if layout is None else layout.max_offset
    return jax.random.randint(key, (), 0, top + 1, dtype=jnp.int32)


def subset_masks(task: ArithmeticTask, offset, layout: Layout | None = None) -> jax.Array:
    """0/1 membership of each input in each subset: ``[K, n]`` float32 (``offset`` and
    ``layout`` may be traced; ``None``: the task's own subsets)."""
    offset = 0 if task.simple else offset
    starts, sizes = (task.subset_starts, task.subset_sizes) if layout is None else (
        layout.starts, layout.sizes)  # fmt: skip
    starts = jnp.asarray(starts, jnp.int32)[:, None] + offset
    ends = starts + jnp.asarray(sizes, jnp.int32)[:, None]
    idx = jnp.arange(task.input_size, dtype=jnp.int32)[None, :]
    return ((idx >= starts) & (idx < ends)).astype(jnp.float32)


def is_two_interval(rng) -> bool:
    """Whether ``rng`` is ``((lo1, hi1), (lo2, hi2))`` rather than ``(lo, hi)``."""
    return isinstance(rng[0], (tuple, list)) or np.ndim(rng[0]) > 0


def range_parts(rng):
    """``(lo1, lo2, width)`` of either range form (a single range has lo2 = lo1)."""
    if is_two_interval(rng):
        (lo1, hi1), (lo2, _) = rng
        return lo1, lo2, hi1 - lo1
    lo, hi = rng
    return lo, lo, hi - lo


def sample_inputs(key, shape, rng, *, sampler: str = "threefry") -> jax.Array:
    """i.i.d. inputs ``[*shape]`` float32 from ``rng``: ``(lo, hi)`` or two equal-width intervals.

    For two intervals one uniform draw on [0, 2) picks the interval (``u < 1`` or not, each
    with probability ½) and the position in it, so sampling costs one ``uniform`` either way.
    The bounds may be traced arrays of the same nesting. ``sampler``: "threefry"
    (``jax.random.uniform``) or the cheaper "hash" stream of ``nalu_jax.rng``.
    """
    shape = tuple(shape)
    if not is_two_interval(rng):
        lo, hi = (jnp.asarray(v, jnp.float32) for v in rng)
        return rng_lib.uniform(key, shape, lo, hi, sampler=sampler)
    (lo1, hi1), (lo2, _) = ((jnp.asarray(v, jnp.float32) for v in r) for r in rng)
    width = hi1 - lo1
    u = rng_lib.uniform(key, shape, 0.0, 2.0, sampler=sampler)
    return jnp.where(u < 1.0, lo1 + width * u, lo2 + width * (u - 1.0))


def target_from_sums(op: str | Target, sums) -> jax.Array:
    """Target from the subset sums: ``sums [..., K]`` -> ``[...]`` (``op`` static)."""
    if isinstance(op, Target):
        return op.fn(sums)
    if op == "add":
        return jnp.sum(sums, axis=-1)
    if op == "sub":
        return sums[..., 0] - sums[..., 1]
    if op == "mul":
        return jnp.prod(sums, axis=-1)
    if op == "div":
        return sums[..., 0] / sums[..., 1]
    if op == "squared":
        return jnp.square(sums[..., 0])
    if op == "root":
        return jnp.sqrt(sums[..., 0])
    raise ValueError(f"op must be one of {list(OPS)}, got {op!r}.")


def subset_sums(x, masks) -> jax.Array:
    """``x [..., n]``, ``masks [K, n]`` -> ``[..., K]`` in full float32 (no TF32/bf16 passes)."""
    return jnp.einsum("...n,kn->...k", x, masks, precision=jax.lax.Precision.HIGHEST)


def target(task: ArithmeticTask, x, masks) -> jax.Array:
    """Targets ``[...]`` for inputs ``x [..., n]`` and ``masks [K, n]``."""
    return target_from_sums(task.op, subset_sums(x, masks))


# ---- targets rounded once (stable-nalu computes them in float64): float32 pairs hi + lo that
# carry a value exactly, by the error-free transformations of Dekker (1971) and Knuth (TAOCP
# vol. 2, §4.2.2): two_sum and two_prod give a float32 result and its exact rounding error.


def _two_sum(a, b):
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def _split(a):
    c = 4097.0 * a  # 2¹² + 1: a float32's 24-bit significand in two 12-bit halves
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    (ah, al), (bh, bl) = _split(a), _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _pair_sum(v):
    """The exact sum of ``v [..., m]`` over its last axis as a pair ``(hi, lo)``: a pairwise
    tree of two_sum, the rounding errors summed beside (each is below ulp(hi)/2, so their own
    rounding is far below hi's last bit)."""
    m = v.shape[-1]
    v = jnp.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, (1 << max(m - 1, 0).bit_length()) - m)])
    lo = jnp.zeros_like(v)
    while v.shape[-1] > 1:
        v, e = _two_sum(v[..., 0::2], v[..., 1::2])
        lo = lo[..., 0::2] + lo[..., 1::2] + e
    return _two_sum(v[..., 0], lo[..., 0])  # renormalised: |lo| ≤ ulp(hi)/2


def _pair_sums(task, x, masks):
    """Exact subset sums as pairs ``(hi, lo)`` ``[..., K]``. Each subset is a run of
    ``task.subset_sizes[k]`` inputs from its mask's first 1 (a seed's offset moves it), so
    only those inputs are summed."""
    starts = jnp.argmax(masks > 0, axis=-1)
    parts = [_pair_sum(jax.lax.dynamic_slice_in_dim(x, starts[k], size, axis=-1))
             for k, size in enumerate(task.subset_sizes)]  # fmt: skip
    return jnp.stack([p[0] for p in parts], -1), jnp.stack([p[1] for p in parts], -1)


def exact_target(task: ArithmeticTask, x, masks) -> jax.Array:
    """Targets ``[...]`` as stable-nalu's generator makes them (float64, rounded to float32
    once), from the float32 inputs the network sees: the subset sums exact as pairs, the op
    on the pairs, one rounding at the end. ``target`` instead rounds every addition in
    float32, as the network's first layer does (its exact solution then has no training
    residual); docs/protocols.md, "Target precision". The subsets are the task's own (not a
    traced layout's). Tested on XLA:CPU against float64."""
    op = task.op
    if not isinstance(op, str):
        raise ValueError(f"exact targets are for the built-in ops {list(OPS)}, not {op!r}.")
    hi, lo = _pair_sums(task, x, masks)
    a, al = hi[..., 0], lo[..., 0]
    if op in ("add", "sub"):
        b, bl = (hi[..., 1], lo[..., 1]) if op == "add" else (-hi[..., 1], -lo[..., 1])
        s, e = _two_sum(a, b)
        return s + (e + (al + bl))
    if op in ("mul", "squared"):
        b, bl = (hi[..., 1], lo[..., 1]) if op == "mul" else (a, al)
        p, e = _two_prod(a, b)
        return p + (e + (a * bl + al * b))
    if op == "div":
        b, bl = hi[..., 1], lo[..., 1]
        q = a / b
        p, e = _two_prod(q, b)
        return q + (((a - p) - e) + (al - q * bl)) / b
    if op == "root":
        r = jnp.sqrt(a)
        p, e = _two_prod(r, r)
        return r + (((a - p) - e) + al) / (2.0 * r)
    raise ValueError(f"op must be one of {list(OPS)}, got {op!r}.")


def sample_batch(task: ArithmeticTask, key, batch_size: int, offset, rng):
    """A fresh batch: ``(x [B, n] float32, t [B] float32)`` for the seed's ``offset``."""
    x = sample_inputs(key, (batch_size, task.input_size), rng)
    return x, target(task, x, subset_masks(task, offset))
