"""The suite's own compilation cache (``conftest.py``), shared by the pytest-xdist workers and
the processes the tests start: JAX reads and writes its entries under a file lock, so no
process reads an entry another is still writing."""

import os

import jax
import jax.numpy as jnp
import pytest
from conftest import OWN_CACHE_PREFIX


def test_the_suites_compilation_cache_reads_and_writes_under_a_lock():
    # set by conftest in the process pytest starts, inherited by its workers and children
    cache = os.environ["JAX_COMPILATION_CACHE_DIR"]
    if not os.path.basename(cache).startswith(OWN_CACHE_PREFIX):
        pytest.skip("the caller's JAX_COMPILATION_CACHE_DIR is used as it is")
    # a size limit is what turns JAX's lock on (jax._src.lru_cache: eviction enabled)
    assert jax.config.jax_compilation_cache_max_size > 0
    # a program no other test compiles: its cache lookup alone takes the lock
    jax.jit(lambda x: x * 3.25 - 1.5)(jnp.arange(7.0)).block_until_ready()
    assert os.path.exists(os.path.join(cache, ".lockfile"))
