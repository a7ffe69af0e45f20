"""Shared fixtures: config loading, an isolated threshold cache for every test, one XLA
compilation cache for the whole run, the platform (``cpu_only``: a property of XLA:CPU alone)
and the environment of subprocess tests."""

import os
import shutil
import tempfile

import pytest

# One persistent compilation cache for the whole test run: this process, its pytest-xdist
# workers and the subprocesses the tests start (they inherit the environment). The suite
# compiles many programs more than once (a run and its resume, a run alone and among other
# seeds, a launcher's cell and the same cell re-checked, each in its own process); a hit returns
# the executable that compiling again would, so no test's numbers change, only the time (a third
# less on the tests that resume and re-run). A cache the caller set (JAX_COMPILATION_CACHE_DIR)
# is used as it is; the run's own starts empty and is removed when the run ends. Its size limit
# (far above what the suite writes: nothing is evicted) is what makes JAX read and write
# entries under a file lock (the filelock package); without one an entry is written in place,
# a worker can read another's half-written entry, and the failed read's warning lands on the
# stderr of a child whose stderr a test reads line by line.
OWN_CACHE_PREFIX = "nalu_jax_test_xla_cache_"
_OWN_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _OWN_CACHE = tempfile.mkdtemp(prefix=OWN_CACHE_PREFIX)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _OWN_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(16 << 30))


# Runs here write their numbers without their PNGs (``NALU_JAX_FIGURES=0``, inherited by the
# subprocesses): the whole suite 3% faster on 2 cores. The tests of the figures themselves
# turn them on (``figures_on``); the caller's value, if set, is used.
os.environ.setdefault("NALU_JAX_FIGURES", "0")


# pytest-xdist workers sharing one GPU (the README's `-n 2`): JAX's client takes 75% of an
# accelerator's memory when it starts, so workers beyond the first run out (on an H200 with 8
# workers, 8 of the first 13 tests failed so). Each allocates what it uses instead, unless the
# caller sets it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


from nalu_jax.config import load_config  # noqa: E402, F401  (tests import it from here)
from nalu_jax.units import import_plugins  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Units of one's own join the registry-driven battery (tests/test_registry.py) and the parity
# listing: NALU_JAX_PLUGINS=mypkg.units python -m pytest tests (docs/own_unit.md).
import_plugins(os.environ.get("NALU_JAX_PLUGINS", ""))


def jax_platform() -> str:
    """The platform this process's JAX computes on ("cpu", "gpu", "tpu"); starts JAX."""
    import jax

    return jax.default_backend()


def pytest_runtest_setup(item):
    # Last bits that two programs share, or that an XLA:CPU option changes, are properties of
    # XLA:CPU: a GPU fuses and orders sums its own way. Such a test says so with
    # @pytest.mark.cpu_only("why") and is skipped elsewhere, naming the reason.
    mark = item.get_closest_marker("cpu_only")
    if mark is not None and jax_platform() != "cpu":
        pytest.skip(f"a property of XLA:CPU, not of {jax_platform()}: {mark.args[0]}")


def assert_same_bits_on_cpu(a, b, *, rtol=1e-5, atol=1e-7) -> None:
    """Every leaf of two trees (arrays, states) equal: bit for bit on XLA:CPU, the platform
    whose bits these comparisons pin (two programs computing the same values there round
    alike); elsewhere within ``rtol``/``atol``, since a GPU fuses and orders each program its
    own way (last bits apart, 1 ulp in the cases an H100 showed)."""
    import jax
    import numpy as np

    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    exact = jax_platform() == "cpu"
    for x, y in zip(leaves_a, leaves_b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype
        if exact or not np.issubdtype(x.dtype, np.floating):
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def subprocess_env(**extra) -> dict:
    """This process's environment for a subprocess run from the checkout: ``PYTHONPATH``
    extended by the checkout, never replaced (dependencies installed with ``pip --target``
    live there), plus ``extra``."""
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def tiny(config, *, seeds=2, steps=1000, eval_every=500):
    """Shrink a config to a seconds-long run."""
    config.num_seeds = seeds
    config.num_steps = steps
    config.eval_every = eval_every
    config.checkpoint_every = eval_every
    config.eval_size = 500
    config.task.threshold_samples = 20_000
    return config


@pytest.fixture
def figures_on(monkeypatch):
    """Runs in this test, and the subprocesses it starts, draw their PNGs."""
    monkeypatch.setenv("NALU_JAX_FIGURES", "1")


@pytest.fixture(autouse=True)
def _threshold_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NALU_JAX_CACHE", str(tmp_path_factory.mktemp("cache")))
