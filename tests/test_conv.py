"""nalu_jax.conv: the matmul convolution and max-pool equal lax's, value and gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax import conv
from nalu_jax.sequence_models import DigitCNN


def lax_conv(x, kernel, bias, padding):
    dims = ("NHWC", "HWIO", "NHWC")
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), padding, dimension_numbers=dims) + bias


def lax_pool(x):
    return nnx.max_pool(x, (2, 2), strides=(2, 2))


def assert_close(a, b, rtol=2e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.max(np.abs(b))))


@pytest.mark.parametrize(
    "side,channels,padding,toeplitz",
    [
        (8, 1, "SAME", True),
        (4, 20, "SAME", True),
        (28, 1, "VALID", False),
        (12, 20, "VALID", False),
        (5, 3, "SAME", True),
        (9, 2, "VALID", True),
        (11, 2, "VALID", False),
    ],
)
def test_conv2d_equals_lax_conv_value_and_gradient(side, channels, padding, toeplitz):
    assert conv.use_toeplitz((side, side), (5, 5, channels, 7), padding) == toeplitz
    k = jax.random.split(jax.random.key(side * 100 + channels), 4)
    x = jax.random.normal(k[0], (3, side, side, channels))
    kernel = jax.random.normal(k[1], (5, 5, channels, 7))
    bias = jax.random.normal(k[2], (7,))
    probe = jax.random.normal(k[3], lax_conv(x, kernel, bias, padding).shape)
    loss = lambda f: lambda *a: jnp.sum(jnp.sin(f(*a, padding)) * probe)
    assert_close(
        jax.jit(conv.conv2d, static_argnums=3)(x, kernel, bias, padding),
        lax_conv(x, kernel, bias, padding),
    )
    got = jax.jit(jax.grad(loss(conv.conv2d), argnums=(0, 1, 2)))(x, kernel, bias)
    want = jax.grad(loss(lax_conv), argnums=(0, 1, 2))(x, kernel, bias)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


@pytest.mark.parametrize("shape", [(2, 8, 8, 3), (2, 5, 7, 2)])
def test_max_pool_equals_lax_including_ties(shape):
    x = jax.random.normal(jax.random.key(0), shape)
    # ties: relu zeros and repeated values; the gradient must go to the first maximum
    x = jnp.round(jax.nn.relu(x) * 2) / 2
    probe = jax.random.normal(jax.random.key(1), lax_pool(x).shape)
    np.testing.assert_array_equal(jax.jit(conv.max_pool)(x), lax_pool(x))
    got = jax.jit(jax.grad(lambda x: jnp.sum(conv.max_pool(x) * probe)))(x)
    want = jax.grad(lambda x: jnp.sum(lax_pool(x) * probe))(x)
    np.testing.assert_array_equal(got, want)


def reference_cnn(cnn: DigitCNN, images):
    """The previous formulation: nnx.Conv (lax.conv) and nnx.max_pool."""
    x = lax_pool(jax.nn.relu(cnn.conv1(images[..., None])))
    x = lax_pool(jax.nn.relu(cnn.conv2(x)))
    return cnn.dense2(jax.nn.relu(cnn.dense1(x.reshape(x.shape[0], -1))))


@pytest.mark.parametrize("side", [8, 28])
def test_digit_cnn_equals_lax_formulation_under_seed_vmap(side):
    graphdef, _ = nnx.split(nnx.eval_shape(lambda: DigitCNN((side, side), 10, rngs=nnx.Rngs(0))))
    init = lambda key: nnx.split(DigitCNN((side, side), 10, rngs=nnx.Rngs(params=key)))[1]
    params = jax.vmap(init)(jax.random.split(jax.random.key(3), 2))
    images = jax.random.uniform(jax.random.key(4), (2, 6, side, side))

    def loss(forward):
        return lambda p, x: jnp.sum(jnp.tanh(forward(nnx.merge(graphdef, p), x)))

    new = jax.jit(jax.vmap(jax.value_and_grad(loss(lambda m, x: m(x)))))(params, images)
    old = jax.vmap(jax.value_and_grad(loss(reference_cnn)))(params, images)
    assert_close(new[0], old[0])
    for g, w in zip(jax.tree.leaves(new[1]), jax.tree.leaves(old[1]), strict=True):
        assert_close(g, w, rtol=5e-5)
