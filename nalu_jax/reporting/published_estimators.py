"""The estimators behind published figures, where they differ from ours (docs/protocols.md,
"Comparing with a published figure").

A published table's mean is only comparable with ours when both come from the same estimator
applied to per-seed values. :mod:`nalu_jax.reporting.metrics` reports the sample mean with a
Student-t interval; the ICLR 2020 paper's Table 1 (Madsen & Johansen 2020, §4.1, and the
Appendix C tables built by the same analysis, e.g. the gating table) reports for the
sparsity error a maximum-likelihood fit instead. :func:`iclr2020_sparsity_error` is that fit,
applied to our seeds, so that the two figures can be set side by side.

The paper's analysis (stable-nalu ``export/_compute_summary.r``, ``compute.beta.stat``) clips
each solved seed's sparsity error ``x`` to ``[1e-16, 0.5 − 1e-16]`` and fits, by maximum
likelihood over ``(μ, v)`` with ``0 ≤ μ ≤ 0.5`` and ``v ≥ 1e-5``,

    x ~ Beta(α = 2μ·v, β = (1 − 2μ)·v)          (each point's log density clipped to ±1e6)

and reports ``μ`` with its profile-likelihood 95% interval. The Beta's mean is
``α / (α + β) = 2μ``: the fit rescales the mean to [0, 1] but not the data, so the reported
``μ`` is *half* the fitted mean of ``x`` (for ``x`` near 0.5, as a Linear layer's are, ``μ``
is near 0.25). Where the sample cannot carry the fit (one value, or a standard deviation
≤ 1e-10) the analysis reports the sample mean with a Student-t interval clipped to [0, 0.5].
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from nalu_jax.reporting.metrics import mean_interval

#: χ²₁ 95% quantile: the profile-likelihood interval's deviance drop
CHI2_1_95 = 3.841458820694124
_LO, _HI = 1e-16, 0.5 - 1e-16  # the analysis' clip of the data
_LOG_V = (math.log(1e-5), math.log(1e12))  # v's bound, and a ceiling no fit reaches
_LOGIT = 40.0  # 2μ = sigmoid(t), |t| ≤ 40: μ from ~2e-18 to 0.5 − 2e-18


def _nll(x: np.ndarray, mu: float, v: float) -> float:
    a, b = 2.0 * mu * v, (1.0 - 2.0 * mu) * v
    logpdf = (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x) - special.betaln(a, b)
    return -float(np.sum(np.clip(logpdf, -1e6, 1e6)))


def _profile(x: np.ndarray, mu: float) -> float:
    """``min_v nll(μ, v)``: concave log-likelihood along the ray (α, β) ∝ (2μ, 1 − 2μ)."""
    r = optimize.minimize_scalar(
        lambda lv: _nll(x, mu, math.exp(lv)), bounds=_LOG_V, method="bounded",
        options={"xatol": 1e-10},
    )  # fmt: skip
    return float(r.fun)


def _mu(t: float) -> float:
    return 0.5 * special.expit(t)


def iclr2020_sparsity_error(values) -> dict:
    """The ICLR 2020 Table 1 sparsity-error figure of the solved seeds' errors ``values``.

    Returns ``{"mean", "lo", "hi", "method"}``: ``method`` is ``"beta"`` (the fit above; ``lo``/
    ``hi`` the profile-likelihood 95% interval, NaN on a side where the profile does not rise
    by χ²₁(0.95) before the bound) or ``"normal"`` (the analysis' fallback). NaN values are
    ignored; no values give NaN throughout.
    """
    raw = np.asarray(values, dtype=np.float64).reshape(-1)
    raw = raw[~np.isnan(raw)]
    if raw.size == 0:
        return {"mean": math.nan, "lo": math.nan, "hi": math.nan, "method": "normal"}
    x = np.clip(raw, _LO, _HI)
    if x.size < 2 or float(np.std(x, ddof=1)) <= 1e-10:
        m, lo, hi = mean_interval(x)
        if x.size > 1:
            lo, hi = max(0.0, lo), min(0.5, hi)
        return {"mean": m, "lo": lo, "hi": hi, "method": "normal"}

    # μ's profile is unimodal (the Beta log-likelihood is concave in (α, β), so its
    # superlevel sets are convex and each meets an interval of rays): Brent on 2μ's logit.
    prof = lambda t: _profile(x, _mu(t))  # noqa: E731
    grid = np.linspace(-_LOGIT, _LOGIT, 161)
    vals = np.array([prof(t) for t in grid])
    i = int(np.argmin(vals))
    lo_t, hi_t = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    r = optimize.minimize_scalar(prof, bounds=(lo_t, hi_t), method="bounded",
                                 options={"xatol": 1e-12})  # fmt: skip
    t_hat, best = (float(r.x), float(r.fun)) if r.fun <= vals[i] else (grid[i], vals[i])

    def side(bound: float) -> float:
        f = lambda t: prof(t) - best - CHI2_1_95 / 2.0  # noqa: E731
        if f(bound) < 0:
            return math.nan
        return _mu(optimize.brentq(f, min(t_hat, bound), max(t_hat, bound), xtol=1e-12))

    return {"mean": _mu(t_hat), "lo": side(-_LOGIT), "hi": side(_LOGIT), "method": "beta"}
