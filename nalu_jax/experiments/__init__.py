"""The experiments: each module supplies only what differs (data, model, loss, evaluation,
judgement, its table) to the one training core (``nalu_jax.engine.train``) and run loop
(``nalu_jax.engine.run``), as one ``Experiment`` record (``nalu_jax.experiments.contract``: the
hooks, required and optional, and when the run loop calls them).
"""

from __future__ import annotations

from nalu_jax.config import ConfigError
from nalu_jax.engine.run import run
from nalu_jax.experiments import (
    arithmetic,
    gridworld,
    identity,
    number_translation,
    recurrent,
    sequential_mnist,
)
from nalu_jax.experiments.contract import Experiment

#: the experiment of a config that names none
DEFAULT_EXPERIMENT = "arithmetic"

#: ``config.experiment`` → its ``Experiment``
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        arithmetic.EXPERIMENT,  # static arithmetic task and single-module benchmark
        recurrent.EXPERIMENT,  # recurrent arithmetic over sequences
        sequential_mnist.EXPERIMENT,
        number_translation.EXPERIMENT,
        identity.EXPERIMENT,  # identity-extrapolation failure of MLPs (NALU §1)
        gridworld.EXPERIMENT,  # time-tracking grid world, A2C agents (NALU §4.5)
    )
}

__all__ = ["DEFAULT_EXPERIMENT", "EXPERIMENTS", "Experiment", "experiment_of", "train_and_evaluate"]


def experiment_of(config) -> Experiment:
    """The ``Experiment`` that ``config.experiment`` names (``DEFAULT_EXPERIMENT`` if none)."""
    name = config.get("experiment", DEFAULT_EXPERIMENT)
    if name not in EXPERIMENTS:
        raise ConfigError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}.")
    return EXPERIMENTS[name]


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """``run`` the experiment ``config.experiment`` names (flax's examples' entry shape)."""
    return run(experiment_of(config), config, workdir, overwrite=overwrite, progress=progress)
