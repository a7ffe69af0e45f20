"""The battery every registered unit must pass, plus known-weight tests of the NAU/NMU family.

Each test in the first part is parametrised over ``sorted(UNITS)``, so a unit added to the
registry is tested without touching this file.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.units import NAU, NMU, SNMU, UNITS, make_unit

IN, OUT, BATCH = 3, 2, 4
NAMES = sorted(UNITS)
REG_KEYS = {"sparse", "z", "gate", "l1", "inalu"}


def _build(name, seed=0):
    return UNITS[name](IN, OUT, rngs=nnx.Rngs(params=jax.random.key(seed)))


def _x(seed=0):
    return jax.random.uniform(jax.random.key(100 + seed), (BATCH, IN), minval=1.0, maxval=2.0)


def _finite(tree) -> bool:
    leaves = jax.tree.leaves(tree)
    return bool(leaves) and all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in leaves)


def _assert_trees_close(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for la, lb in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(la, lb, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------- registry battery


@pytest.mark.parametrize("name", NAMES)
def test_output_shape(name):
    unit = _build(name)
    assert unit(_x()).shape == (BATCH, OUT)
    assert unit(_x(), training=True, key=jax.random.key(1)).shape == (BATCH, OUT)


@pytest.mark.parametrize("name", NAMES)
def test_jit_equals_eager(name):
    unit, x, key = _build(name), _x(), jax.random.key(1)
    graphdef, state = nnx.split(unit)

    @jax.jit
    def apply(state, x, key):
        model = nnx.merge(graphdef, state)
        return model(x), model(x, training=True, key=key)

    evaluated, trained = apply(state, x, key)
    np.testing.assert_allclose(evaluated, unit(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trained, unit(x, training=True, key=key), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_finite_gradients_at_init(name):
    graphdef, params, rest = nnx.split(_build(name), nnx.Param, ...)
    x, key = _x(), jax.random.key(1)

    def loss(params):
        y = nnx.merge(graphdef, params, rest)(x, training=True, key=key)
        return jnp.mean(y**2)

    value, grads = jax.jit(jax.value_and_grad(loss))(params)
    assert np.isfinite(value)
    assert _finite(grads), f"{name}: non-finite gradient {grads}"


@pytest.mark.parametrize("name", NAMES)
def test_vmap_over_seeds_equals_single_runs(name):
    cls = UNITS[name]

    def init(key):
        return nnx.split(cls(IN, OUT, rngs=nnx.Rngs(params=key)))[1]

    graphdef = nnx.split(_build(name))[0]
    keys = jax.random.split(jax.random.key(7), 2)
    states = jax.vmap(init)(keys)
    singles = [init(keys[0]), init(keys[1])]
    for i, single in enumerate(singles):
        _assert_trees_close(jax.tree.map(lambda leaf, i=i: leaf[i], states), single)

    x = _x()
    apply = lambda state: nnx.merge(graphdef, state)(x)
    batched = jax.jit(jax.vmap(apply))(states)
    assert batched.shape == (2, BATCH, OUT)
    for i, single in enumerate(singles):
        np.testing.assert_allclose(batched[i], apply(single), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_regularizers_are_finite_scalars(name):
    regs = _build(name).regularizers(_x())
    assert isinstance(regs, dict)
    assert set(regs) <= REG_KEYS, f"{name}: unknown regulariser keys {set(regs) - REG_KEYS}"
    for key, value in regs.items():
        assert jnp.shape(value) == (), f"{name}: {key} is not a scalar"
        assert np.isfinite(value), f"{name}: {key} = {value}"


@pytest.mark.parametrize("name", NAMES)
def test_project_keeps_finite(name):
    unit = _build(name)
    unit.project()
    assert _finite(nnx.state(unit, nnx.Param))
    assert _finite(unit(_x()))


@pytest.mark.parametrize("name", NAMES)
def test_sparsity_error(name):
    unit = _build(name)
    err = unit.sparsity_error()
    assert jnp.shape(err) == ()
    if unit.is_arithmetic:
        assert np.isfinite(err) and 0.0 <= err <= 0.5 + 1e-6
    else:
        assert np.isnan(err)


@pytest.mark.parametrize("name", NAMES)
def test_bad_sizes_name_the_argument(name):
    rngs = nnx.Rngs(0)
    with pytest.raises(ValueError, match="in_features"):
        UNITS[name](0, OUT, rngs=rngs)
    with pytest.raises(ValueError, match="out_features"):
        UNITS[name](IN, -1, rngs=rngs)
    with pytest.raises(ValueError, match="in_features"):
        make_unit(name, -2, OUT, rngs=rngs)


def test_unknown_unit_name():
    with pytest.raises(ValueError, match="unit"):
        make_unit("not_a_unit", IN, OUT, rngs=nnx.Rngs(0))


# ------------------------------------------------------------- NAU/NMU known weights


def _with_w(unit, w):
    unit.w[...] = jnp.asarray(w, jnp.float32)
    return unit


def _jit_apply(unit, x, **kwargs):
    graphdef, state = nnx.split(unit)
    return jax.jit(lambda s, x: nnx.merge(graphdef, s)(x, **kwargs))(state, jnp.asarray(x))


def test_nau_adds_and_subtracts():
    x = [[2.0, 3.0], [-1.5, 4.0]]
    add = _with_w(NAU(2, 1, rngs=nnx.Rngs(0)), [[1.0], [1.0]])
    sub = _with_w(NAU(2, 1, rngs=nnx.Rngs(0)), [[1.0], [-1.0]])
    np.testing.assert_allclose(_jit_apply(add, x), [[2.0 + 3.0], [-1.5 + 4.0]])
    np.testing.assert_allclose(_jit_apply(sub, x), [[2.0 - 3.0], [-1.5 - 4.0]])


def test_nmu_multiplies_and_ignores():
    x = [[2.0, 3.0], [-1.5, 4.0]]
    mul = _with_w(NMU(2, 2, rngs=nnx.Rngs(0)), [[1.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(_jit_apply(mul, x), [[2.0 * 3.0, 1.0], [-1.5 * 4.0, 1.0]])


def test_snmu_matches_nmu_at_evaluation():
    w = [[0.3, 1.0], [0.8, 1.0], [0.0, 0.5]]
    x = [[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]]
    snmu = _with_w(SNMU(3, 2, rngs=nnx.Rngs(0)), w)
    nmu = _with_w(NMU(3, 2, rngs=nnx.Rngs(1)), w)
    np.testing.assert_allclose(_jit_apply(snmu, x), _jit_apply(nmu, x), rtol=1e-6)
    # With W ∈ {0, 1} the noise cancels exactly: ∏(x_i·n_i) / ∏ n_i = ∏ x_i.
    exact = _with_w(SNMU(3, 1, rngs=nnx.Rngs(0)), [[1.0], [1.0], [0.0]])
    out = _jit_apply(exact, x, training=True, key=jax.random.key(3))
    np.testing.assert_allclose(out, [[1.5 * -2.0], [0.5 * 4.0]], rtol=1e-5)


def test_nmu_normalized_by_hand():
    # c = unbiased std of all four entries {1, 2, 3, 6} (torch.std): mean 3, variance 14/3.
    x = [[1.0, 2.0], [3.0, 6.0]]
    c = math.sqrt(14.0 / 3.0)
    unit = _with_w(NMU(2, 1, rngs=nnx.Rngs(0), normalized=True), [[1.0], [0.5]])
    expected = [
        [(1.0 / c) * (0.5 * 2.0 / c + 0.5) * c**1.5],
        [(3.0 / c) * (0.5 * 6.0 / c + 0.5) * c**1.5],
    ]
    np.testing.assert_allclose(_jit_apply(unit, x), expected, rtol=1e-5)
    # W ∈ {0, 1}: normalisation cancels and the product is exact.
    exact = _with_w(NMU(2, 1, rngs=nnx.Rngs(0), normalized=True), [[1.0], [1.0]])
    np.testing.assert_allclose(_jit_apply(exact, x), [[1.0 * 2.0], [3.0 * 6.0]], rtol=1e-5)


def test_nmu_variance_init_moments():
    w = np.asarray(NMU(300, 400, rngs=nnx.Rngs(2), init="variance").w[...])
    assert w.min() >= 0.0 and w.max() <= 1.0
    # W = clip(½ + ½·Z, 0, 1), Z ~ N(0, 1): mean ½, Var = ¼·(1 − 2φ(1)), P(W ∈ {0, 1}) = P(|Z| > 1).
    phi1 = math.exp(-0.5) / math.sqrt(2.0 * math.pi)
    np.testing.assert_allclose(w.mean(), 0.5, atol=0.003)
    np.testing.assert_allclose(w.var(), 0.25 * (1.0 - 2.0 * phi1), rtol=0.02)
    np.testing.assert_allclose(
        np.mean((w == 0.0) | (w == 1.0)), math.erfc(1 / math.sqrt(2)), atol=0.005
    )
    with pytest.raises(ValueError, match="init"):
        NMU(2, 1, rngs=nnx.Rngs(0), init="normal")


def test_snmu_r_z_is_taken_on_the_noised_input():
    # In training the reference stores x ⊙ n for R_z; the same key draws the same n.
    snmu = _with_w(SNMU(3, 2, rngs=nnx.Rngs(0)), [[0.2, 1.0], [0.7, 0.0], [0.5, 0.4]])
    x = jnp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    key = jax.random.key(3)
    noised = snmu.regularizers(x, training=True, key=key)
    n = snmu.noise(x, key)
    np.testing.assert_allclose(noised["z"], NMU.regularizers(snmu, x * n)["z"], rtol=1e-6)
    assert not np.allclose(noised["z"], snmu.regularizers(x)["z"])
    np.testing.assert_allclose(snmu(x, training=True, key=key), snmu.noised(x, n), rtol=1e-6)
