"""NPU, RealNPU, NRU and NMRU: hand-computed values (eager and jitted), regularisers,
projections and initialisation statistics."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.units import NMRU, NPU, NRU, RealNPU


def _set(unit, **params):
    for name, value in params.items():
        getattr(unit, name)[...] = jnp.asarray(value, jnp.float32)
    return unit


def _apply_both(unit, x, training=False):
    """The unit's output on ``x``, eagerly and through ``jax.jit``; asserts the two agree."""
    x = jnp.asarray(x, jnp.float32)
    graphdef, state = nnx.split(unit)

    @jax.jit
    def apply(state, x):
        return nnx.merge(graphdef, state)(x, training=training)

    eager, jitted = unit(x, training=training), apply(state, x)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6, atol=1e-7)
    return np.asarray(jitted)


# ------------------------------------------------------------------------ NPU, RealNPU

NPUS = [NPU, RealNPU]


@pytest.mark.parametrize("cls", NPUS)
def test_npu_multiplies_signed_inputs(cls):
    unit = _set(cls(2, 1, rngs=nnx.Rngs(0)), g=[1.0, 1.0], w_re=[[1.0], [1.0]])
    x = [[-2.0, 3.0], [-2.0, -3.0], [2.0, 3.0], [2.0, -3.0]]
    expected = [[-2.0 * 3.0], [-2.0 * -3.0], [2.0 * 3.0], [2.0 * -3.0]]
    np.testing.assert_allclose(_apply_both(unit, x), expected, rtol=1e-5)


@pytest.mark.parametrize("cls", NPUS)
def test_npu_divides_signed_inputs(cls):
    unit = _set(cls(2, 1, rngs=nnx.Rngs(0)), g=[1.0, 1.0], w_re=[[1.0], [-1.0]])
    x = [[6.0, 3.0], [-6.0, 3.0], [6.0, -3.0], [-6.0, -3.0]]
    expected = [[6.0 / 3.0], [-6.0 / 3.0], [6.0 / -3.0], [-6.0 / -3.0]]
    np.testing.assert_allclose(_apply_both(unit, x), expected, rtol=1e-5)


@pytest.mark.parametrize("cls", NPUS)
def test_npu_closed_gate_ignores_input(cls):
    # g = 0 makes r = 1 and k = 0 for that input, whatever its value or weight.
    unit = _set(cls(2, 1, rngs=nnx.Rngs(0)), g=[1.0, 0.0], w_re=[[1.0], [1.0]])
    np.testing.assert_allclose(_apply_both(unit, [[-2.0, 5.0], [-2.0, -7.0]]), [[-2.0]] * 2)


def test_npu_imaginary_weight():
    # Re[(−2)^{1 + i/2}] = 2·e^{−π/2}·cos(π + ln(2)/2).
    unit = _set(NPU(2, 1, rngs=nnx.Rngs(0)), g=[1.0, 1.0], w_re=[[1.0], [0.0]], w_im=[[0.5], [0.0]])
    expected = 2.0 * math.exp(-math.pi / 2) * math.cos(math.pi + 0.5 * math.log(2.0))
    np.testing.assert_allclose(_apply_both(unit, [[-2.0, 3.0]]), [[expected]], rtol=1e-5)


def test_npu_half_gate():
    # ĝ = ½: r = ½(|x| + ε) + ½, k = ½π for x < 0; W_re = 2 → y = r²·cos(π·1[x<0]).
    unit = _set(RealNPU(1, 1, rngs=nnx.Rngs(0)), w_re=[[2.0]])
    out = _apply_both(unit, [[3.0], [-3.0]])
    np.testing.assert_allclose(
        out, [[(0.5 * 3 + 0.5) ** 2], [(0.5 * 3 + 0.5) ** 2 * -1.0]], rtol=1e-5
    )


def test_npu_l1_regularizer():
    unit = _set(
        NPU(2, 1, rngs=nnx.Rngs(0)),
        w_re=[[1.0], [-2.0]],
        w_im=[[0.5], [0.0]],
        g=[0.5, -0.25],
    )
    reg = unit.regularizers(jnp.ones((3, 2)))
    assert set(reg) == {"l1"}
    np.testing.assert_allclose(reg["l1"], 1.0 + 2.0 + 0.5 + 0.0 + 0.5 + 0.25)
    real = _set(RealNPU(2, 1, rngs=nnx.Rngs(0)), w_re=[[1.0], [-2.0]], g=[0.5, -0.25])
    np.testing.assert_allclose(real.regularizers(jnp.ones((3, 2)))["l1"], 1.0 + 2.0 + 0.5 + 0.25)


def test_npu_projection_only_when_asked():
    values = dict(w_re=[[3.0], [-3.0]], w_im=[[2.0], [-0.5]], g=[1.5, -0.2])
    unit = _set(NPU(2, 1, rngs=nnx.Rngs(0), project=True), **values)
    unit.project()
    np.testing.assert_array_equal(unit.w_re[...], [[1.0], [-1.0]])
    np.testing.assert_array_equal(unit.w_im[...], [[1.0], [-0.5]])
    np.testing.assert_array_equal(unit.g[...], [1.0, 0.0])
    free = _set(NPU(2, 1, rngs=nnx.Rngs(0)), **values)
    free.project()
    for name, value in values.items():
        np.testing.assert_array_equal(getattr(free, name)[...], np.asarray(value, np.float32))
    real = _set(RealNPU(2, 1, rngs=nnx.Rngs(0), project=True), w_re=[[3.0], [-3.0]], g=[2.0, 0.3])
    real.project()
    np.testing.assert_array_equal(real.w_re[...], [[1.0], [-1.0]])
    np.testing.assert_allclose(real.g[...], [1.0, 0.3])


@pytest.mark.parametrize("cls", NPUS)
def test_npu_init_statistics(cls):
    fan_in, fan_out = 200, 300
    unit = cls(fan_in, fan_out, rngs=nnx.Rngs(1))
    w = np.asarray(unit.w_re[...])
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    assert w.shape == (fan_in, fan_out)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.mean()) < 0.01 * bound
    np.testing.assert_allclose(w.var(), bound**2 / 3.0, rtol=0.03)
    np.testing.assert_array_equal(unit.g[...], np.full(fan_in, 0.5))
    if cls is NPU:
        np.testing.assert_array_equal(unit.w_im[...], np.zeros((fan_in, fan_out)))
    else:
        assert not hasattr(unit, "w_im")
    assert cls.multiplicative
    np.testing.assert_array_equal(unit.sparsity_weights()[0], w)


def test_npu_nau_init_and_bad_init():
    w = np.asarray(NPU(200, 300, rngs=nnx.Rngs(2), init="nau").w_re[...])
    bound = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / 500))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    np.testing.assert_allclose(w.var(), bound**2 / 3.0, rtol=0.03)
    with pytest.raises(ValueError, match="init"):
        RealNPU(2, 1, rngs=nnx.Rngs(0), init="he")


# ------------------------------------------------------------------------------- NRU


def test_nru_divides_signed_inputs():
    unit = _set(NRU(2, 1, rngs=nnx.Rngs(0)), w=[[1.0], [-1.0]])
    x = [[6.0, 3.0], [-6.0, 3.0], [6.0, -3.0], [-6.0, -3.0]]
    expected = [[6.0 / 3.0], [-6.0 / 3.0], [6.0 / -3.0], [-6.0 / -3.0]]
    for training in (False, True):
        np.testing.assert_allclose(_apply_both(unit, x, training), expected, rtol=1e-6)


def test_nru_multiplies_and_ignores():
    unit = _set(NRU(3, 2, rngs=nnx.Rngs(0)), w=[[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    out = _apply_both(unit, [[-2.0, 3.0, 5.0]])
    np.testing.assert_allclose(out, [[-2.0 * 3.0, 1.0]], rtol=1e-6)


def test_nru_fractional_weight_and_tanh_abs():
    # W = ½ on x = 4: eval term = 4^½·½ + ½; with tanh_abs in training |W| → tanh(500)² = 1.
    x = [[4.0, 7.0]]
    w = [[0.5], [0.0]]
    plain = _set(NRU(2, 1, rngs=nnx.Rngs(0), tanh_abs=False), w=w)
    sharp = _set(NRU(2, 1, rngs=nnx.Rngs(0)), w=w)  # tanh_abs is the default, as the reference
    np.testing.assert_allclose(_apply_both(plain, x, True), [[2.0 * 0.5 + 0.5]], rtol=1e-6)
    np.testing.assert_allclose(_apply_both(sharp, x, False), [[2.0 * 0.5 + 0.5]], rtol=1e-6)
    np.testing.assert_allclose(_apply_both(sharp, x, True), [[2.0]], rtol=1e-6)


def test_nru_zero_input_is_finite():
    # sign(0) = 0, so a zero input contributes 1 − |W|; values and gradients stay finite.
    unit = _set(NRU(2, 1, rngs=nnx.Rngs(0)), w=[[0.5], [-0.5]])
    x = jnp.array([[0.0, 3.0], [3.0, 0.0]])
    out = _apply_both(unit, x)
    np.testing.assert_allclose(out[0, 0], 0.5 * (3.0**-0.5 * 0.5 + 0.5), rtol=1e-6)
    np.testing.assert_allclose(out[1, 0], (3.0**0.5 * 0.5 + 0.5) * 0.5, rtol=1e-6)
    graphdef, state = nnx.split(unit)
    grads = jax.grad(lambda s, x: nnx.merge(graphdef, s)(x).sum(), argnums=(0, 1))(state, x)
    assert all(np.isfinite(g).all() for g in jax.tree.leaves(grads))


def test_nru_regularizer_projection_init():
    unit = _set(NRU(2, 2, rngs=nnx.Rngs(0)), w=[[0.25, -0.75], [1.5, -1.0]])
    reg = unit.regularizers(jnp.ones((3, 2)))
    assert set(reg) == {"sparse", "z"}
    # As the reference, on the raw weight: min(|W|, |1 − |W||) = [[.25, .25], [.5, 0]].
    np.testing.assert_allclose(reg["sparse"], (0.25 + 0.25 + 0.5 + 0.0) / 4)
    # R_z = mean((1 − |W|)·x̄²), x̄ = 1.
    np.testing.assert_allclose(reg["z"], (0.75 + 0.25 - 0.5 + 0.0) / 4)
    np.testing.assert_array_equal(unit.sparsity_weights()[0], [[0.25, -0.75], [1.5, -1.0]])
    unit.project()
    np.testing.assert_array_equal(unit.w[...], [[0.25, -0.75], [1.0, -1.0]])
    w = np.asarray(NRU(200, 300, rngs=nnx.Rngs(3)).w[...])
    bound = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / 500))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    np.testing.assert_allclose(w.var(), bound**2 / 3.0, rtol=0.03)
    assert NRU.multiplicative


# ------------------------------------------------------------------------------ NMRU


def test_nmru_divides_signed_inputs():
    # Rows of w: [x1, x2, 1/x1, 1/x2]; select x1 and 1/x2.
    unit = _set(NMRU(2, 1, rngs=nnx.Rngs(0)), w=[[1.0], [0.0], [0.0], [1.0]])
    x = [[6.0, 3.0], [-6.0, 3.0], [6.0, -3.0], [-6.0, -3.0]]
    expected = [[6.0 / 3.0], [-6.0 / 3.0], [6.0 / -3.0], [-6.0 / -3.0]]
    np.testing.assert_allclose(_apply_both(unit, x, False), expected, rtol=1e-6)
    # Training adds ε = float32 eps to the denominator: a relative change of ~1e-7.
    np.testing.assert_allclose(_apply_both(unit, x, True), expected, rtol=1e-5)


def test_nmru_partial_weight():
    # x' = [4, −2, ¼, −½] with W = [½, 0, 0, 1]: NMU = (½·4 + ½)·½, sign cos(π·1) = −1.
    unit = _set(NMRU(2, 1, rngs=nnx.Rngs(0)), w=[[0.5], [0.0], [0.0], [1.0]])
    np.testing.assert_allclose(
        _apply_both(unit, [[4.0, -2.0], [4.0, 2.0]]),
        [[(0.5 * 4 + 0.5) * 0.5 * -1.0], [(0.5 * 4 + 0.5) * 0.5]],
        rtol=1e-6,
    )


def test_nmru_regularizer_projection_init():
    unit = _set(NMRU(1, 2, rngs=nnx.Rngs(0)), w=[[0.25, 1.5], [-0.5, 0.9]])
    reg = unit.regularizers(jnp.ones((3, 1)))
    assert set(reg) == {"sparse", "z"}
    # As the reference, on the raw weight: min(|W|, |1 − W|) = [[.25, .5], [.5, .1]].
    np.testing.assert_allclose(reg["sparse"], (0.25 + 0.5 + 0.5 + 0.1) / 4, rtol=1e-6)
    # x' = [1, 1] → (1 − x̄')² = 0.
    np.testing.assert_allclose(reg["z"], 0.0, atol=1e-12)
    np.testing.assert_array_equal(
        unit.sparsity_weights()[0], np.float32([[0.25, 1.5], [-0.5, 0.9]])
    )
    unit.project()
    np.testing.assert_array_equal(unit.w[...], np.float32([[0.25, 1.0], [0.0, 0.9]]))
    w = np.asarray(NMRU(200, 300, rngs=nnx.Rngs(4)).w[...])
    assert w.shape == (400, 300)
    assert w.min() >= 0.25 and w.max() <= 0.75
    np.testing.assert_allclose(w.mean(), 0.5, atol=0.002)
    np.testing.assert_allclose(w.var(), 0.5**2 / 12.0, rtol=0.03)
    assert NMRU.multiplicative


@pytest.mark.parametrize("cls", [NPU, RealNPU, NRU, NMRU])
def test_finite_gradients_at_init_on_u12(cls):
    unit = cls(3, 2, rngs=nnx.Rngs(5))
    x = jax.random.uniform(jax.random.key(0), (8, 3), minval=1.0, maxval=2.0)
    graphdef, params = nnx.split(unit)
    loss = lambda p: jnp.sum(nnx.merge(graphdef, p)(x, training=True) ** 2)
    grads = jax.jit(jax.grad(loss))(params)
    leaves = jax.tree.leaves(grads)
    assert leaves and all(np.isfinite(g).all() for g in leaves)
    assert any(np.abs(g).max() > 0 for g in leaves)


def test_nru_keeps_a_tiny_selected_input_in_float32():
    # p·gate + (1 − gate) with gate = 1: p itself. Left to right, p + 1 − 1 = 0 for p = 3e-8.
    unit = _set(NRU(1, 1, rngs=nnx.Rngs(0)), w=[[1.0]])
    for training in (False, True):
        np.testing.assert_allclose(_apply_both(unit, [[3e-8]], training), [[3e-8]], rtol=1e-6)


def test_npu_l1_leaves_w_im_at_zero():
    # |·| has gradient 0 at 0 (the reference's L1 norm), so the L1 term alone does not move
    # W_im away from its initial 0; W_re and the gate get sign(θ).
    unit = NPU(2, 1, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(unit)
    grads = jax.grad(lambda s: nnx.merge(graphdef, s).regularizers(None)["l1"])(state)
    g = nnx.merge(graphdef, grads)
    np.testing.assert_array_equal(g.w_im[...], 0.0)
    np.testing.assert_array_equal(g.w_re[...], np.sign(unit.w_re[...]))
    np.testing.assert_array_equal(g.g[...], 1.0)
