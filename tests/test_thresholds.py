"""Success thresholds: reference values, closed forms, and the cache."""

import json

import numpy as np
import pytest

from nalu_jax.tasks import (
    ArithmeticTask,
    cache_path,
    clear_threshold_cache,
    single_module_task,
    subset_masks,
    success_threshold,
)
from nalu_jax.tasks import thresholds as thresholds_module


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NALU_JAX_CACHE", str(tmp_path / "cache"))
    clear_threshold_cache()
    yield tmp_path / "cache"
    clear_threshold_cache()


def _moments(rng):
    """(E[x], E[x²], E[|x|]) of U[lo, hi), or of an equal mixture of two such intervals."""
    if isinstance(rng[0], tuple):
        a, b = _moments(rng[0]), _moments(rng[1])
        return tuple(0.5 * (u + v) for u, v in zip(a, b, strict=True))
    lo, hi = rng
    abs_integral = (np.sign(hi) * hi * hi - np.sign(lo) * lo * lo) / 2
    return (lo + hi) / 2, (lo * lo + lo * hi + hi * hi) / 3, abs_integral / (hi - lo)


def _independent_threshold(op: str, samples: int = 400_000, eps: float = 1e-5) -> float:
    """The default configuration's threshold by a plain float64 Monte-Carlo of the rule
    (ICLR 2020 §4.1), sharing no code with ``success_threshold``: 100 inputs from the
    extrapolation range U[2, 6], subsets of 25 overlapping in 12, the first layer's weights
    1 − ε on a subset and ε elsewhere; the mean of (f(W^ε) − f(W⁰))²."""
    rng, total = np.random.default_rng(0), 0.0
    for _ in range(samples // 100_000):
        x = rng.uniform(2.0, 6.0, size=(100_000, 100))
        a, b, s = x[:, 0:25].sum(1), x[:, 13:38].sum(1), x.sum(1)
        a_eps, b_eps = (1 - eps) * a + eps * (s - a), (1 - eps) * b + eps * (s - b)
        change = (a_eps + b_eps) - (a + b) if op == "add" else a_eps * b_eps - a * b
        total += float(np.sum(change**2))
    return total / samples


def test_reference_values_default_configuration():
    """The values docs/protocols.md tables (add 1.60·10⁻⁵, mul 0.1605), and an independent
    simulation of the rule within its Monte-Carlo error."""
    add = success_threshold(ArithmeticTask("add"))
    mul = success_threshold(ArithmeticTask("mul"))
    assert add == pytest.approx(1.60e-5, rel=0.01)
    assert mul == pytest.approx(0.1606, rel=0.02)
    assert add == pytest.approx(_independent_threshold("add"), rel=0.01)
    assert mul == pytest.approx(_independent_threshold("mul"), rel=0.01)


@pytest.mark.parametrize(
    "task",
    [
        ArithmeticTask("add"),
        ArithmeticTask("add", input_size=20, subset_ratio=0.4, overlap_ratio=0.25, num_subsets=3),
        ArithmeticTask("add", extrapolation_range=((-6.0, -2.0), (2.0, 6.0))),
        ArithmeticTask("sub"),
    ],
)
def test_arithmetic_closed_form(task):
    eps = 1e-5
    masks = np.asarray(subset_masks(task, 0), np.float64)
    # f(W^ε) − f(W⁰) = c·x with c the change of each input's total weight in the target
    weights = eps * (1 - 2 * masks)
    c = weights.sum(0) if task.op == "add" else weights[0] - weights[1]
    mean, second, _ = _moments(task.extrapolation_range)
    expected = (second - mean**2) * np.sum(c**2) + mean**2 * np.sum(c) ** 2
    simulated = success_threshold(task, num_samples=200_000)
    assert simulated == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize(
    "op, range_index, input_size",
    [("add", 7, 2), ("sub", 5, 2), ("add", 4, 10), ("sub", 9, 100)],
)
def test_single_module_closed_form(op, range_index, input_size):
    eps = 1e-4
    task = single_module_task(op, range_index, input_size)
    _, second, absolute = _moments(task.extrapolation_range)
    # pred_ε − pred₀ = −ε·Σ_all |x|
    n = task.input_size
    expected = eps**2 * (n * second + n * (n - 1) * absolute**2)
    simulated = success_threshold(task, kind="single_module", num_samples=200_000)
    assert simulated == pytest.approx(expected, rel=0.01)


def test_single_module_mul_and_div_exact_without_irrelevant_inputs():
    eps = 1e-4
    mul = single_module_task("mul", 7)
    _, second, _ = _moments(mul.extrapolation_range)
    expected = ((1 - eps) ** 2 - 1) ** 2 * second**2
    assert success_threshold(mul, kind="single_module", num_samples=200_000) == pytest.approx(
        expected, rel=0.01
    )
    div = single_module_task("div", 7)
    ratio_sq = second * (1 / (2 * 6))  # E[x₁²]·E[1/x₂²], x₂ ~ U[2, 6)
    expected = ((1 - eps) / (1 + eps) - 1) ** 2 * ratio_sq
    assert success_threshold(div, kind="single_module", num_samples=200_000) == pytest.approx(
        expected, rel=0.01
    )


def test_threshold_orders_and_argument_errors():
    small = success_threshold(ArithmeticTask("mul", simple=True), num_samples=10_000)
    assert np.isfinite(small) and small > 0
    with pytest.raises(ValueError, match="kind"):
        success_threshold(ArithmeticTask("add"), kind="recurrent")
    with pytest.raises(ValueError, match="op"):
        success_threshold(ArithmeticTask("squared"), kind="single_module")
    with pytest.raises(ValueError, match="num_samples"):
        success_threshold(ArithmeticTask("add"), num_samples=0)


def test_cache_hit_is_identical_and_skips_simulation(isolated_cache, monkeypatch):
    task = ArithmeticTask("mul", input_size=10)
    first = success_threshold(task, num_samples=5_000)
    assert cache_path() == isolated_cache / "thresholds.json"
    stored = json.loads(cache_path().read_text())
    assert list(stored.values()) == [first]

    def fail(*args, **kwargs):
        raise AssertionError("simulated despite a cached value")

    monkeypatch.setattr(thresholds_module, "simulate_threshold", fail)
    assert success_threshold(task, num_samples=5_000) == first
    clear_threshold_cache()
    assert success_threshold(task, num_samples=5_000) == first


def test_cache_key_distinguishes_configurations():
    a = success_threshold(ArithmeticTask("add", input_size=10), num_samples=5_000)
    b = success_threshold(ArithmeticTask("add", input_size=10), num_samples=5_000, epsilon=1e-4)
    assert b == pytest.approx(100 * a, rel=1e-3)
    assert len(json.loads(cache_path().read_text())) == 2


def test_corrupt_cache_is_recomputed_and_repaired(isolated_cache):
    task = ArithmeticTask("add", input_size=10)
    value = success_threshold(task, num_samples=5_000)
    clear_threshold_cache()
    cache_path().write_text("{not json")
    assert success_threshold(task, num_samples=5_000) == value
    assert list(json.loads(cache_path().read_text()).values()) == [value]
    clear_threshold_cache()
    cache_path().write_text("[1, 2]")
    assert success_threshold(task, num_samples=5_000) == value


def test_unwritable_cache_still_returns(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("NALU_JAX_CACHE", str(blocker))
    value = success_threshold(ArithmeticTask("add", input_size=10), num_samples=5_000)
    assert np.isfinite(value)
