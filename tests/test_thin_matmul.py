"""thin_matmul: the same value and gradients as ``x @ w`` (its backward is hand-written)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nalu_jax.units._base import thin_matmul


@pytest.mark.parametrize(
    "x_shape, out", [((128, 100), 2), ((7, 3), 1), ((4, 5, 6), 4), ((9, 8), 16)]
)
def test_value_and_gradients_match_plain_matmul(x_shape, out):
    kx, kw, kg = jax.random.split(jax.random.key(0), 3)
    x = jax.random.uniform(kx, x_shape, minval=-2.0, maxval=2.0)
    w = jax.random.normal(kw, (x_shape[-1], out))
    g = jax.random.normal(kg, (*x_shape[:-1], out))  # an arbitrary cotangent

    def loss(f):
        return lambda x, w: jnp.sum(f(x, w) * g)

    # the plain product at full float32 precision (a bare ``@`` runs in TF32 on an NVIDIA GPU)
    def plain(x, w):
        return jnp.matmul(x, w, precision=jax.lax.Precision.HIGHEST)

    np.testing.assert_allclose(thin_matmul(x, w), plain(x, w), rtol=1e-6, atol=1e-6)
    got = jax.jit(jax.grad(loss(thin_matmul), argnums=(0, 1)))(x, w)
    want = jax.grad(loss(plain), argnums=(0, 1))(x, w)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_gradient_under_vmap_matches_per_seed():
    x = jax.random.uniform(jax.random.key(1), (3, 16, 10))
    w = jax.random.normal(jax.random.key(2), (3, 10, 2))
    grad = jax.grad(lambda w, x: jnp.sum(thin_matmul(x, w) ** 2))
    batched = jax.jit(jax.vmap(grad))(w, x)
    for i in range(3):
        np.testing.assert_allclose(batched[i], grad(w[i], x[i]), rtol=1e-6, atol=1e-6)
        # and the hand formula: dW = 2·xᵀ(xW)
        xi, wi = np.float64(x[i]), np.float64(w[i])
        np.testing.assert_allclose(batched[i], 2 * xi.T @ (xi @ wi), rtol=1e-4, atol=1e-4)
