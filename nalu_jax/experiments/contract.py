"""What an experiment is: the ``Experiment`` record the run loop (``nalu_jax.engine.run.run``) calls.

Each experiment module ends with one ``EXPERIMENT = Experiment(...)`` naming its functions,
registered by ``register_experiment`` (the built-in ones in ``nalu_jax.experiments``, one of
one's own in a module named by ``--plugin``: docs/own_experiment.md); ``EXPERIMENTS`` maps
``config.experiment`` to it. The run loop calls the
hooks in this order, every one of them on every run (the optional ones have defaults that do
nothing):

1. ``validate(config)``: every field a user may get wrong, as one ``ConfigError`` sentence;
   called on the config and on each setting of its sweep (``engine.sweep.validate``);
2. ``programs(config)``: ``[(label, config)]``, one compiled program each (default: one,
   labelled ``""``; e.g. one per activation or agent, ``nalu_jax.engine.run.programs_over``);
3. ``population(config, settings) -> Population``: per program, the trainer every run shares,
   and per sweep setting (``sweepable`` lists what may be swept) its ``HParams`` and judging
   facts (``contexts``);
4. (the run loop checks memory and claims the workdir)
5. ``prepare(config, workdir, population, progress) -> Population``: work that needs the
   workdir before training (default: the population unchanged); returns the population to
   train, never changes the one it got (e.g. sequential MNIST's reference population, trained
   by its own ``run``, gives the per-length thresholds);
6. (training) then per sweep setting ``write_results(workdir, config, outcome) -> summary``:
   judge the merged results and write the files;
7. ``format_summary(summary) -> str``: the printed table of a summary or of a sweep's
   ``{"settings": [...]}`` (also written as ``summary.md`` of a sweep).

One more optional hook is not called by the run loop: ``merge_summary(summary, rows) ->
summary``, the summary of a committed cell's seeds with a later batch's (``summary``: the first
batch's; ``rows``: the union's ``seeds.csv`` rows in seed order), for an experiment whose
summary is a function of its ``seeds.csv``. With it, ``nalu_jax.reproduce.results.merge`` adds
a batch of new seeds to a committed cell (``launch/reproduce.py`` and
``launch/compare_models.py --results`` run only the missing seeds); without it (None, the
default), a cell with more seeds is run whole.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

from nalu_jax.engine.run import Outcome, Population

Config = Any  # an ml_collections.ConfigDict


def one_program(config: Config) -> list[tuple[str, Config]]:
    """The default ``programs``: the whole config as one program, labelled ``""``."""
    return [("", config)]


def unchanged(config: Config, workdir: str, population: Population, progress: bool):
    """The default ``prepare``: nothing to do before training."""
    return population


@dataclasses.dataclass(frozen=True)
class Experiment:
    """An experiment's hooks (see the module docstring for when each is called)."""

    name: str  #: the ``config.experiment`` value that selects it
    validate: Callable[[Config], None]
    sweepable: tuple[str, ...]  #: the ``config.sweep`` names it accepts
    population: Callable[[Config, list], Population]
    write_results: Callable[[str, Config, Outcome], dict]
    format_summary: Callable[[dict], str]
    programs: Callable[[Config], list[tuple[str, Config]]] = one_program
    prepare: Callable[[Config, str, Population, bool], Population] = unchanged
    merge_summary: Callable[[dict, list], dict] | None = None  #: see the module docstring

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "name":
                ok = isinstance(value, str) and value
            elif field.name == "sweepable":
                ok = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
            elif field.name == "merge_summary":
                ok = value is None or callable(value)
            else:
                ok = callable(value)
            if not ok:
                raise TypeError(f"Experiment {self.name!r}: {field.name} is {value!r}.")


#: ``config.experiment`` → its ``Experiment``: the built-in experiments and every one a user
#: registered (``register_experiment``); ``experiment_named`` also imports ``"module:NAME"``
EXPERIMENTS: dict[str, Experiment] = {}

HOW_TO_REGISTER = (
    "register one with nalu_jax.register_experiment(Experiment(...)) in a module named by "
    "--plugin (or NALU_JAX_PLUGINS), or name it 'module:NAME' (docs/own_experiment.md)"
)


def register_experiment(experiment: Experiment, *, replace: bool = False) -> str:
    """Add ``experiment`` to ``EXPERIMENTS`` under its name, the one way every experiment (the
    built-in ones too) becomes selectable by ``config.experiment``; returns the name.

    A second experiment under a taken name is a ``ValueError`` unless ``replace`` (registering
    the same record again, e.g. a plugin imported twice, is a no-op)."""
    if not isinstance(experiment, Experiment):
        raise TypeError(f"register_experiment takes an Experiment, got {experiment!r}.")
    have = EXPERIMENTS.get(experiment.name)
    if have is not None and have != experiment and not replace:
        raise ValueError(
            f"experiment {experiment.name!r} is already registered; pass replace=True to "
            "replace it."
        )
    EXPERIMENTS[experiment.name] = experiment
    return experiment.name


def experiment_named(name: str) -> Experiment:
    """The registered experiment ``name``; a ``"module:NAME"`` name imports ``module`` first,
    which registers experiment ``NAME`` or holds it as attribute ``NAME`` (registered here).
    ``KeyError`` with one sentence saying how to register one."""
    if name in EXPERIMENTS:
        return EXPERIMENTS[name]
    if isinstance(name, str) and ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise KeyError(
                f"experiment {name!r}: module {module_name!r} cannot be imported ({e}); put "
                "its folder on PYTHONPATH or install it."
            ) from None
        if attr in EXPERIMENTS:  # the module registered it
            return EXPERIMENTS[attr]
        held = getattr(module, attr, None)
        if isinstance(held, Experiment):  # the module holds it
            return EXPERIMENTS[register_experiment(held)]
    raise KeyError(
        f"experiment {name!r} is not registered (registered: {sorted(EXPERIMENTS)}); "
        f"{HOW_TO_REGISTER}."
    )
