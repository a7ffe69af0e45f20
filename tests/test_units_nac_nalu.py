"""NAC₊, NAC•, NAC•,σ, NAC•,NMU, NALU, G-NALU and iNALU: hand-computed numbers, always also
through ``jax.jit``, initialisation statistics, regularisers, projection and sparsity error."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.units import GNALU, INALU, NAC, NALU, NACMul, NACMulNMU, NACMulSigma, nac_radius

BIG = 20.0  # tanh(20) and σ(20) are 1 in float32
PHI = (1.0 + math.sqrt(5.0)) / 2.0


def run(unit, method, *args):
    """Call ``unit.method(*args)`` eagerly and under ``jax.jit`` on the split state; the two must
    agree, and the jitted result is returned."""
    graphdef, state = nnx.split(unit)

    def f(state, *args):
        return getattr(nnx.merge(graphdef, state), method)(*args)

    eager = f(state, *args)
    jitted = jax.jit(f)(state, *args)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), eager, jitted)
    return jitted


def apply(unit, x):
    return run(unit, "__call__", jnp.asarray(x, jnp.float32))


def set_params(unit, **values):
    for name, value in values.items():
        param = getattr(unit, name)
        param[...] = jnp.broadcast_to(jnp.asarray(value, jnp.float32), param[...].shape)


def close(actual, expected, rtol=1e-5, atol=0.0):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- known weights


def test_nac_adds_and_subtracts():
    x = [[1.5, 2.25], [-3.0, 0.5]]
    nac = NAC(2, 1, rngs=nnx.Rngs(0))
    set_params(nac, w_hat=[[BIG], [BIG]], m_hat=BIG)
    close(apply(nac, x), [[1.5 + 2.25], [-3.0 + 0.5]])
    set_params(nac, w_hat=[[BIG], [-BIG]])
    close(apply(nac, x), [[1.5 - 2.25], [-3.0 - 0.5]])


def test_nac_mul_divides_positive_inputs():
    nac = NACMul(2, 1, rngs=nnx.Rngs(0))
    set_params(nac, w_hat=[[BIG], [-BIG]], m_hat=BIG)
    close(apply(nac, [[6.0, 3.0], [2.5, 0.5]]), [[6.0 / 3.0], [2.5 / 0.5]])
    set_params(nac, w_hat=BIG)
    close(apply(nac, [[6.0, 3.0], [2.5, -0.5]]), [[6.0 * 3.0], [2.5 * 0.5]])


def test_pos_nac_multiplies_magnitudes():
    nac = NACMulSigma(2, 1, rngs=nnx.Rngs(0))
    set_params(nac, w_hat=BIG)
    close(apply(nac, [[2.0, 3.0], [-1.5, 4.0]]), [[2.0 * 3.0], [1.5 * 4.0]])
    set_params(nac, w_hat=[[BIG], [-BIG]])
    close(apply(nac, [[2.0, 3.0]]), [[2.0]])


def test_nac_mul_nmu_with_unit_weight_multiplies():
    nac = NACMulNMU(3, 1, rngs=nnx.Rngs(0))
    set_params(nac, w=1.0)
    close(apply(nac, [[2.0, 3.0, 0.5], [1.5, 4.0, 2.0]]), [[2.0 * 3.0 * 0.5], [1.5 * 4.0 * 2.0]])
    set_params(nac, w=[[1.0], [0.0], [1.0]])
    close(apply(nac, [[2.0, 3.0, 0.5]]), [[2.0 * 0.5]])


X_POS = [[2.0, 3.0], [1.5, 4.0]]
ADD = [[2.0 + 3.0], [1.5 + 4.0]]
MUL = [[2.0 * 3.0], [1.5 * 4.0]]
DIV = [[2.0 / 3.0], [1.5 / 4.0]]


@pytest.mark.parametrize("cls, big", [(NALU, BIG), (GNALU, 50.0)])
def test_nalu_gate_selects_a_path(cls, big):
    # G-NALU scales by ln φ ≈ 0.48, so it needs larger logits to saturate.
    nalu = cls(2, 1, rngs=nnx.Rngs(0))
    set_params(nalu, w_hat=big, m_hat=big, g=big)
    close(apply(nalu, X_POS), ADD)
    set_params(nalu, g=-big)
    close(apply(nalu, X_POS), MUL)


@pytest.mark.parametrize("cls, big", [(NALU, BIG), (GNALU, 50.0)])
def test_nalu_options(cls, big):
    sep = cls(2, 1, rngs=nnx.Rngs(0), separate_weights=True)
    set_params(sep, w_hat=big, m_hat=big, w_hat_m=[[big], [-big]], m_hat_m=big, g=-big)
    close(apply(sep, X_POS), DIV)
    set_params(sep, g=big)
    close(apply(sep, X_POS), ADD)

    two = cls(2, 1, rngs=nnx.Rngs(0), two_gates=True)
    set_params(two, w_hat=big, m_hat=big, g=big, g_mul=big)
    close(apply(two, X_POS), [[5.0 + 6.0], [5.5 + 6.0]])

    biased = cls(2, 1, rngs=nnx.Rngs(0), gate_bias=True, two_gates=True)
    set_params(biased, w_hat=big, m_hat=big, g=0.0, g_bias=-big, g_mul=0.0, g_mul_bias=big)
    close(apply(biased, X_POS), MUL)


def test_gnalu_scale_is_ln_phi():
    assert abs(math.log(PHI) - 0.4812) < 1e-4
    gnalu = GNALU(1, 1, rngs=nnx.Rngs(0))
    set_params(gnalu, w_hat=1.0, m_hat=1.0, g=1.0)
    # tanh(ln φ) = (φ − 1/φ)/(φ + 1/φ) = 1/√5 and σ(ln φ) = φ/(φ + 1) = 1/φ.
    close(run(gnalu, "add_weight"), [[1.0 / (math.sqrt(5.0) * PHI)]])
    g_add, g_mul = run(gnalu, "gates", jnp.ones((1, 1)))
    close(g_add, [[1.0 / PHI]])
    close(g_mul, [[1.0 - 1.0 / PHI]])
    nalu = NALU(1, 1, rngs=nnx.Rngs(0))
    set_params(nalu, w_hat=1.0, m_hat=1.0)
    close(run(nalu, "add_weight"), [[math.tanh(1.0) / (1.0 + math.exp(-1.0))]])


def test_inalu_multiplies_with_sign():
    inalu = INALU(2, 1, rngs=nnx.Rngs(0))
    set_params(inalu, w_hat_m=BIG, m_hat_m=BIG, w_hat_a=BIG, m_hat_a=BIG, g=-BIG)
    close(apply(inalu, [[-3.0, 4.0], [-2.0, -5.0], [1.5, 2.0]]), [[-12.0], [10.0], [3.0]])
    set_params(inalu, w_hat_m=[[BIG], [-BIG]])
    close(apply(inalu, [[-3.0, 4.0]]), [[-3.0 / 4.0]])
    set_params(inalu, g=BIG)
    close(apply(inalu, [[-3.0, 4.0]]), [[-3.0 + 4.0]])


def test_inalu_clamps_log_at_omega():
    inalu = INALU(2, 1, rngs=nnx.Rngs(0))
    set_params(inalu, w_hat_m=BIG, m_hat_m=BIG, g=-BIG)
    close(apply(inalu, [[1e6, 1e6]]), [[math.exp(20.0)]])
    small = INALU(2, 1, rngs=nnx.Rngs(0), omega=2.0)
    set_params(small, w_hat_m=BIG, m_hat_m=BIG, g=-BIG)
    close(apply(small, [[3.0, 4.0]]), [[math.exp(2.0)]])


# ---------------------------------------------------------------- initialisation


@pytest.mark.parametrize(
    "fans, radius", [((100, 2), 0.504), ((10, 2), 2.07), ((2, 1), 9.47), ((3, 2), 9.47)]
)
def test_nac_radius(fans, radius):
    """W = tanh(Ŵ)·σ(M̂) with Ŵ, M̂ ~ U[−r, r] independent has mean 0 and variance
    E[tanh²(Ŵ)]·E[σ²(M̂)]; r is where F times that is 2 (F = max(fan_in + fan_out, 5)). The
    variance here is scipy's quadrature of those two integrals, independent of the unit's code;
    the tabled radii are its roots to three digits."""
    from scipy import integrate, special

    r = nac_radius(*fans)
    assert abs(r - radius) < 0.01 * radius
    tanh2 = integrate.quad(lambda a: np.tanh(a) ** 2, -r, r)[0] / (2 * r)
    sigmoid2 = integrate.quad(lambda b: special.expit(b) ** 2, -r, r)[0] / (2 * r)
    assert max(sum(fans), 5) * tanh2 * sigmoid2 == pytest.approx(2.0, rel=1e-4)


def test_nac_init_range_and_variance():
    nac = NAC(1000, 1000, rngs=nnx.Rngs(0))
    r = nac_radius(1000, 1000)
    for p in (nac.w_hat[...], nac.m_hat[...]):
        close(jnp.max(p), r, rtol=1e-3)
        close(jnp.min(p), -r, rtol=1e-3)
        close(jnp.var(p), r**2 / 3.0, rtol=0.02)
    close(jnp.var(nac.weight()), 2.0 / (1000 + 1000), rtol=0.02)


def test_nalu_init():
    nalu = NALU(1000, 1000, rngs=nnx.Rngs(1), separate_weights=True, two_gates=True)
    r = nac_radius(1000, 1000)
    close(jnp.max(jnp.abs(nalu.w_hat_m[...])), r, rtol=1e-3)
    glorot = math.sqrt(6.0 / (1000 + 1000))
    for g in (nalu.g[...], nalu.g_mul[...]):
        close(jnp.max(jnp.abs(g)), glorot, rtol=1e-3)
        close(jnp.var(g), glorot**2 / 3.0, rtol=0.02)
    biased = NALU(2, 3, rngs=nnx.Rngs(0), gate_bias=True)
    close(biased.g_bias[...], jnp.zeros(3))
    assert not hasattr(biased, "g_mul_bias") and not hasattr(biased, "w_hat_m")


def test_inalu_init_statistics():
    inalu = INALU(1000, 1000, rngs=nnx.Rngs(2))
    for name, mean in [("w_hat_a", 0.88), ("w_hat_m", 0.88), ("m_hat_a", 0.5), ("m_hat_m", 0.5)]:
        p = getattr(inalu, name)[...]
        close(jnp.mean(p), mean, atol=2e-3)
        close(jnp.std(p), 0.2, rtol=0.01)
    gate = INALU(1, 100_000, rngs=nnx.Rngs(3)).g[...]
    assert gate.shape == (100_000,)
    close(jnp.mean(gate), 0.0, atol=5e-3)
    close(jnp.std(gate), 0.2, rtol=0.02)


def test_pos_nac_and_nac_mul_nmu_init():
    w_hat = NACMulSigma(1000, 1000, rngs=nnx.Rngs(4)).w_hat[...]
    close(jnp.mean(w_hat), 0.0, atol=2e-4)
    close(jnp.var(w_hat), 2.0 / (1000 + 1000), rtol=0.02)
    w = NACMulNMU(1000, 1000, rngs=nnx.Rngs(5)).w[...]
    close(jnp.min(w), 0.25, rtol=1e-3)
    close(jnp.max(w), 0.75, rtol=1e-3)


# ---------------------------------------------------------------- regularisers, projection


def test_nalu_gate_regularizer():
    x = jnp.array([[1.0], [2.0]])
    nalu = NALU(1, 2, rngs=nnx.Rngs(0), gate_regularizer=True)
    set_params(nalu, g=[[0.0, math.log(3.0)]])
    # g = σ(0) = 1/2, σ(ln 3) = 3/4 for x = 1; 1/2, σ(ln 9) = 9/10 for x = 2.
    quarter = (1 / 2) ** 2 * (1 / 2) ** 2
    expected = 2 * quarter + (3 / 4) ** 2 * (1 / 4) ** 2 + (9 / 10) ** 2 * (1 / 10) ** 2
    close(run(nalu, "regularizers", x)["gate"], expected)

    two = NALU(1, 2, rngs=nnx.Rngs(0), gate_regularizer=True, two_gates=True)
    set_params(two, g=[[0.0, math.log(3.0)]], g_mul=0.0)
    close(run(two, "regularizers", x)["gate"], expected + 4 * quarter)

    assert run(NALU(1, 2, rngs=nnx.Rngs(0)), "regularizers", x) == {}


def test_inalu_regularizer():
    inalu = INALU(2, 1, rngs=nnx.Rngs(0))
    set_params(
        inalu,
        w_hat_a=[[1.0], [3.0]],
        m_hat_a=[[-25.0], [10.0]],
        w_hat_m=[[0.5], [-0.5]],
        m_hat_m=[[19.0], [21.0]],
        g=[3.0],
    )
    expected = (19 + 17) / 2 + (0 + 10) / 2 + (19.5 + 19.5) / 2 + (1 + 0) / 2 + 17
    close(run(inalu, "regularizers", jnp.ones((1, 2)))["inalu"], expected)


def test_nac_mul_nmu_regularizers_and_projection():
    unit = NACMulNMU(2, 2, rngs=nnx.Rngs(0))
    set_params(unit, w=[[0.2, 0.9], [0.5, 1.0]])
    e = np.e
    reg = run(unit, "regularizers", jnp.array([[1.0, e], [e, e**3]]))
    close(reg["sparse"], (0.2 + 0.1 + 0.5 + 0.0) / 4)
    # R_z is taken on the log-space input, as the reference: x̄ = mean(log|x|) = [½, 2], so
    # (1 − x̄)² = [¼, 1] weights the rows of 1 − W.
    close(reg["z"], (0.8 * 0.25 + 0.1 * 0.25 + 0.5 * 1 + 0.0 * 1) / 4, rtol=1e-5, atol=1e-6)

    set_params(unit, w=[[-0.5, 0.3], [1.7, 1.0]])
    graphdef, state = nnx.split(unit)

    @jax.jit
    def project(state):
        module = nnx.merge(graphdef, state)
        module.project()
        return nnx.state(module)

    close(nnx.merge(graphdef, project(state)).w[...], [[0.0, 0.3], [1.0, 1.0]])
    unit.project()
    close(unit.w[...], [[0.0, 0.3], [1.0, 1.0]])


def test_nac_regularizers_are_the_reference_r_z():
    # NAC₊/NAC• have the reference's NAU-type R_z (of the layer's input: log-space for NAC•);
    # NAC•,σ has none. x = 1 everywhere: x̄ = 1 for NAC₊, log(1 + ε) ≈ 1e-7 for NAC•.
    x = jnp.ones((3, 2))
    nac = NAC(2, 1, rngs=nnx.Rngs(0))
    set_params(nac, w_hat=[[BIG], [math.atanh(0.5)]], m_hat=BIG)
    close(run(nac, "regularizers", x)["z"], (0.0 + 0.5) / 2, atol=1e-6)
    nac_mul = NACMul(2, 1, rngs=nnx.Rngs(0))
    close(run(nac_mul, "regularizers", x)["z"], 0.0, atol=1e-12)
    assert NACMulSigma(2, 1, rngs=nnx.Rngs(0)).regularizers(x) == {}


# ---------------------------------------------------------------- sparsity error


def test_sparsity_error_of_hand_set_weights():
    unit = NACMulNMU(2, 2, rngs=nnx.Rngs(0))
    set_params(unit, w=[[0.2, 0.9], [0.5, 1.0]])
    close(run(unit, "sparsity_error"), 0.5)

    nalu = NALU(2, 1, rngs=nnx.Rngs(0), separate_weights=True)
    set_params(nalu, w_hat=[[BIG], [-BIG]], m_hat=BIG, w_hat_m=math.atanh(0.3), m_hat_m=BIG)
    close(run(nalu, "sparsity_error"), 0.3)
    assert len(nalu.sparsity_weights()) == 2

    inalu = INALU(2, 1, rngs=nnx.Rngs(0))
    set_params(inalu, w_hat_a=BIG, m_hat_a=BIG, w_hat_m=-BIG, m_hat_m=[[BIG], [-BIG]])
    # W_m = [−1, −σ(−20)]: the second entry is ≈ 2e-9 away from 0.
    close(run(inalu, "sparsity_error"), 0.0, atol=1e-6)


# ---------------------------------------------------------------- construction errors

CLASSES = [NAC, NACMul, NACMulSigma, NACMulNMU, NALU, GNALU, INALU]


@pytest.mark.parametrize("cls", CLASSES)
def test_bad_sizes_name_the_argument(cls):
    with pytest.raises(ValueError, match="in_features"):
        cls(0, 1, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="out_features"):
        cls(2, -1, rngs=nnx.Rngs(0))


@pytest.mark.parametrize("cls", CLASSES)
def test_shapes_and_finite_gradients(cls):
    unit = cls(3, 2, rngs=nnx.Rngs(0))
    x = jnp.array([[0.5, 1.5, 2.0], [1.0, 2.0, 3.0]])
    assert apply(unit, x).shape == (2, 2)
    graphdef, state = nnx.split(unit)
    grads = jax.jit(jax.grad(lambda s: jnp.sum(nnx.merge(graphdef, s)(x))))(state)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))
