"""nalu_jax: neural arithmetic units in JAX/Flax NNX, trained hundreds of seeds at once.

What a user importing the library reaches for first::

    from nalu_jax import NMU, make_unit, build_model, make_train, run

* units (``nalu_jax.units``): every unit as an NNX module, the registry ``UNITS``,
  ``make_unit(name, in, out, rngs=...)``, ``register_unit`` for a unit of one's own
  (docs/own_unit.md);
* models (``nalu_jax.models``): ``build_model`` / ``model_factory`` (the model table
  ``MODELS``), ``RecurrentNetwork``;
* the training core (``nalu_jax.engine.train``): ``make_train(recipe, config, hparams)`` → pure
  per-seed ``init`` / ``train`` / ``evaluate``;
* the run loop (``nalu_jax.engine.run``): ``run(experiment, config, workdir)`` for any experiment of
  ``nalu_jax.experiments.EXPERIMENTS``; ``register_experiment(Experiment(...))`` for an
  experiment of one's own (docs/own_experiment.md).
"""

from nalu_jax.engine.run import run
from nalu_jax.engine.train import Recipe, make_train, seed_keys
from nalu_jax.experiments.contract import Experiment, register_experiment
from nalu_jax.models.arithmetic import (
    MODELS,
    ArithmeticNetwork,
    RecurrentNetwork,
    build_model,
    model_factory,
)
from nalu_jax.units import *  # noqa: F403
from nalu_jax.units import UNITS, make_unit
from nalu_jax.units import __all__ as _units_all

__version__ = "0.1.0"

__all__ = [
    *_units_all,
    "MODELS",
    "ArithmeticNetwork",
    "Experiment",
    "RecurrentNetwork",
    "Recipe",
    "UNITS",
    "build_model",
    "make_train",
    "make_unit",
    "model_factory",
    "register_experiment",
    "run",
    "seed_keys",
]
