"""Success thresholds by simulation of an ε-perturbed near-perfect solution (docs/protocols.md, "Static arithmetic" and "Single-module benchmark").

``kind="arithmetic"`` (ε = 1e-5): the first layer ``W^ε [n, K]`` has ``1 − ε`` on each
subset's entries and ``ε`` elsewhere, the second layer is perfect, so the prediction is
``f(x @ W^ε)`` with ``f = target_from_sums``; the threshold is ``E[(f(x @ W^ε) − f(x @ W⁰))²]``
over extrapolation inputs. Masks are taken at offset 0: x is i.i.d., so the value does not
depend on the offset. A target of one's own (``Target``) follows the same rule, its change
``f(s + δ) − f(s)`` taken in float64 on the host (the same float32 draws), where the change
(~1e-5 of the value) is far above the rounding.

``kind="single_module"`` (ε = 1e-4), closed-form perturbed predictions with ``a``, ``b`` the
subset sums (single inputs in the benchmark) and "irrelevant" the inputs in no used subset:

    add: Σ_k sum_k − ε·Σ_all|x|        sub: (a − b) − ε·Σ_all|x|
    mul: (1−ε)^K·∏_k sum_k·∏_irr(1 − ε|x|)   div: ((1−ε)/(1+ε))·(a/b)·∏_irr(1 − ε|x|)

The mean over ``num_samples`` draws (key ``jax.random.key(THRESHOLD_KEY_SEED)`` folded with
the chunk index, chunks of ``CHUNK_SIZE``) is accumulated in float64 on the host. Results are
cached in this process and in ``$NALU_JAX_CACHE/thresholds.json`` (default
``~/.cache/nalu_jax``); a missing, corrupt or unwritable cache only means recomputing.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.tasks.arithmetic import (
    ArithmeticTask,
    Target,
    op_key,
    sample_inputs,
    subset_masks,
    subset_sums,
    target_from_sums,
)
from nalu_jax.tasks.single_module import SINGLE_MODULE_OPS

KINDS = ("arithmetic", "single_module")
DEFAULT_EPSILON = {"arithmetic": 1e-5, "single_module": 1e-4}
THRESHOLD_KEY_SEED = 20_200_101
CHUNK_SIZE = 100_000
# Bump when the simulation changes, so stale on-disk entries are not reused.
_CACHE_VERSION = 1

_memory_cache: dict[str, float] = {}
_log = logging.getLogger(__name__)


def _target_change(op: str, sums, delta):
    """``f(sums + delta) − f(sums)`` without cancellation: ``[..., K]`` x2 -> ``[...]``.

    The change is ~1e-5 of values ~1e2, below float32 resolution when subtracted directly.
    """
    a, da = sums[..., 0], delta[..., 0]
    if op == "add":
        return jnp.sum(delta, axis=-1)
    if op == "sub":
        return da - delta[..., 1]
    if op == "mul":
        # ∏(s+δ) − ∏s = Σ_k ∏_{j<k}(s_j+δ_j) · δ_k · ∏_{j>k} s_j
        ones = jnp.ones_like(sums[..., :1])
        before = jnp.cumprod(jnp.concatenate([ones, sums + delta], axis=-1), axis=-1)[..., :-1]
        after = jnp.cumprod(jnp.concatenate([ones, sums[..., ::-1]], axis=-1), axis=-1)
        return jnp.sum(before * delta * after[..., -2::-1], axis=-1)
    if op == "div":
        b, db = sums[..., 1], delta[..., 1]
        return (da * b - a * db) / (b * (b + db))
    if op == "squared":
        return da * (2.0 * a + da)
    if op == "root":
        return da / (jnp.sqrt(a + da) + jnp.sqrt(a))
    return target_from_sums(op, sums + delta) - target_from_sums(op, sums)


def arithmetic_sq_diff(task: ArithmeticTask, x, epsilon):
    """``x [B, n]`` -> ``(f(x @ W^ε) − f(x @ W⁰))² [B]``, ``W^ε − W⁰ = ε·(1 − 2·mask)``."""
    masks = subset_masks(task, 0)
    sums = subset_sums(x, masks)
    delta = subset_sums(x, epsilon * (1.0 - 2.0 * masks))
    return jnp.square(_target_change(task.op, sums, delta))


def _target_sq_diff(task: ArithmeticTask, size: int, key, epsilon) -> np.ndarray:
    """``arithmetic_sq_diff`` for a ``Target``: the same float32 inputs, the sums and their
    change in float64 (``[size]`` float64)."""
    x = np.asarray(_chunk_inputs(task, size, key), np.float64)
    masks = np.asarray(subset_masks(task, 0), np.float64)
    sums, delta = x @ masks.T, x @ (epsilon * (1.0 - 2.0 * masks)).T
    with jax.enable_x64(True):
        f = task.op.fn
        change = np.asarray(f(jnp.asarray(sums + delta)) - f(jnp.asarray(sums)), np.float64)
    return np.square(change)


@functools.partial(jax.jit, static_argnames=("task", "size"))
def _chunk_inputs(task: ArithmeticTask, size: int, key):
    return sample_inputs(key, (size, task.input_size), task.extrapolation_range)


def _single_module_sq_diff(task: ArithmeticTask, x, epsilon):
    """``x [B, n]`` -> ``(pred_ε − pred₀)² [B]`` from the closed forms of docs/protocols.md, "Single-module benchmark"."""
    masks = subset_masks(task, 0)[: task.subsets_used]
    sums = subset_sums(x, masks)
    if task.op in ("add", "sub"):
        return jnp.square(epsilon * jnp.sum(jnp.abs(x), axis=-1))
    irrelevant = jnp.sum(masks, axis=0) == 0
    # log1p/expm1 keep the relative change (~1e-4) accurate in float32.
    log_factor = jnp.sum(jnp.where(irrelevant, jnp.log1p(-epsilon * jnp.abs(x)), 0.0), axis=-1)
    if task.op == "mul":
        log_factor = log_factor + task.subsets_used * jnp.log1p(-epsilon)
    else:
        log_factor = log_factor + jnp.log1p(-epsilon) - jnp.log1p(epsilon)
    exact = target_from_sums(task.op, sums)
    return jnp.square(exact * jnp.expm1(log_factor))


@functools.partial(jax.jit, static_argnames=("task", "kind", "size"))
def _chunk_sq_diff(task: ArithmeticTask, kind: str, size: int, key, epsilon):
    x = sample_inputs(key, (size, task.input_size), task.extrapolation_range)
    if kind == "arithmetic":
        return arithmetic_sq_diff(task, x, epsilon)
    return _single_module_sq_diff(task, x, epsilon)


def simulate_mean(sq_diff_chunk, num_samples: int, root) -> float:
    """Mean of ``sq_diff_chunk(size, key) -> [size]`` over ``num_samples`` draws.

    Chunks of ``CHUNK_SIZE`` with keys ``fold_in(root, chunk)``; the sum is taken in float64.
    """
    total, done, chunk = 0.0, 0, 0
    while done < num_samples:
        size = min(CHUNK_SIZE, num_samples - done)
        sq = sq_diff_chunk(size, jax.random.fold_in(root, chunk))
        total += float(np.sum(np.asarray(sq, dtype=np.float64)))
        done += size
        chunk += 1
    return total / num_samples


def simulate_threshold(task: ArithmeticTask, *, epsilon: float, kind: str, num_samples: int):
    """Uncached simulation: the mean squared deviation (Python float)."""
    if isinstance(task.op, Target):
        if kind != "arithmetic":
            raise ValueError(f"kind must be 'arithmetic' for a target of one's own, got {kind!r}.")
        return simulate_mean(
            lambda size, key: _target_sq_diff(task, size, key, epsilon),
            num_samples,
            jax.random.key(THRESHOLD_KEY_SEED),
        )
    return simulate_mean(
        lambda size, key: _chunk_sq_diff(task, kind, size, key, epsilon),
        num_samples,
        jax.random.key(THRESHOLD_KEY_SEED),
    )


def cache_key(task: ArithmeticTask, epsilon: float, kind: str, num_samples: int, **extra) -> str:
    """The cache key of a threshold; ``extra`` fields distinguish variants (e.g. a length)."""
    fields = {
        **extra,
        "version": _CACHE_VERSION,
        "op": op_key(task.op),
        "n": task.input_size,
        "s": float(task.subset_ratio),
        "o": float(task.overlap_ratio),
        "K": task.num_subsets,
        "simple": task.simple,
        "extrapolation_range": task.extrapolation_range,
        "epsilon": epsilon,
        "kind": kind,
        "num_samples": num_samples,
    }
    return json.dumps(fields, sort_keys=True)


def cache_path() -> Path:
    """The on-disk cache file: ``$NALU_JAX_CACHE/thresholds.json`` (default ``~/.cache/nalu_jax``)."""
    directory = os.environ.get("NALU_JAX_CACHE") or os.path.join("~", ".cache", "nalu_jax")
    return Path(directory).expanduser() / "thresholds.json"


def _read_disk_cache(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        _log.warning("Ignoring unreadable threshold cache %s: %s", path, err)
        return {}
    return data if isinstance(data, dict) else {}


def _write_disk_cache(path: Path, key: str, value: float) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read_disk_cache(path)
        data[key] = value
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".thresholds.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as err:
        _log.warning("Could not write threshold cache %s: %s", path, err)


def clear_threshold_cache() -> None:
    """Forget the in-process cache (the on-disk file is left alone)."""
    _memory_cache.clear()


def success_threshold(
    task: ArithmeticTask,
    *,
    epsilon: float | None = None,
    kind: str = "arithmetic",
    num_samples: int = 1_000_000,
) -> float:
    """Success threshold of ``task`` (a test MSE below it counts as solved), cached.

    ``kind`` is ``"arithmetic"`` (ε defaults to 1e-5) or ``"single_module"`` (ε 1e-4; op must be
    add, sub, mul or div). The cache key covers op, n, s, o, K, simple, the extrapolation range,
    ε, kind and ``num_samples``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}.")
    if kind == "single_module" and task.op not in SINGLE_MODULE_OPS:
        raise ValueError(
            f"op must be one of {list(SINGLE_MODULE_OPS)} for kind 'single_module', "
            f"got {task.op!r}."
        )
    epsilon = DEFAULT_EPSILON[kind] if epsilon is None else float(epsilon)
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must be in (0, 1), got {epsilon!r}.")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples!r}.")

    return cached(
        cache_key(task, epsilon, kind, num_samples),
        lambda: simulate_threshold(task, epsilon=epsilon, kind=kind, num_samples=num_samples),
    )


def cached(key: str, compute) -> float:
    """``compute()`` once per ``key``: in this process and in the on-disk cache file.

    A missing, corrupt or unwritable cache only means recomputing; non-finite values are
    not written to disk.
    """
    if key in _memory_cache:
        return _memory_cache[key]
    path = cache_path()
    value = _read_disk_cache(path).get(key)
    if isinstance(value, float) and math.isfinite(value):
        _memory_cache[key] = value
        return value
    value = compute()
    _memory_cache[key] = value
    if math.isfinite(value):
        _write_disk_cache(path, key, value)
    return value
