"""nalu_jax: neural arithmetic units in JAX/Flax NNX, trained hundreds of seeds at once.

Units live in ``nalu_jax.units`` (registry ``UNITS``), networks in ``nalu_jax.models``, the
training core in ``nalu_jax.train`` and the end-to-end experiment in ``nalu_jax.engine``.
"""

__version__ = "0.1.0"
