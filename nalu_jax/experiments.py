"""The experiments ``nalu_jax.main`` can run, by ``config.experiment``.

Each entry names a module exposing ``train_and_evaluate(config, workdir, *, overwrite,
progress) -> summary dict`` and ``format_summary(summary) -> str`` (the printed table). Modules
are imported only when chosen, so a run pays for its own experiment alone.
"""

from __future__ import annotations

import importlib

from nalu_jax.config_utils import ConfigError

EXPERIMENTS: dict[str, str] = {
    "arithmetic": "nalu_jax.engine",  # static arithmetic task and single-module benchmark
    "sequential_mnist": "nalu_jax.sequential_mnist",
    "number_translation": "nalu_jax.number_translation",
    "identity": "nalu_jax.identity",  # identity-extrapolation failure of MLPs (tasks.md §6)
    "gridworld": "nalu_jax.gridworld",  # time-tracking grid world, A2C agents (NALU §4.5)
}


def get_experiment(name: str):
    """The module running experiment ``name``; unknown names are a ``ConfigError``."""
    if name not in EXPERIMENTS:
        raise ConfigError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}.")
    return importlib.import_module(EXPERIMENTS[name])
