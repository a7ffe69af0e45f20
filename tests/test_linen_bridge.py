"""Linen users wrap any unit with ``flax.nnx.bridge.to_linen`` (the path in docs/linen.md)."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nalu_jax.units import NAU, make_unit


class NAUThenDense(nn.Module):
    """A Linen model whose first layer is the NNX NAU: ``[batch, in]`` -> (h, y)."""

    hidden: int = 2

    @nn.compact
    def __call__(self, x, training: bool = False):
        h = nnx.bridge.to_linen(NAU, x.shape[-1], self.hidden, name="nau")(x, training=training)
        return h, nn.Dense(1)(h)


def test_nau_inside_a_linen_module():
    x = jnp.array([[1.0, -2.0, 0.5], [3.0, 4.0, -1.0]])
    model = NAUThenDense()
    variables = model.init(jax.random.key(0), x)
    assert variables["params"]["nau"]["w"].shape == (3, 2)
    # Put one weight outside [−1, 1] to see the NAU's clamp act in the forward.
    params = variables["params"]
    params = {**params, "nau": {"w": params["nau"]["w"].at[0, 1].set(1.7)}}
    (h, y), (h_jit, y_jit) = (
        model.apply({"params": params}, x),
        jax.jit(model.apply)({"params": params}, x),
    )
    w = np.clip(np.asarray(params["nau"]["w"]), -1.0, 1.0)
    np.testing.assert_allclose(h, np.asarray(x) @ w, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h_jit, h, rtol=1e-6, atol=1e-6)
    dense = params["Dense_0"]
    np.testing.assert_allclose(y, h @ dense["kernel"] + dense["bias"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y_jit, y, rtol=1e-6, atol=1e-6)


def test_regularizers_and_projection_through_the_bridge():
    layer = nnx.bridge.to_linen(make_unit, "nau", 3, 2)
    x = jnp.ones((4, 3))
    variables = layer.init(jax.random.key(0), x)
    w = variables["params"]["w"].at[0, 0].set(3.0)
    variables = {"params": {"w": w}}
    regs = layer.apply(variables, x, nnx_method="regularizers")
    # R_sparse of the raw W, as the reference: the out-of-range 3 counts min(3, |1 − 3|) = 2.
    a = np.abs(np.asarray(w))
    np.testing.assert_allclose(regs["sparse"], np.mean(np.minimum(a, np.abs(1.0 - a))), rtol=1e-6)
    _, projected = layer.apply(variables, nnx_method="project", mutable=["params"])
    np.testing.assert_array_equal(projected["params"]["w"], np.clip(np.asarray(w), -1.0, 1.0))


def test_training_keyword_and_key_pass_through():
    # sNMU draws its noise from the key it is called with; at evaluation it is the NMU.
    layer = nnx.bridge.to_linen(make_unit, "snmu", 3, 1)
    x = jnp.array([[1.5, 2.0, 1.2]])
    variables = layer.init(jax.random.key(0), x)
    w = np.clip(np.asarray(variables["params"]["w"]), 0.0, 1.0)
    evaluated = layer.apply(variables, x)
    np.testing.assert_allclose(
        evaluated, np.prod(np.asarray(x)[0][:, None] * w + 1 - w, axis=0)[None], rtol=1e-6
    )
    trained = layer.apply(variables, x, training=True, key=jax.random.key(1))
    assert trained.shape == (1, 1) and np.isfinite(trained).all()
    # the keyword reached the unit (noise, so not the evaluation output) and so did the key
    # (the same key, the same noise; another key, other noise)
    assert not np.allclose(trained, evaluated, rtol=1e-4, atol=0)
    again = layer.apply(variables, x, training=True, key=jax.random.key(1))
    np.testing.assert_array_equal(again, trained)
    other = layer.apply(variables, x, training=True, key=jax.random.key(2))
    assert not np.allclose(other, trained, rtol=1e-4, atol=0)


class TwoLayer(nn.Module):
    """NAU -> NMU held as ``setup`` submodules, the regularisers summed by the parent."""

    def setup(self):
        self.nau = nnx.bridge.to_linen(make_unit, "nau", 3, 2)
        self.nmu = nnx.bridge.to_linen(make_unit, "nmu", 2, 1)

    def __call__(self, x):
        return self.nmu(self.nau(x))

    def sparse(self, x):
        h = self.nau(x)
        return (
            self.nau(x, nnx_method="regularizers")["sparse"]
            + self.nmu(h, nnx_method="regularizers")["sparse"]
        )


def test_units_as_setup_submodules():
    x = jnp.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    model = TwoLayer()
    variables = model.init(jax.random.key(0), x)
    wa = np.clip(np.asarray(variables["params"]["nau"]["w"]), -1.0, 1.0)
    wm = np.clip(np.asarray(variables["params"]["nmu"]["w"]), 0.0, 1.0)
    h = np.asarray(x) @ wa
    expected = np.prod(h[:, :, None] * wm + 1.0 - wm, axis=1)
    np.testing.assert_allclose(model.apply(variables, x), expected, rtol=1e-5, atol=1e-6)
    sparse = np.mean(np.minimum(np.abs(wa), 1 - np.abs(wa))) + np.mean(np.minimum(wm, 1 - wm))
    np.testing.assert_allclose(model.apply(variables, x, method=TwoLayer.sparse), sparse, rtol=1e-5)
