"""Per-seed judgement and population statistics (docs/protocols.md, "Judgement of a seed and of a population":
"Population summary"). Pure numpy and the standard library; no scipy.

Methods:

* success rate: Wilson score interval ``(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``
  with ``z = Φ⁻¹(0.975)``, clipped to [0, 1] (exactly 0 at 0 successes, 1 at n).
* means (solved_at, sparsity error): Student-t interval ``x̄ ± t_{(1+c)/2, m−1}·s/√m`` over the
  ``m`` non-NaN values (``s`` with ddof 1); ``t`` is the quantile of the t distribution computed
  by bisection on its CDF (regularised incomplete beta, Lentz continued fraction).
* medians and quantiles ignore NaN (numpy's linear interpolation).
"""

from __future__ import annotations

import math

import numpy as np

Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; ``(nan, nan)`` when ``n == 0``."""
    if n == 0:
        return (math.nan, math.nan)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n={n}], got {successes!r}.")
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def student_t_sf(t: float, df: float) -> float:
    """Upper tail ``P(T > t)`` of Student's t with ``df`` degrees of freedom."""
    t2 = t * t
    if t2 < df:
        tail = 0.5 - 0.5 * betainc(0.5, 0.5 * df, t2 / (df + t2))
    else:
        tail = 0.5 * betainc(0.5 * df, 0.5, df / (df + t2))
    return tail if t >= 0 else 1.0 - tail


def student_t_quantile(p: float, df: float) -> float:
    """``t`` with ``P(T <= t) = p`` (e.g. 2.7764 for ``p = 0.975, df = 4``), by bisection."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}.")
    if not df > 0:
        raise ValueError(f"df must be positive, got {df!r}.")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    tail = 1.0 - p
    lo, hi = 0.0, 1.0
    while student_t_sf(hi, df) > tail:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if student_t_sf(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


def _finite_values(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).ravel()
    return v[~np.isnan(v)]


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: Student-t interval for the mean of the non-NaN ``values [m]``.

    One value gives ``(mean, nan, nan)``; none gives all NaN.
    """
    v = _finite_values(values)
    if v.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(np.mean(v))
    if v.size < 2:
        return (mean, math.nan, math.nan)
    t = student_t_quantile(0.5 * (1.0 + confidence), v.size - 1)
    half = t * float(np.std(v, ddof=1)) / math.sqrt(v.size)
    return (mean, mean - half, mean + half)


def median(values) -> float:
    """Median of the non-NaN ``values``; NaN when there are none."""
    v = _finite_values(values)
    return float(np.median(v)) if v.size else math.nan


def median_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Median of the non-NaN ``values`` with its distribution-free interval: two order
    statistics that hold the population median with at least ``confidence`` (binomial; scipy's
    ``quantile_test``); a bound is NaN where too few values reach it, all NaN with none."""
    from scipy import stats

    v = _finite_values(values)
    if not v.size:
        return (math.nan, math.nan, math.nan)
    mid = float(np.median(v))
    ci = stats.quantile_test(v, q=mid, p=0.5).confidence_interval(confidence)
    return (mid, float(ci.low), float(ci.high))


def quantiles(values, qs=(0.0, 0.25, 0.5, 0.75, 1.0)) -> dict[float, float]:
    """``{q: quantile}`` of the non-NaN ``values [S]`` (all NaN when there are none)."""
    v = _finite_values(values)
    with np.errstate(invalid="ignore"):  # inf − inf while interpolating between two infs
        return {float(q): float(np.quantile(v, q)) if v.size else math.nan for q in qs}


def judge_seeds(steps, valid_mse, test_mse, sparsity, threshold: float, diverged=None,
                select_from: int = 0) -> dict:  # fmt: skip
    """Judge each seed from its evaluation history.

    Args:
      steps: ``[E]`` evaluation steps (increasing).
      valid_mse, test_mse, sparsity: ``[E, S]`` interpolation MSE, extrapolation MSE and
        sparsity error at each evaluation, per seed.
      threshold: success threshold on the test MSE.
      diverged: ``[S]`` bool (default all False); a diverged seed is never solved.
      select_from: the best step is chosen among the evaluations at this step or later
        (default 0: all of them); ``solved_at`` still reads every evaluation.

    Returns a dict of ``[S]`` numpy arrays: ``best_index``/``best_step`` (lowest validation
    MSE, earliest on ties, NaN counted as +inf), ``solved``, ``diverged``, ``solved_at`` (first
    step with test MSE < threshold; NaN unless solved), ``sparsity_error`` (at the best step;
    NaN unless solved), ``interpolation_mse`` and ``extrapolation_mse`` (at the best step).
    """
    steps = np.asarray(steps)
    valid, test, sparse = (np.asarray(a, dtype=np.float64) for a in (valid_mse, test_mse, sparsity))
    if steps.ndim != 1 or valid.ndim != 2 or valid.shape[0] != steps.shape[0]:
        raise ValueError(
            f"valid_mse must be [E, S] with E = len(steps) = {steps.shape[0]}, got {valid.shape}."
        )
    for name, arr in (("test_mse", test), ("sparsity", sparse)):
        if arr.shape != valid.shape:
            raise ValueError(f"{name} must have shape {valid.shape}, got {arr.shape}.")
    num_seeds = valid.shape[1]
    diverged = (
        np.zeros(num_seeds, bool) if diverged is None else np.asarray(diverged, bool).reshape(-1)
    )
    if diverged.shape != (num_seeds,):
        raise ValueError(f"diverged must have shape ({num_seeds},), got {diverged.shape}.")

    seeds = np.arange(num_seeds)
    window = steps >= select_from
    if not window.any():
        raise ValueError(
            f"select_from={select_from} is after the last evaluation (step {steps[-1]}); choose "
            "a step at or before it."
        )
    first = int(np.argmax(window))
    best = first + np.argmin(np.where(np.isnan(valid[first:]), np.inf, valid[first:]), axis=0)
    test_at_best = test[best, seeds]
    solved = (test_at_best < threshold) & ~diverged
    below = test < threshold
    first_below = np.argmax(below, axis=0)
    return {
        "best_index": best,
        "best_step": steps[best],
        "solved": solved,
        "diverged": diverged,
        "solved_at": np.where(solved, steps[first_below].astype(np.float64), np.nan),
        "sparsity_error": np.where(solved, sparse[best, seeds], np.nan),
        "interpolation_mse": valid[best, seeds],
        "extrapolation_mse": test_at_best,
    }


def best_of(valid_mse, k: int, diverged=None) -> np.ndarray:
    """Model selection over restarts: the ``[S]`` seeds form ``S / k`` runs of ``k``
    consecutive seeds (independent initialisations), and each run keeps the seed with the
    lowest validation MSE (NaN, and a diverged seed, counted as +inf; the earliest on ties).

    ``valid_mse`` is each seed's validation MSE at its selected evaluation (``judge_seeds``'
    ``interpolation_mse``), so the choice uses validation data only, as ``judge_seeds`` does
    within a run. Returns the ``[S / k]`` indices (into the seeds) of the kept seeds.
    """
    valid = np.asarray(valid_mse, dtype=np.float64).reshape(-1)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k (initialisations per run) must be a positive integer, got {k!r}.")
    if valid.size == 0 or valid.size % k:
        raise ValueError(
            f"the number of seeds must be a positive multiple of k={k}, got {valid.size}."
        )
    bad = np.isnan(valid)
    if diverged is not None:
        bad |= np.asarray(diverged, bool).reshape(-1)
    groups = np.where(bad, np.inf, valid).reshape(-1, k)
    return np.arange(0, valid.size, k) + np.argmin(groups, axis=1)


def summarize(judgement: dict, threshold: float) -> dict:
    """Population summary of :func:`judge_seeds` output (plain Python numbers, JSON-ready).

    Keys: ``threshold``, ``num_seeds``, ``solved``, ``diverged`` (counts), ``success_rate`` and
    ``success_interval`` (Wilson 95%), ``solved_at_median``, ``solved_at_mean`` and
    ``solved_at_interval`` (Student-t 95% over solved seeds), ``sparsity_error_mean`` and
    ``sparsity_error_interval`` (Student-t 95% over solved seeds). Empty statistics are NaN.
    """
    solved = np.asarray(judgement["solved"], bool)
    num_seeds, num_solved = int(solved.size), int(solved.sum())
    solved_at = np.asarray(judgement["solved_at"], np.float64)[solved]
    sparsity = np.asarray(judgement["sparsity_error"], np.float64)[solved]
    at_mean, at_lo, at_hi = mean_interval(solved_at)
    sp_mean, sp_lo, sp_hi = mean_interval(sparsity)
    return {
        "threshold": float(threshold),
        "num_seeds": num_seeds,
        "solved": num_solved,
        "diverged": int(np.asarray(judgement["diverged"], bool).sum()),
        "success_rate": num_solved / num_seeds if num_seeds else math.nan,
        "success_interval": wilson_interval(num_solved, num_seeds),
        "solved_at_median": median(solved_at),
        "solved_at_mean": at_mean,
        "solved_at_interval": (at_lo, at_hi),
        "sparsity_error_mean": sp_mean,
        "sparsity_error_interval": (sp_lo, sp_hi),
    }


_INT_COLUMNS = ("seed", "solved", "best_step", "diverged", "diverged_at")
_FLOAT_COLUMNS = ("interpolation_mse", "extrapolation_mse", "solved_at", "sparsity_error")


def judgement_from_rows(rows: list[dict]) -> dict:
    """The per-seed judgement (``judge_seeds``' fields) back from ``seeds.csv`` rows (floats
    are written with ``repr``, so they read back exactly)."""
    out = {}
    for name in _INT_COLUMNS:
        out[name] = np.array([int(r[name]) for r in rows], np.int64)
    for name in _FLOAT_COLUMNS:
        out[name] = np.array([float(r[name]) if r[name] != "" else math.nan for r in rows])
    out["solved"] = out["solved"].astype(bool)
    out["diverged"] = out["diverged"].astype(bool)
    return out
