"""The suite's own compilation cache (``conftest.py``), shared by the pytest-xdist workers and
the processes the tests start: JAX reads and writes its entries under a file lock, so no
process reads an entry another is still writing."""

import os

import conftest
import jax
import jax.numpy as jnp
import pytest


def test_the_suites_compilation_cache_reads_and_writes_under_a_lock():
    if conftest._OWN_CACHE is None:
        pytest.skip("the caller's JAX_COMPILATION_CACHE_DIR is used as it is")
    assert os.environ["JAX_COMPILATION_CACHE_DIR"] == conftest._OWN_CACHE
    # a size limit is what turns JAX's lock on (jax._src.lru_cache: eviction enabled)
    assert jax.config.jax_compilation_cache_max_size > 0
    # a program no other test compiles: its cache lookup alone takes the lock
    jax.jit(lambda x: x * 3.25 - 1.5)(jnp.arange(7.0)).block_until_ready()
    assert os.path.exists(os.path.join(conftest._OWN_CACHE, ".lockfile"))
