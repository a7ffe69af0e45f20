"""``_base.product_over_inputs``: ``jnp.prod(z, axis=-2)`` with a closed-form derivative.

The value must be ``jnp.prod``'s; the gradients JAX's own rule's, bit for bit (two factors: the
NMU's single-module case; four: the NMRU's [x, 1/x]), and the hand product rule
∂/∂z_i = ∏_{k≠i} z_k, zeros included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nalu_jax.units._base import SMALL_PRODUCT, product_over_inputs


def _grads(f, z, g):
    return jax.jit(jax.grad(lambda z: jnp.sum(f(z) * g)))(z)


@pytest.mark.parametrize(
    "shape", [(128, 2, 1), (7, 3, 2), (5, 4, 1), (128, 4, 1), (3, 5, 3), (2, 9, 1), (128, 100, 2)]
)
def test_value_and_gradient_match_jnp_prod(shape):
    kz, kg = jax.random.split(jax.random.key(0))
    z = jax.random.uniform(kz, shape, minval=-2.0, maxval=2.0)
    g = jax.random.normal(kg, shape[:-2] + shape[-1:])
    np.testing.assert_array_equal(product_over_inputs(z), jnp.prod(z, axis=-2))
    got = _grads(product_over_inputs, z, g)
    want = _grads(lambda v: jnp.prod(v, axis=-2), z, g)
    # bit for bit: the closed form pairs as JAX's rule does (up to SMALL_PRODUCT factors),
    # longer products are JAX's rule itself
    np.testing.assert_array_equal(got, want)
    # the hand product rule, in float64 on the host
    z64, g64 = np.asarray(z, np.float64), np.asarray(g, np.float64)
    n = shape[-2]
    hand = np.stack([g64 * np.prod(np.delete(z64, i, axis=-2), axis=-2) for i in range(n)], -2)
    np.testing.assert_allclose(got, hand, rtol=1e-5, atol=1e-5)


def test_exact_zeros_give_the_product_of_the_others():
    z = jnp.array([[[0.0], [3.0], [0.5]], [[2.0], [0.0], [0.0]]])
    got = jax.grad(lambda z: jnp.sum(product_over_inputs(z)))(z)
    np.testing.assert_array_equal(got[0, :, 0], [1.5, 0.0, 0.0])
    np.testing.assert_array_equal(got[1, :, 0], [0.0, 0.0, 0.0])


def test_many_inputs_take_jax_rule():
    z = jax.random.uniform(jax.random.key(1), (4, SMALL_PRODUCT + 4, 2), minval=0.5, maxval=1.5)
    got = jax.grad(lambda z: jnp.sum(product_over_inputs(z)))(z)
    want = jax.grad(lambda z: jnp.sum(jnp.prod(z, axis=-2)))(z)
    np.testing.assert_array_equal(got, want)


def test_under_vmap_and_second_order():
    z = jax.random.uniform(jax.random.key(2), (3, 16, 2, 1), minval=0.5, maxval=1.5)
    f = jax.grad(lambda z: jnp.sum(product_over_inputs(z) ** 2))
    batched = jax.jit(jax.vmap(f))(z)
    for i in range(3):
        np.testing.assert_allclose(batched[i], f(z[i]), rtol=1e-6)
    # forward-over-reverse (a Hessian-vector product) goes through the same rule
    hvp = jax.jvp(jax.grad(lambda z: jnp.sum(product_over_inputs(z))), (z[0],), (z[0],))[1]
    want = jax.jvp(jax.grad(lambda z: jnp.sum(jnp.prod(z, axis=-2))), (z[0],), (z[0],))[1]
    np.testing.assert_allclose(hvp, want, rtol=1e-6)
