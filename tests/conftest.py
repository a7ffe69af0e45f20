"""Shared fixtures: config loading and an isolated threshold cache for every test."""

import os

import pytest

from nalu_jax.config import load_config  # noqa: F401  (tests import it from here)
from nalu_jax.units import import_plugins

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Units of one's own join the registry-driven battery (tests/test_registry.py) and the parity
# listing: NALU_JAX_PLUGINS=mypkg.units python -m pytest tests (docs/own_unit.md).
import_plugins(os.environ.get("NALU_JAX_PLUGINS", ""))


def tiny(config, *, seeds=2, steps=1000, eval_every=500):
    """Shrink a config to a seconds-long run."""
    config.num_seeds = seeds
    config.num_steps = steps
    config.eval_every = eval_every
    config.checkpoint_every = eval_every
    config.eval_size = 500
    config.task.threshold_samples = 20_000
    return config


@pytest.fixture(autouse=True)
def _threshold_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NALU_JAX_CACHE", str(tmp_path_factory.mktemp("cache")))
