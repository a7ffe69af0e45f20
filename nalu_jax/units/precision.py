"""The precision of every matrix product the library emits: full float32 unless a run asks.

On NVIDIA GPUs since Ampere, JAX computes a float32 ``dot_general`` or convolution at
``Precision.DEFAULT`` in TF32 (a 10-bit mantissa); the arithmetic tasks' success criterion
tolerates a relative error of about 1e-5, so no seed could pass there. Every contraction of the
units, models, agents and evaluation therefore passes its precision explicitly, read from this
module while it is traced: ``Precision.HIGHEST`` unless ``use_matmul_precision`` says otherwise
(the engine sets a run's ``config.matmul_precision`` for as long as the run traces). A unit
imported into other JAX code is thus right on a GPU whatever that code's global
``jax_default_matmul_precision``. On XLA:CPU the precision changes nothing: float32 products
are computed in float32 at every level.

The setting is a plain module variable, not a context variable: the engine compiles one program
per device on worker threads, which must see it too.

>>> with use_matmul_precision("default"):   # the platform's fast mode, on purpose
...     y = matmul(x, w)
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.config import MATMUL_PRECISIONS, check_matmul_precision

Precision = jax.lax.Precision

_current = Precision.HIGHEST


def precision_named(name: str) -> Precision:
    """``jax.lax.Precision`` for one of ``MATMUL_PRECISIONS`` (JAX's names: "highest",
    "float32", "high", "tensorfloat32", "default", "bfloat16"); a ``ConfigError`` otherwise."""
    return Precision(check_matmul_precision(name))


def matmul_precision() -> Precision:
    """The precision the library's contractions are traced with now (``HIGHEST`` by default)."""
    return _current


@contextlib.contextmanager
def use_matmul_precision(name: str | Precision = "highest"):
    """Trace the library's contractions at ``name`` (a ``Precision`` or one of
    ``MATMUL_PRECISIONS``) inside the ``with`` block; the previous setting after it.

    Only what is traced inside the block sees it: a function jitted and traced before keeps
    the precision it was traced with.
    """
    global _current
    before = _current
    _current = name if isinstance(name, Precision) else precision_named(name)
    try:
        yield _current
    finally:
        _current = before


def matmul(x, w):
    """``x @ w`` (``jnp.matmul``'s shapes and broadcasting) at ``matmul_precision()``."""
    return jnp.matmul(x, w, precision=matmul_precision())


def einsum(subscripts: str, *operands):
    """``jnp.einsum`` at ``matmul_precision()``."""
    return jnp.einsum(subscripts, *operands, precision=matmul_precision())


#: Flax layers whose contraction reads a ``precision`` attribute at call time
_FLAX_CONTRACTIONS = (nnx.Linear, nnx.LinearGeneral, nnx.Conv, nnx.ConvTranspose, nnx.Einsum)


def set_layer_precision(module: nnx.Module) -> nnx.Module:
    """Set ``precision = matmul_precision()`` on every Flax contraction layer in ``module``
    (itself included) and return it: ``nnx.Linear``/``Conv`` built without one, and the
    ``Linear`` gates inside ``nnx.LSTMCell``/``GRUCell``, which take no ``precision``."""
    for _, layer in nnx.iter_graph(module):  # every node of the graph
        if isinstance(layer, _FLAX_CONTRACTIONS):
            layer.precision = matmul_precision()
    return module


__all__ = [
    "MATMUL_PRECISIONS",
    "einsum",
    "matmul",
    "matmul_precision",
    "precision_named",
    "set_layer_precision",
    "use_matmul_precision",
]
