"""The ICLR 2020 analysis' sparsity-error estimator (Beta fit, μ half the fitted mean), checked
against independent computations: scipy's own Beta maximum-likelihood fit, a brute-force
profile over a dense grid, and the Student-t fallback by hand."""

import math

import numpy as np
import pytest
from scipy import stats

from nalu_jax.reporting.published_estimators import CHI2_1_95, iclr2020_sparsity_error


def brute_profile(x, mu):
    """min over v of the negative log-likelihood of Beta(2μv, (1 − 2μ)v), on a dense grid."""
    v = np.exp(np.linspace(math.log(1e-5), math.log(1e9), 40001))
    a, b = 2 * mu * v, (1 - 2 * mu) * v
    ll = stats.beta.logpdf(x[:, None], a[None, :], b[None, :]).sum(axis=0)
    return -float(np.max(ll))


def test_mu_is_half_the_mean_of_scipys_beta_fit():
    x = np.random.default_rng(0).beta(3.0, 4.0, size=60) * 0.5  # errors in (0, 0.5)
    a, b, _, _ = stats.beta.fit(x, floc=0, fscale=1)
    fit = iclr2020_sparsity_error(x)
    assert fit["method"] == "beta"
    assert fit["mean"] == pytest.approx(0.5 * a / (a + b), rel=1e-6)
    # the sample mean is about twice the reported figure
    assert np.mean(x) == pytest.approx(2 * fit["mean"], rel=0.05)


def test_large_sample_recovers_half_the_distribution_mean():
    x = np.random.default_rng(1).beta(2.0, 18.0, size=4000)  # mean 0.1, all below 0.5
    fit = iclr2020_sparsity_error(x)
    assert fit["mean"] == pytest.approx(0.05, rel=0.03)
    assert fit["lo"] < 0.05 < fit["hi"]


def test_interval_is_where_the_profile_rises_by_chi2_over_two():
    x = np.random.default_rng(2).beta(5.0, 2.0, size=20) * 0.5
    fit = iclr2020_sparsity_error(x)
    best = brute_profile(x, fit["mean"])
    assert fit["lo"] < fit["mean"] < fit["hi"]
    for bound in (fit["lo"], fit["hi"]):
        assert brute_profile(x, bound) - best == pytest.approx(CHI2_1_95 / 2, abs=2e-3)
    # and the point estimate is the profile's minimum
    for mu in (fit["mean"] * 0.99, fit["mean"] * 1.01):
        assert brute_profile(x, mu) > best


def test_values_near_one_half_give_a_quarter():
    x = np.array([0.49, 0.495, 0.4999, 0.47, 0.48, 0.499])  # a Linear layer's errors
    assert iclr2020_sparsity_error(x)["mean"] == pytest.approx(0.25, abs=0.01)


def test_constant_values_fall_back_to_the_sample_mean():
    fit = iclr2020_sparsity_error([3e-5] * 10 + [float("nan")])
    assert fit["method"] == "normal"
    assert fit["mean"] == pytest.approx(3e-5)
    assert (fit["lo"], fit["hi"]) == pytest.approx((3e-5, 3e-5))


def test_one_value_and_none():
    one = iclr2020_sparsity_error([0.2])
    assert one["method"] == "normal" and one["mean"] == 0.2 and math.isnan(one["lo"])
    none = iclr2020_sparsity_error([])
    assert all(math.isnan(none[k]) for k in ("mean", "lo", "hi"))


def test_fallback_interval_is_clipped_at_zero():
    # sd 8.7e-11 (≤ 1e-10): the fallback; mean 5e-11, t(0.975, 2) = 4.3027 → lower bound < 0
    fit = iclr2020_sparsity_error([0.0, 0.0, 1.5e-10])
    x = np.array([1e-16, 1e-16, 1.5e-10])
    half = 4.302652729911275 * np.std(x, ddof=1) / math.sqrt(3)
    assert fit["method"] == "normal"
    assert fit["mean"] == pytest.approx(np.mean(x), rel=1e-12)
    assert fit["lo"] == 0.0 and fit["hi"] == pytest.approx(np.mean(x) + half, rel=1e-9)
