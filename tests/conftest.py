"""Shared fixtures: config loading and an isolated threshold cache for every test."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_config(name: str, arg: str | None = None):
    """``configs/NAME.py``'s ``get_config(arg)``, as ml-collections' config flag would call it."""
    path = os.path.join(ROOT, "configs", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"config_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


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
