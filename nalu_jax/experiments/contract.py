"""What an experiment is: the ``Experiment`` record the run loop (``nalu_jax.engine.run.run``) calls.

Each experiment module ends with one ``EXPERIMENT = Experiment(...)`` naming its functions;
``nalu_jax.experiments.EXPERIMENTS`` maps ``config.experiment`` to it. The run loop calls the
hooks in this order, every one of them on every run (the optional ones have defaults that do
nothing):

1. ``validate(config)``: every field a user may get wrong, as one ``ConfigError`` sentence;
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
"""

from __future__ import annotations

import dataclasses
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

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "name":
                ok = isinstance(value, str) and value
            elif field.name == "sweepable":
                ok = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
            else:
                ok = callable(value)
            if not ok:
                raise TypeError(f"Experiment {self.name!r}: {field.name} is {value!r}.")
