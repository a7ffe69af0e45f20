"""The experiments: each module supplies only what differs (data, model, loss, evaluation,
judgement, its table) to the one training core (``nalu_jax.train``) and run loop
(``nalu_jax.run``). See ``nalu_jax.run`` for the functions an experiment module exports.
"""

from __future__ import annotations

from nalu_jax.config import ConfigError
from nalu_jax.experiments import (
    arithmetic,
    gridworld,
    identity,
    number_translation,
    recurrent,
    sequential_mnist,
)
from nalu_jax.run import run

#: ``config.experiment`` → module
EXPERIMENTS: dict = {
    "arithmetic": arithmetic,  # static arithmetic task and single-module benchmark
    "recurrent": recurrent,  # recurrent arithmetic over sequences
    "sequential_mnist": sequential_mnist,
    "number_translation": number_translation,
    "identity": identity,  # identity-extrapolation failure of MLPs (docs/protocols.md, "Identity-extrapolation failure")
    "gridworld": gridworld,  # time-tracking grid world, A2C agents (NALU §4.5)
}

__all__ = ["EXPERIMENTS", "train_and_evaluate"]


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """``run`` the experiment ``config.experiment`` names (flax's examples' entry shape)."""
    name = config.get("experiment", "arithmetic")
    if name not in EXPERIMENTS:
        raise ConfigError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}.")
    return run(EXPERIMENTS[name], config, workdir, overwrite=overwrite, progress=progress)
