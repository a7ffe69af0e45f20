"""nalu_jax.models.conv: the matmul convolution and max-pool equal lax's, value and gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.models import conv
from nalu_jax.models.sequence import DigitCNN


def lax_conv(x, kernel, bias, padding):
    """lax's convolution at full float32 precision (by default it runs in TF32 on an NVIDIA GPU)."""
    dims = ("NHWC", "HWIO", "NHWC")
    return bias + jax.lax.conv_general_dilated(
        x, kernel, (1, 1), padding, dimension_numbers=dims, precision=jax.lax.Precision.HIGHEST
    )


def lax_pool(x):
    return nnx.max_pool(x, (2, 2), strides=(2, 2))


def assert_close(a, b, rtol=2e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.max(np.abs(b))))


#: float32 against the float64 reference, as a fraction of the array's largest magnitude. Two
#: float32 convolutions that sum their 25·C products in other orders differ by up to ~3e-5 of
#: it (the bias gradient of a 20-channel case: XLA:CPU 1.6e-5, an H100 2.7e-5 from lax's own
#: float32); inputs rounded to TF32 are off by 2.7e-4 to 3.8e-4 in every case here.
F64_RTOL = 1e-4


def float64_reference(loss, x, kernel, bias, padding):
    """lax's convolution and the gradients of ``loss`` (the test's, built on ``lax_conv``)
    computed in float64: what any float32 summation order approximates."""
    with jax.enable_x64(True):
        args = [jnp.asarray(np.asarray(v), jnp.float64) for v in (x, kernel, bias)]
        value = lax_conv(*args, padding)
        return [np.asarray(v) for v in (value, *jax.grad(loss, argnums=(0, 1, 2))(*args))]


@pytest.mark.parametrize(
    "hw,channels,padding,method",
    [
        ((8, 8), 1, "SAME", "toeplitz"),
        ((4, 4), 20, "SAME", "toeplitz"),
        ((28, 28), 1, "VALID", "band"),
        ((12, 12), 20, "VALID", "band"),
        ((5, 5), 3, "SAME", "toeplitz"),
        ((9, 9), 2, "VALID", "toeplitz"),
        ((11, 11), 2, "VALID", "band"),
        ((13, 10), 2, "SAME", "band"),  # not square, SAME: rows padded, columns by the taps
        ((9, 44), 1, "VALID", "im2col"),  # W > BAND_MAX_RATIO · kw
        ((7, 42), 2, "SAME", "im2col"),
    ],
)
def test_conv2d_equals_lax_conv_value_and_gradient(hw, channels, padding, method):
    assert conv.method(hw, (5, 5, channels, 7), padding) == method
    k = jax.random.split(jax.random.key(hw[0] * 100 + hw[1] + channels), 4)
    x = jax.random.normal(k[0], (3, *hw, channels))
    kernel = jax.random.normal(k[1], (5, 5, channels, 7))
    bias = jax.random.normal(k[2], (7,))
    probe = jax.random.normal(k[3], lax_conv(x, kernel, bias, padding).shape)
    loss = lambda f: lambda *a: jnp.sum(jnp.sin(f(*a, padding)) * probe)
    value = jax.jit(conv.conv2d, static_argnums=3)(x, kernel, bias, padding)
    got = jax.jit(jax.grad(loss(conv.conv2d), argnums=(0, 1, 2)))(x, kernel, bias)
    want = float64_reference(loss(lax_conv), x, kernel, bias, padding)
    for g, w in zip((value, *got), want, strict=True):
        assert g.dtype == jnp.float32
        assert_close(g, w, rtol=F64_RTOL)


def test_axis_taps_by_hand():
    # width 4, kernel 3, SAME: left pad 1; output column b reads input b − 1 + j
    t = conv.axis_taps(4, 3, "SAME")
    assert t.shape == (4, 4, 3)
    assert t[0, 0, 1] == 1 and t[1, 0, 2] == 1 and t[0, 1, 0] == 1 and t[3, 3, 1] == 1
    assert t[:, 0, 0].sum() == 0 and t[:, 3, 2].sum() == 0  # taps in the padding
    assert t.sum() == 4 * 3 - 2
    # VALID: width 5, kernel 3 → 3 outputs, every tap inside
    v = conv.axis_taps(5, 3, "VALID")
    assert v.shape == (5, 3, 3) and v.sum() == 9 and v[4, 2, 2] == 1


def test_band_matrix_and_stack_by_hand():
    # kernel 2×3 (C = O = 1) with distinct taps, blocks of 2 output columns: a block reads a
    # window of 2 + 3 − 1 = 4 input columns of each of the 2 input rows
    kernel = jnp.arange(1.0, 7.0).reshape(2, 3, 1, 1)  # K[i, j] = 1 + 3i + j
    b = np.asarray(conv.band(kernel, 2))
    assert b.shape == (2 * 4, 2)
    for i in range(2):
        for x in range(4):
            for col in range(2):
                want = 1 + 3 * i + (x - col) if 0 <= x - col < 3 else 0
                assert b[i * 4 + x, col] == want
    # a 3×6 image, VALID: output 2×4 → 2 blocks per row; window of block 1 starts at column 2
    img = jnp.arange(18.0).reshape(1, 3, 6, 1)
    s = np.asarray(conv.band_stack(img, (2, 3), "VALID", 2))
    assert s.shape == (1, 2, 2, 8)
    np.testing.assert_array_equal(s[0, 1, 1], [8, 9, 10, 11, 14, 15, 16, 17])  # rows 1, 2
    # ragged: output width 4 in blocks of 3 → 2 blocks, input padded on the right
    r = np.asarray(conv.band_stack(img, (2, 3), "VALID", 3))
    assert r.shape == (1, 2, 2, 10)
    np.testing.assert_array_equal(r[0, 0, 1], [3, 4, 5, 0, 0, 9, 10, 11, 0, 0])


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
