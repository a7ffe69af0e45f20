"""Recurrent cells: hand-computed accumulators, every unit as a cell, baselines, jit == eager."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.units import UNITS, precision
from nalu_jax.units.recurrent import (
    RECURRENT_BASELINES,
    RECURRENT_INITS,
    ArithmeticCell,
    BaselineCell,
    make_cell,
    unroll,
    unroll_projected,
)

XS = jax.random.uniform(jax.random.key(0), (3, 5, 2), jnp.float32, 1.0, 2.0)  # [batch, T, in]


def jit_unroll(cell, xs, **kwargs):
    graphdef, params = nnx.split(cell)
    run = jax.jit(lambda p, x: unroll(nnx.merge(graphdef, p), x, **kwargs))
    return run(params, xs)


def test_nau_cell_accumulates_a_sum():
    cell = make_cell("nau", 2, 2, rngs=nnx.Rngs(0))
    # rows: x₁, x₂, h₁, h₂ → h_t = x_t + h_{t−1}
    cell.unit.w[...] = jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    ys, final, regs = jit_unroll(cell, XS)
    np.testing.assert_allclose(ys, np.cumsum(np.asarray(XS), axis=1), rtol=1e-6)
    np.testing.assert_allclose(final, ys[:, -1])
    assert float(regs["sparse"]) == 0.0  # W is exactly sparse at every step


def test_nmu_cell_accumulates_a_product_from_one():
    cell = make_cell("nmu", 1, 1, rngs=nnx.Rngs(0))
    cell.unit.w[...] = jnp.ones((2, 1))
    np.testing.assert_allclose(cell.initial_state(3), np.ones((3, 1)))
    ys, _, _ = jit_unroll(cell, XS[..., :1])
    np.testing.assert_allclose(ys[..., 0], np.cumprod(np.asarray(XS[..., 0]), axis=1), rtol=1e-5)


@pytest.mark.parametrize("unit", ["nau", "nmu"])
def test_identity_recurrent_init_sets_only_the_hidden_block(unit):
    random = make_cell(unit, 3, 2, rngs=nnx.Rngs(7))
    ident = make_cell(unit, 3, 2, rngs=nnx.Rngs(7), recurrent_init="identity")
    assert ident.identity_init and not random.identity_init
    w, w0 = np.asarray(ident.unit.w[...]), np.asarray(random.unit.w[...])
    np.testing.assert_array_equal(w[3:], [[1.0, 0.0], [0.0, 1.0]])  # h₁ → h₁, h₂ → h₂
    np.testing.assert_array_equal(w[:3], w0[:3])  # the input rows: the same random draws
    assert not np.array_equal(w0[3:], np.eye(2))


def test_identity_init_nau_cell_with_unit_input_weights_accumulates():
    # identity on the hidden block + input rows set by hand: the exact running sum
    cell = make_cell("nau", 2, 2, rngs=nnx.Rngs(0), recurrent_init="identity")
    cell.unit.w[...] = cell.unit.w[...].at[:2].set(jnp.eye(2))
    ys, _, _ = jit_unroll(cell, XS)
    np.testing.assert_allclose(ys, np.cumsum(np.asarray(XS), axis=1), rtol=1e-6)


@pytest.mark.parametrize("unit", ["nalu", "nac_add", "npu"])
def test_identity_init_leaves_units_without_a_direct_weight_alone(unit):
    a = nnx.state(make_cell(unit, 3, 2, rngs=nnx.Rngs(3)))
    b_cell = make_cell(unit, 3, 2, rngs=nnx.Rngs(3), recurrent_init="identity")
    assert not b_cell.identity_init
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(nnx.state(b_cell)), strict=True):
        np.testing.assert_array_equal(x, y)


def test_bad_recurrent_init_raises():
    assert RECURRENT_INITS == ("random", "identity")
    with pytest.raises(ValueError, match="recurrent_init must be one of"):
        make_cell("nau", 3, 2, rngs=nnx.Rngs(0), recurrent_init="eye")


@pytest.mark.parametrize("unit", ["nac_mul_nmu", "nac_mul"])
def test_log_space_nac_cell_accumulates_a_product(unit):
    cell = make_cell(unit, 1, 1, rngs=nnx.Rngs(0), log_space=True)
    if unit == "nac_mul_nmu":
        cell.unit.w[...] = jnp.ones((2, 1))
    else:  # tanh(20)·σ(20) = 1 − 2e-9: W = 1 to float32 precision
        cell.unit.w_hat[...] = jnp.full((2, 1), 20.0)
        cell.unit.m_hat[...] = jnp.full((2, 1), 20.0)
    np.testing.assert_allclose(cell.initial_state(3), np.zeros((3, 1)))  # log 1
    ys, final, _ = jit_unroll(cell, XS[..., :1])
    np.testing.assert_allclose(ys[..., 0], np.cumprod(np.asarray(XS[..., 0]), axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.exp(final), ys[:, -1], rtol=1e-6)  # the state is log h


def test_learnable_initial_state_offsets_the_start():
    cell = make_cell("nau", 2, 2, rngs=nnx.Rngs(0), learn_initial_state=True)
    cell.h0[...] = jnp.array([3.0, -1.0])
    np.testing.assert_allclose(cell.initial_state(2), [[3.0, -1.0]] * 2)
    lstm = make_cell("lstm", 2, 2, rngs=nnx.Rngs(0), learn_initial_state=True)
    c, h = lstm.initial_state(4)
    assert c.shape == h.shape == (4, 2)


def test_regularizers_are_time_averages():
    cell = make_cell("nau", 2, 2, rngs=nnx.Rngs(0))
    _, _, regs = unroll(cell, XS)
    state, per_step = cell.initial_state(3), []
    for t in range(XS.shape[1]):
        per_step.append(cell.regularizers(state, XS[:, t])["z"])
        state, _ = cell(state, XS[:, t])
    np.testing.assert_allclose(regs["z"], np.mean(per_step), rtol=1e-5)


def test_snmu_cell_takes_r_z_on_the_noised_input_of_each_step():
    # sNMU's R_z is taken on x ⊙ n with the noise n of the same step's forward (the unit's
    # contract); in a cell, step t draws n from fold_in(key, t) and its input is [x_t, h_{t−1}]
    cell = make_cell("snmu", 2, 1, rngs=nnx.Rngs(0))
    key = jax.random.key(7)
    _, _, regs = unroll(cell, XS, training=True, key=key)
    w = np.asarray(cell.unit.weight())
    state, per_step = cell.initial_state(3), []
    for t in range(XS.shape[1]):
        k = jax.random.fold_in(key, t)
        u = np.concatenate([np.asarray(XS[:, t]), np.asarray(state)], axis=-1)
        noise = np.asarray(jax.random.uniform(k, u.shape, jnp.float32, 1.0, 5.0))
        x_bar = np.mean(u * noise, axis=0)  # R_z = mean_ij((1 − W_ij)(1 − x̄_i)²)
        per_step.append(np.mean((1.0 - w) * (1.0 - x_bar)[:, None] ** 2))
        state, _ = cell(state, XS[:, t], training=True, key=k)
    np.testing.assert_allclose(regs["z"], np.mean(per_step), rtol=1e-5)
    clean = unroll(cell, XS)[2]["z"]  # evaluation: the un-noised input
    assert abs(float(regs["z"]) - float(clean)) > 1e-3 * abs(float(clean))


def test_recurrent_network_readout_regularizer_sees_the_training_noise():
    from nalu_jax.models import RecurrentNetwork
    from nalu_jax.units.nau_nmu import SNMU

    net = RecurrentNetwork(make_cell("nau", 2, 2, rngs=nnx.Rngs(0)), SNMU(2, 1, rngs=nnx.Rngs(1)))
    key = jax.random.key(3)
    _, regs = net.apply_with_regularizers(XS, training=True, key=key)
    _, clean = net.apply_with_regularizers(XS)
    cell_key, out_key = jax.random.split(key)
    ys, _, cell_regs = unroll(net.cell, XS, training=True, key=cell_key)
    expected = net.readout.regularizers(ys[:, -1], training=True, key=out_key)["z"]
    np.testing.assert_allclose(regs["z"], cell_regs["z"] + expected, rtol=1e-5)
    assert float(regs["z"]) != float(clean["z"])


@pytest.mark.parametrize("name", sorted(UNITS))
def test_every_unit_works_as_a_cell(name):
    cell = make_cell(name, 2, 2, rngs=nnx.Rngs(1), learn_initial_state=True)
    assert isinstance(cell, ArithmeticCell)
    ys, _, regs = unroll(cell, XS, training=True, key=jax.random.key(2))
    assert ys.shape == (3, 5, 2) and bool(jnp.all(jnp.isfinite(ys)))
    assert all(np.isfinite(float(v)) for v in regs.values())
    cell.project()
    assert np.ndim(cell.sparsity_error()) == 0


@pytest.mark.parametrize("kind", RECURRENT_BASELINES)
def test_baselines_shape_and_finite_gradients(kind):
    cell = make_cell(kind, 2, 3, rngs=nnx.Rngs(0), learn_initial_state=True)
    assert isinstance(cell, BaselineCell)
    graphdef, params = nnx.split(cell)

    def loss(p):
        ys, _, regs = unroll(nnx.merge(graphdef, p), XS)
        assert regs == {}
        return jnp.sum(ys**2)

    grads = jax.jit(jax.grad(loss))(params)
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grads))
    ys, final, _ = unroll(cell, XS)
    assert ys.shape == (3, 5, 3)
    if kind == "lstm":
        assert isinstance(final, tuple) and final[1].shape == (3, 3)
    assert np.isnan(float(cell.sparsity_error()))


@pytest.mark.parametrize(
    "name, options",
    [("nau", {}), ("nac_mul", {"log_space": True}), ("snmu", {}), ("gru", {})],
)
def test_jit_equals_eager(name, options):
    cell = make_cell(name, 2, 2, rngs=nnx.Rngs(3), learn_initial_state=True, **options)
    key = jax.random.key(4)
    eager = unroll(cell, XS, training=True, key=key)
    jitted = jit_unroll(cell, XS, training=True, key=key)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6), eager, jitted)


def test_per_step_keys_differ_and_are_reproducible():
    cell = make_cell("snmu", 2, 1, rngs=nnx.Rngs(0))
    a = unroll(cell, XS, training=True, key=jax.random.key(5))[0]
    b = unroll(cell, XS, training=True, key=jax.random.key(5))[0]
    c = unroll(cell, XS, training=True, key=jax.random.key(6))[0]
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_bad_names_raise():
    with pytest.raises(ValueError, match="cell"):
        make_cell("lstmm", 2, 2, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="log_space"):
        make_cell("nau", 2, 2, rngs=nnx.Rngs(0), log_space=True)


def _lstm_float64(params, xs):
    """The LSTM equations in numpy float64 from flax's parameter names (i, f, g, o gates)."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))
    c = h = np.zeros((xs.shape[0], p["hi"].shape[0]))
    outs = []
    for t in range(xs.shape[1]):
        x = np.asarray(xs[:, t], np.float64)
        gate = lambda n: x @ p["i" + n] + h @ p["h" + n] + p["b" + n]
        i, f, g, o = sig(gate("i")), sig(gate("f")), np.tanh(gate("g")), sig(gate("o"))
        c = f * c + i * g
        h = o * np.tanh(c)
        outs.append(h)
    return np.stack(outs, axis=1), c


def test_projected_lstm_is_the_lstm():
    cell = make_cell("lstm", 2, 3, rngs=nnx.Rngs(4))
    core = cell.core
    for n, lin in enumerate((core.hi, core.hf, core.hg, core.ho)):  # biases ≠ 0: order counts
        lin.bias[...] = jax.random.normal(jax.random.key(10 + n), (3,))
    w_in, w_h, bias = cell.gate_weights()
    assert w_in.shape == (2, 12) and w_h.shape == (3, 12) and bias.shape == (12,)
    ys, (c, h) = unroll_projected(cell, precision.matmul(XS, w_in))
    names = dict(i=core.ii, f=core.if_, g=core.ig, o=core.io)
    params = {"i" + k: v.kernel[...] for k, v in names.items()}
    params |= {"h" + k: getattr(core, "h" + k).kernel[...] for k in "ifgo"}
    params |= {"b" + k: getattr(core, "h" + k).bias[...] for k in "ifgo"}
    expected, c64 = _lstm_float64(params, np.asarray(XS))
    np.testing.assert_allclose(ys, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, expected[:, -1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, c64, rtol=1e-5, atol=1e-6)
    # the same function as flax's cell under ``unroll``: values and every parameter's gradient
    ref, (c_ref, _), _ = unroll(cell, XS)
    np.testing.assert_allclose(ys, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, c_ref, rtol=1e-5, atol=1e-6)
    loss_a = lambda m: jnp.sum(
        unroll_projected(m, precision.matmul(XS, m.gate_weights()[0]))[0] ** 2
    )
    loss_b = lambda m: jnp.sum(unroll(m, XS)[0] ** 2)
    ga, gb = nnx.state(nnx.grad(loss_a)(cell)), nnx.state(nnx.grad(loss_b)(cell))
    flat_a, flat_b = dict(nnx.to_flat_state(ga)), dict(nnx.to_flat_state(gb))
    assert flat_a.keys() == flat_b.keys() and len(flat_a) == 12  # 8 kernels + 4 biases
    for k in flat_a:
        assert float(jnp.max(jnp.abs(flat_b[k][...]))) > 0, k
        np.testing.assert_allclose(flat_a[k][...], flat_b[k][...], rtol=1e-4, atol=1e-6)


def test_gate_weights_needs_an_lstm():
    with pytest.raises(ValueError, match="gate_weights needs an lstm cell, got 'gru'"):
        make_cell("gru", 2, 3, rngs=nnx.Rngs(0)).gate_weights()
