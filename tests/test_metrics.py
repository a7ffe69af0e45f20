"""Per-seed judgement and population statistics, against hand-computed numbers."""

import math

import numpy as np
import pytest

from nalu_jax.reporting.metrics import (
    betainc,
    judge_seeds,
    mean_interval,
    median,
    median_interval,
    quantiles,
    student_t_quantile,
    summarize,
    wilson_interval,
)


@pytest.mark.parametrize(
    "k, n, lo, hi",
    [(0, 100, 0.0, 0.0370), (100, 100, 0.9630, 1.0), (50, 100, 0.4038, 0.5962)],
)
def test_wilson_interval(k, n, lo, hi):
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)
    assert got[0] >= 0.0 and got[1] <= 1.0


def test_wilson_interval_edge_cases():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    assert wilson_interval(0, 100)[0] == 0.0 and wilson_interval(100, 100)[1] == 1.0
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 4)


@pytest.mark.parametrize(
    "p, df, expected",
    [
        (0.975, 4, 2.7764),
        (0.975, 9, 2.2622),
        (0.975, 99, 1.9842),
        (0.995, 1, 63.6567),
        (0.95, 30, 1.6973),
        (0.5, 7, 0.0),
        (0.025, 4, -2.7764),
    ],
)
def test_student_t_quantile(p, df, expected):
    assert student_t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_student_t_quantile_matches_scipy_when_available():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 5, 10, 50, 1000):
        for p in (0.6, 0.9, 0.975, 0.999):
            assert student_t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-8)


def test_betainc_known_values():
    assert betainc(1.0, 1.0, 0.3) == pytest.approx(0.3)
    assert betainc(2.0, 3.0, 0.4) == pytest.approx(0.5248, abs=1e-4)
    assert betainc(0.5, 0.5, 0.5) == pytest.approx(0.5)


def test_mean_interval():
    mean, lo, hi = mean_interval([1.0, 2.0, 3.0, 4.0, 5.0, np.nan])
    half = 2.7764451 * math.sqrt(2.5) / math.sqrt(5)
    assert (mean, lo, hi) == pytest.approx((3.0, 3.0 - half, 3.0 + half))
    assert mean_interval([np.nan, 4.0])[0] == 4.0
    assert all(math.isnan(v) for v in mean_interval([np.nan, 4.0])[1:])
    assert all(math.isnan(v) for v in mean_interval([]))


def test_median_interval_is_two_order_statistics():
    # 16 values: Binomial(16, 1/2) gives P(X <= 3) = 697/65536 and P(X <= 4) = 2517/65536, so
    # [x(4), x(13)] covers the median with 1 - 2·697/65536 = 97.9% and [x(5), x(12)] with only
    # 92.3%: the 95% interval is the 4th and 13th smallest (NaN ignored)
    x = np.array([16.0, 3, 9, 1, 12, 5, 14, 7, 2, 15, 10, 4, 13, 8, 11, 6, np.nan])
    assert median_interval(x) == (8.5, 4.0, 13.0)
    # 5 values reach at most 1 - 2/32 = 93.75%: no 95% interval
    mid, lo, hi = median_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mid == 3.0 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in median_interval([np.nan]))


def test_median_and_quantiles_ignore_nan():
    assert median([3.0, np.nan, 1.0, 2.0]) == 2.0
    assert math.isnan(median([np.nan]))
    q = quantiles([0.0, np.nan, 4.0, 2.0, 1.0, 3.0])
    assert q == {0.0: 0.0, 0.25: 1.0, 0.5: 2.0, 0.75: 3.0, 1.0: 4.0}
    assert all(math.isnan(v) for v in quantiles([np.nan], qs=(0.5,)).values())


def test_judge_seeds_hand_example():
    nan = np.nan
    steps = np.array([0, 1000, 2000, 3000])
    # One row per seed (transposed to [E, S] below):
    # seed 0: validation tie at 2000/3000 -> 2000; solved; first test below threshold at 1000.
    # seed 1: the NaN validation at 1000 is ignored; best at 2000 where test is high.
    # seed 2: solved at its best step but diverged -> not solved.
    # seed 3: all validation NaN -> best index 0; NaN test -> not solved.
    valid = np.array(
        [[5.0, 2.0, 1.0, 1.0], [4.0, nan, 2.0, 3.0], [3.0, 0.5, 1.0, 1.0], [nan, nan, nan, nan]]
    ).T
    test = np.array(
        [[9.0, 1e-3, 1e-3, 9.0], [1e-3, 9.0, 9.0, 9.0], [9.0, 1e-4, 9.0, 9.0], [nan] * 4]
    ).T
    sparsity = np.array(
        [[0.4, 0.4, 0.1, 0.3], [0.3, 0.4, 0.2, 0.1], [0.2, 0.05, 0.2, 0.2], [nan] * 4]
    ).T
    diverged = np.array([False, False, True, False])
    j = judge_seeds(steps, valid, test, sparsity, threshold=1e-2, diverged=diverged)
    np.testing.assert_array_equal(j["best_index"], [2, 2, 1, 0])
    np.testing.assert_array_equal(j["best_step"], [2000, 2000, 1000, 0])
    np.testing.assert_array_equal(j["solved"], [True, False, False, False])
    np.testing.assert_array_equal(j["diverged"], diverged)
    np.testing.assert_array_equal(j["solved_at"], [1000.0, nan, nan, nan])
    np.testing.assert_array_equal(j["sparsity_error"], [0.1, nan, nan, nan])
    np.testing.assert_array_equal(j["interpolation_mse"], [1.0, 2.0, 0.5, nan])
    np.testing.assert_array_equal(j["extrapolation_mse"], [1e-3, 9.0, 1e-4, nan])


def test_judge_seeds_tie_takes_earliest():
    valid = np.array([[2.0], [1.0], [1.0]])
    test = np.array([[5.0], [1e-3], [1e-6]])
    j = judge_seeds([0, 10, 20], valid, test, np.zeros((3, 1)), threshold=1e-2)
    assert j["best_step"][0] == 10 and j["solved"][0] and j["solved_at"][0] == 10.0
    assert not j["diverged"][0]


def test_judge_seeds_select_from_keeps_the_later_evaluations():
    # seed 0's lowest validation is at 1000 (test 1e-3, sparsity 0.1); from step 2000 on its
    # lowest is at 3000 (test 1e-4, sparsity 0.3). Seed 1 is best at 2000 either way, unsolved;
    # solved_at still reads every evaluation (seed 0: 1000)
    steps = [0, 1000, 2000, 3000]
    valid = np.array([[5.0, 1.0, 3.0, 2.0], [5.0, 4.0, 0.5, 0.5]]).T
    test = np.array([[9.0, 1e-3, 9.0, 1e-4], [9.0, 9.0, 5.0, 9.0]]).T
    sparsity = np.array([[0.4, 0.1, 0.2, 0.3], [0.4, 0.3, 0.2, 0.1]]).T
    j = judge_seeds(steps, valid, test, sparsity, threshold=1e-2)
    np.testing.assert_array_equal(j["best_step"], [1000, 2000])
    np.testing.assert_array_equal(j["sparsity_error"], [0.1, np.nan])
    for select_from in (1001, 2000):
        j = judge_seeds(steps, valid, test, sparsity, threshold=1e-2, select_from=select_from)
        np.testing.assert_array_equal(j["best_index"], [3, 2])
        np.testing.assert_array_equal(j["best_step"], [3000, 2000])
        np.testing.assert_array_equal(j["solved"], [True, False])
        np.testing.assert_array_equal(j["solved_at"], [1000.0, np.nan])
        np.testing.assert_array_equal(j["sparsity_error"], [0.3, np.nan])
        np.testing.assert_array_equal(j["interpolation_mse"], [2.0, 0.5])
        np.testing.assert_array_equal(j["extrapolation_mse"], [1e-4, 5.0])
    j = judge_seeds(steps, valid, test, sparsity, threshold=1e-2, select_from=3000)
    np.testing.assert_array_equal(j["best_step"], [3000, 3000])
    with pytest.raises(ValueError, match="select_from=3001 is after the last evaluation"):
        judge_seeds(steps, valid, test, sparsity, threshold=1e-2, select_from=3001)


def test_judge_seeds_shape_errors():
    with pytest.raises(ValueError, match="test_mse"):
        judge_seeds([0, 1], np.zeros((2, 3)), np.zeros((2, 2)), np.zeros((2, 3)), 1.0)
    with pytest.raises(ValueError, match="diverged"):
        judge_seeds([0, 1], np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), 1.0, [True])


def test_summarize():
    judgement = {
        "solved": np.array([True, True, True, False, False]),
        "diverged": np.array([False, False, False, True, False]),
        "solved_at": np.array([1000.0, 2000.0, 6000.0, np.nan, np.nan]),
        "sparsity_error": np.array([0.1, 0.2, 0.3, np.nan, np.nan]),
    }
    s = summarize(judgement, threshold=1e-5)
    assert (s["num_seeds"], s["solved"], s["diverged"]) == (5, 3, 1)
    assert s["success_rate"] == pytest.approx(0.6)
    assert s["success_interval"] == pytest.approx(wilson_interval(3, 5))
    assert s["solved_at_median"] == 2000.0 and s["solved_at_mean"] == 3000.0
    half = 4.302652729 * np.std([1000, 2000, 6000], ddof=1) / math.sqrt(3)
    assert s["solved_at_interval"] == pytest.approx((3000.0 - half, 3000.0 + half))
    assert s["sparsity_error_mean"] == pytest.approx(0.2)
    assert s["threshold"] == 1e-5


def test_summarize_nothing_solved():
    judgement = {
        "solved": np.zeros(4, bool),
        "diverged": np.zeros(4, bool),
        "solved_at": np.full(4, np.nan),
        "sparsity_error": np.full(4, np.nan),
    }
    s = summarize(judgement, threshold=1.0)
    assert s["success_rate"] == 0.0 and s["success_interval"][0] == 0.0
    assert math.isnan(s["solved_at_median"]) and math.isnan(s["solved_at_mean"])
