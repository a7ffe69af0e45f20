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
from nalu_jax.experiments.contract import (
    EXPERIMENTS,
    HOW_TO_REGISTER,
    Experiment,
    experiment_named,
    register_experiment,
)

#: the experiment of a config that names none
DEFAULT_EXPERIMENT = "arithmetic"

# the built-in experiments register as one of one's own does (docs/own_experiment.md)
for _experiment in (
    arithmetic.EXPERIMENT,  # static arithmetic task and single-module benchmark
    recurrent.EXPERIMENT,  # recurrent arithmetic over sequences
    sequential_mnist.EXPERIMENT,
    number_translation.EXPERIMENT,
    identity.EXPERIMENT,  # identity-extrapolation failure of MLPs (NALU §1)
    gridworld.EXPERIMENT,  # time-tracking grid world, A2C agents (NALU §4.5)
):
    register_experiment(_experiment)

__all__ = [
    "DEFAULT_EXPERIMENT",
    "EXPERIMENTS",
    "HOW_TO_REGISTER",
    "Experiment",
    "experiment_of",
    "register_experiment",
    "train_and_evaluate",
]


def experiment_of(config) -> Experiment:
    """The ``Experiment`` that ``config.experiment`` names (``DEFAULT_EXPERIMENT`` if none; a
    ``"module:NAME"`` name imports the module that registers it)."""
    try:
        return experiment_named(config.get("experiment", DEFAULT_EXPERIMENT))
    except KeyError as e:
        raise ConfigError(e.args[0]) from None


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """``run`` the experiment ``config.experiment`` names (flax's examples' entry shape)."""
    return run(experiment_of(config), config, workdir, overwrite=overwrite, progress=progress)
