"""The counter-based training sampler: distribution and independence (nalu_jax.rng)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nalu_jax import rng
from nalu_jax.tasks import sample_inputs


def draws(keys, shape=(128, 100)):
    f = jax.jit(jax.vmap(lambda k: rng.uniform(k, shape, 1.0, 2.0)))
    return np.asarray(f(keys), np.float64)


def test_moments_and_range():
    x = draws(jax.random.split(jax.random.key(0), 64))  # 819,200 draws from U[1, 2)
    assert x.min() >= 1.0 and x.max() < 2.0
    n = x.size
    assert abs(x.mean() - 1.5) < 4 * np.sqrt(1 / 12 / n)
    assert abs(x.var() - 1 / 12) < 4 * np.sqrt((1 / 80 - 1 / 144) / n)  # Var of (x − μ)²
    # third central moment of a uniform is 0, fourth is w⁴/80
    assert abs(np.mean((x - 1.5) ** 3)) < 1e-3
    assert abs(np.mean((x - 1.5) ** 4) - 1 / 80) < 5e-4


def test_uniform_histogram_chi_square():
    x = draws(jax.random.split(jax.random.key(1), 32)).ravel() - 1.0
    counts, _ = np.histogram(x, bins=100, range=(0.0, 1.0))
    expected = x.size / 100
    chi2 = np.sum((counts - expected) ** 2 / expected)
    # 99 degrees of freedom: mean 99, sd ≈ 14; 99 + 5 sd is a fixed, far-tail bound
    assert chi2 < 170, chi2


def _max_abs_corr(a, b):
    a = (a - a.mean()) / a.std()
    b = (b - b.mean()) / b.std()
    return abs(np.mean(a * b))


def test_independent_across_elements_seeds_and_steps():
    root = jax.random.key(7)
    seeds = jax.vmap(lambda s: jax.random.fold_in(root, s))(jnp.arange(8))
    step_keys = jax.vmap(lambda k: jax.vmap(lambda t: jax.random.fold_in(k, t))(jnp.arange(4)))(
        seeds
    )
    x = draws(step_keys.reshape(-1)).reshape(8, 4, 128 * 100)
    bound = 5 / np.sqrt(128 * 100)  # 5 standard errors of a correlation of 12,800 pairs
    for s in range(7):
        assert _max_abs_corr(x[s, 0], x[s + 1, 0]) < bound  # neighbouring seeds, same step
        assert _max_abs_corr(x[s, 0], x[s, 1]) < bound  # same seed, neighbouring steps
        assert _max_abs_corr(x[s, 0, :-1], x[s, 0, 1:]) < bound  # neighbouring elements
    assert not np.any(np.all(x[:, :, :100] == x[0, 0, :100], axis=-1)[1:])


def test_same_key_same_stream_and_threefry_option():
    k = jax.random.key(3)
    a = np.asarray(rng.uniform(k, (4, 5), 0.0, 1.0))
    assert np.array_equal(a, np.asarray(rng.uniform(k, (4, 5), 0.0, 1.0)))
    t = np.asarray(rng.uniform(k, (4, 5), 0.0, 1.0, sampler="threefry"))
    assert np.array_equal(t, np.asarray(jax.random.uniform(k, (4, 5))))
    with pytest.raises(ValueError, match="sampler"):
        rng.uniform(k, (2,), sampler="mt19937")


def test_two_interval_range_with_hash_sampler():
    x = np.asarray(
        sample_inputs(jax.random.key(5), (200_000,), ((-6.0, -2.0), (2.0, 6.0)), sampler="hash")
    )
    assert np.all((x >= -6) & (x < 6)) and not np.any((x >= -2) & (x < 2))
    assert abs(np.mean(x < 0) - 0.5) < 5 * np.sqrt(0.25 / x.size)


# Random123's known-answer vectors for threefry2x32 with 20 rounds (kat_vectors):
# (key0, key1, counter0, counter1) -> (out0, out1).
THREEFRY_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


@pytest.mark.parametrize("vector", THREEFRY_KAT)
def test_unrolled_threefry_lowering_gives_the_known_answers(vector):
    from jax.extend.random import threefry_2x32

    (k0, k1, c0, c1), expected = vector
    key = jnp.array([k0, k1], jnp.uint32)
    count = jnp.array([c0, c1], jnp.uint32)
    out = jax.jit(threefry_2x32)(key, count)
    assert [int(v) for v in np.asarray(out)] == list(expected)


def test_threefry_runs_unrolled_on_cpu_without_a_while_loop():
    # The step key's fold_in used to lower to a 5-iteration while loop on CPU.
    assert rng.UNROLLED_THREEFRY
    hlo = jax.jit(lambda k: jax.random.fold_in(k, 3)).lower(jax.random.key(0)).as_text()
    assert "while" not in hlo


def test_values_drawn_ahead_scale_to_the_same_bits():
    words = rng.derive(jax.random.key(3))
    for lo, hi in ((0.0, 1.0), (1.0, 2.0), (-6.1, -1.2), (0.0, 2.0)):
        direct = np.asarray(rng.uniform(words, (64, 3), lo, hi))
        ahead = np.asarray(rng.uniform(rng.units(words, (64, 3)), (64, 3), lo, hi))
        np.testing.assert_array_equal(direct, ahead)
    x = sample_inputs(rng.units(words, (64, 3)), (64, 3), (1.0, 2.0), sampler="hash")
    np.testing.assert_array_equal(x, sample_inputs(words, (64, 3), (1.0, 2.0), sampler="hash"))
    with pytest.raises(ValueError, match="drawn ahead for shape"):
        rng.uniform(rng.units(words, (64, 3)), (3, 64))
