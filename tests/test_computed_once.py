"""``_base.computed_once`` and ``_base.cos``: the same bits as the plain value and as
``jnp.cos`` (values and gradients), computed once in a compiled differentiated step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nalu_jax.units import RealNPU, computed_once  # the public name, as own units import it
from nalu_jax.units._base import cos

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.5, -2e30, 1e-30, np.pi, -np.pi]


def _bits(a):
    return np.asarray(a).view(np.uint32 if np.asarray(a).dtype == np.float32 else np.uint64)


def test_computed_once_is_the_value_bit_for_bit():
    x = jnp.concatenate(
        [jnp.array(SPECIAL, jnp.float32), jax.random.normal(jax.random.key(0), (1000,)) * 1e3]
    )
    got = jax.jit(computed_once)(x)
    finite_or_inf = ~np.isnan(np.asarray(x))
    np.testing.assert_array_equal(_bits(got)[finite_or_inf], _bits(x)[finite_or_inf])  # −0 too
    assert np.isnan(np.asarray(got)[~finite_or_inf]).all()


def test_computed_once_passes_the_gradient_through():
    x = jax.random.normal(jax.random.key(1), (64, 3))
    g = jax.random.normal(jax.random.key(2), (64, 3))
    got = jax.jit(jax.grad(lambda v: jnp.sum(computed_once(v) * g)))(x)
    np.testing.assert_array_equal(got, g)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_cos_value_and_gradient_equal_jnp_cos(dtype):
    with jax.enable_x64(dtype == jnp.float64):
        t = jnp.concatenate(
            [
                jnp.array(SPECIAL, dtype),
                jax.random.uniform(jax.random.key(3), (4000,), dtype, -50.0, 50.0),
            ]
        )
        g = jax.random.normal(jax.random.key(4), t.shape, dtype)
        np.testing.assert_array_equal(jax.jit(cos)(t), jax.jit(jnp.cos)(t))

        def grad(f):
            return jax.jit(jax.grad(lambda v: jnp.sum(f(v) * g)))(t)

        np.testing.assert_array_equal(grad(cos), grad(jnp.cos))
        # and the hand derivative −sin(t)·g where t is finite
        ok = np.isfinite(np.asarray(t))
        hand = -np.sin(np.asarray(t)[ok]) * np.asarray(g)[ok]
        np.testing.assert_allclose(np.asarray(grad(cos))[ok], hand, rtol=1e-6)


def _compiled_ops(fn, *args):
    """How many cosine and sine ops the optimised XLA program of ``fn`` holds."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    return text.count(" cosine("), text.count(" sine(")


def test_a_differentiated_real_npu_evaluates_its_cosine_and_sine_once():
    # the gradients of W_re, the gate and the input all read the phase's cosine and sine; XLA
    # counts both as cheap and, without computed_once, copies them into each reading kernel
    unit = RealNPU(2, 1, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(unit)
    x = jax.random.uniform(jax.random.key(5), (128, 2), minval=-2.0, maxval=2.0)

    def loss(params, x):
        return jnp.mean(nnx.merge(graphdef, params)(x) ** 2)

    assert _compiled_ops(jax.value_and_grad(loss, argnums=(0, 1)), params, x) == (1, 1)
