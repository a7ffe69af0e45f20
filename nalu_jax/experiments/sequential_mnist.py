"""Sequential MNIST (docs/protocols.md, "Sequential MNIST"): a CNN reads each digit image, a recurrent arithmetic cell
accumulates the sum, product or per-class counts; many seeds train at once.

``train_and_evaluate(config, workdir)`` trains the reference population first (the CNN with the
"solved accumulator" h_t = h_{t−1} + l_t, or · l_t; same seed numbers, so the comparison is
paired) unless ``reference.thresholds`` gives the thresholds or the model *is* the reference.
Its per-length success threshold is mean + t_{0.99, n−1}·sd/√n of the reference seeds' final
last-step test MSE. A seed solves length L when its final last-step MSE at L is below that.

Writes ``config.json``, ``metrics.jsonl``, ``seeds.csv``, ``summary.json``/``summary.md``,
``curves.png`` and ``reference.json``; checkpoints (``checkpoints/``) make a re-run of the
same command resume. The reference population is a program of its own (``REFERENCE``), trained
by the run loop in ``reference/`` (its ``config.json``, checkpoints, TensorBoard events and
``seeds.csv``), so it resumes, checks memory and splits over hosts as the model's runs do.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os

import jax.numpy as jnp
import numpy as np

from nalu_jax.config import ConfigError, choice, validate_common
from nalu_jax.engine import train
from nalu_jax.engine.run import Outcome, Population, run
from nalu_jax.experiments import _sequence
from nalu_jax.experiments import sequential_mnist_report as report
from nalu_jax.experiments.contract import Experiment
from nalu_jax.experiments.sequential_mnist_report import FIELDS, format_summary
from nalu_jax.models.sequence import SOLVED_ACCUMULATOR, SequentialDigitsModel, cell_options
from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import report as rep
from nalu_jax.tasks import digits as digits_lib
from nalu_jax.units import UNITS
from nalu_jax.units.recurrent import RECURRENT_BASELINES, RECURRENT_INITS

SWEEPABLE = _sequence.SWEEPABLE


def validate(config) -> None:
    """Every field a user may get wrong, as one ``ConfigError`` sentence."""
    validate_common(
        config,
        positive=(
            ("task.train_length", config.task.train_length),
            ("task.eval_sequences", config.task.eval_sequences),
        ),
    )
    choice("task.name", config.task.name, digits_lib.TASKS)
    lengths = list(config.task.test_lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise ConfigError(f"task.test_lengths must be positive integers, got {lengths!r}.")
    try:
        config.model.name in UNITS  # noqa: B015  (a "module:Class" name is imported here)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    names = sorted(UNITS) + list(RECURRENT_BASELINES) + [SOLVED_ACCUMULATOR]
    choice("model.name", config.model.name, names)
    choice("model.recurrent_init", config.model.get("recurrent_init", "random"), RECURRENT_INITS)
    hidden = config.model.get("baseline_hidden", 0)
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 0:
        raise ConfigError(f"model.baseline_hidden must be an integer >= 0, got {hidden!r}.")
    if hidden and config.model.name not in RECURRENT_BASELINES:
        raise ConfigError(
            f"model.baseline_hidden applies to the recurrent baselines "
            f"({', '.join(RECURRENT_BASELINES)}) only; set it to 0 for {config.model.name!r}."
        )
    if isinstance(config.reference.num_seeds, bool) or config.reference.num_seeds < 0:
        raise ConfigError(
            f"reference.num_seeds must be an integer >= 0, got {config.reference.num_seeds!r}."
        )
    if not 0.5 < config.reference.confidence < 1:
        raise ConfigError(
            f"reference.confidence must be in (0.5, 1), got {config.reference.confidence!r}."
        )
    given = config.reference.thresholds
    if given is not None and len(given) != len(lengths):
        raise ConfigError(
            f"reference.thresholds must have one value per task.test_lengths ({len(lengths)})."
        )


_DATASET: dict = {}  # the last dataset loaded, by its ``config.data`` (the reference reuses it)


def load_dataset(config):
    """``load_digits_dataset(config)``, its data errors as config errors (the last one loaded
    is kept: the model's and the reference's programs train on the same arrays)."""
    key = config.data.to_json(sort_keys=True)
    if key not in _DATASET:
        try:
            dataset = digits_lib.load_digits_dataset(config)
        except digits_lib.DataError as e:
            raise ConfigError(str(e)) from None
        _DATASET.clear()
        _DATASET[key] = dataset
    return _DATASET[key]


def trainer_for(config, cell: str | None = None, dataset=None) -> train.Trainer:
    """The per-seed ``Trainer`` of ``config`` (``cell`` overrides ``model.name``;
    ``dataset``: ``load_dataset(config)`` when already loaded)."""
    task, cell = config.task.name, cell or config.model.name
    dataset = dataset or load_dataset(config)
    train_images, train_labels, test_images, test_labels = dataset
    lengths = tuple(int(n) for n in config.task.test_lengths)
    m = config.model
    options = (
        {}
        if cell == SOLVED_ACCUMULATOR
        else cell_options(
            cell,
            log_space=m.log_space,
            learn_initial_state=m.learn_initial_state,
            unit_options=dict(m.unit_options),
            recurrent_init=m.get("recurrent_init", "random"),
        )
    )

    def factory(rngs):
        return SequentialDigitsModel(
            train_images.shape[1:],
            task,
            cell,
            rngs=rngs,
            padding=m.cnn_padding,
            softmax=m.softmax,
            baseline_hidden=m.get("baseline_hidden", 0) if cell in RECURRENT_BASELINES else 0,
            **options,
        )

    batch, train_length = int(config.train.batch_size), int(config.task.train_length)

    def model_loss(model, data_key, noise_key, data):
        idx = digits_lib.sample_indices(data_key, data["pool"], (batch, train_length))
        ys, regs = model(data["images"][idx], training=True, key=noise_key)
        mse = jnp.mean((ys - digits_lib.cumulative_targets(task, data["labels"][idx])) ** 2)
        return mse, regs

    def eval_metrics(model, state, hp, data):
        values = model.digit_values(data["images"])  # each test image through the CNN once
        per_length = []
        for seqs in data["sequences"]:
            ys, _ = model.accumulate(values[seqs])
            targets = digits_lib.cumulative_targets(task, data["labels"][seqs])
            per_length.append(digits_lib.sequence_metrics(ys, targets))
        out = {k: jnp.stack([m[k] for m in per_length]) for k in FIELDS}
        single = digits_lib.sequence_metrics(
            values[data["image_pool"]][:, None],
            digits_lib.digit_values(task, data["labels"][data["image_pool"]])[:, None],
        )
        out["image_mse"], out["image_acc"] = single["mse_last"], single["acc_last"]
        out["sparsity"] = model.sparsity_error()
        return state.aux, out

    train_data = {
        "images": jnp.asarray(train_images),
        "labels": jnp.asarray(train_labels),
        "pool": jnp.asarray(digits_lib.pool(train_labels, task)),
    }
    seqs = digits_lib.eval_sequences(test_labels, task, lengths, int(config.task.eval_sequences))
    eval_data = {
        "images": jnp.asarray(test_images),
        "labels": jnp.asarray(test_labels),
        "sequences": tuple(jnp.asarray(s) for s in seqs),
        "image_pool": jnp.asarray(digits_lib.pool(test_labels, task)),
    }
    # λ̂ and the other hyperparameters follow config.model.name (also for the reference)
    return _sequence.trainer_for(
        config, factory, model_loss, eval_metrics, train_data=train_data, eval_data=eval_data,
        unit=cell,
    )  # fmt: skip


def thresholds_from(mse_last, confidence: float = 0.99) -> np.ndarray:
    """Per length mean + t_{c, n−1}·sd/√n of the reference seeds' ``mse_last [S, L]`` (NaN
    and inf excluded; one finite seed gives its value, none gives NaN)."""
    out = []
    for col in np.asarray(mse_last, np.float64).T:
        finite = np.where(np.isfinite(col), col, np.nan)
        # The two-sided interval at level 2c − 1 ends at the one-sided t_c bound.
        mean, _, hi = metrics_lib.mean_interval(finite, 2 * confidence - 1)
        out.append(mean if math.isnan(hi) else hi)
    return np.asarray(out)


def reference_config(config):
    """The reference population's config: ``config`` with ``reference.num_seeds`` seeds (the
    same seed numbers, so the comparison is paired) and nothing swept."""
    c = config.copy_and_resolve_references()
    with c.unlocked():
        c.num_seeds = int(config.reference.num_seeds)
        for name in c.sweep:
            c.sweep[name] = None
    return c


def _reference_population(config, settings) -> Population:
    """The solved accumulator's program (λ̂ and the other hyperparameters follow
    ``config.model.name``, as the model's)."""
    return _sequence.population(trainer_for(config, SOLVED_ACCUMULATOR), settings)


def _reference_results(workdir, config, outcome: Outcome) -> dict:
    """The thresholds and the reference seeds' own figures (``WORKDIR/reference/seeds.csv``:
    a CNN that learnt −digit, say, shows here)."""
    history, seeds = outcome.results[""]["history"], outcome.run_seed
    final = history["mse_last"][-1]
    thresholds = thresholds_from(final, float(config.reference.confidence))
    mean = np.asarray([metrics_lib.mean_interval(c[np.isfinite(c)])[0] for c in final.T])
    columns = {"seed": seeds, "image_accuracy": history["image_acc"][-1]}
    for j, length in enumerate(config.task.test_lengths):
        columns[f"mse_last_{int(length)}"] = final[:, j].astype(np.float64)
    rep.atomic_write(os.path.join(workdir, "seeds.csv"), rep.csv_text(columns))
    return {
        "lengths": list(config.task.test_lengths),
        "num_seeds": len(seeds),
        "thresholds": thresholds.tolist(),
        "mse_last_mean": mean.tolist(),
    }


def _reference_table(summary: dict) -> str:
    rows = zip(summary["lengths"], summary["thresholds"], summary["mse_last_mean"], strict=True)
    header = [("reference seeds", summary["num_seeds"])]
    cells = [[n, rep.fmt(t), rep.fmt(m)] for n, t, m in rows]
    return rep.markdown(header, ["length", "threshold", "MSE (mean)"], cells)


#: the reference population as a program of its own, trained by ``run`` in
#: ``WORKDIR/reference`` (memory check, checkpoints, TensorBoard events, multi-host split)
REFERENCE = Experiment(
    name="sequential_mnist_reference",
    validate=validate,
    sweepable=(),
    population=_reference_population,
    write_results=_reference_results,
    format_summary=_reference_table,
)


def reference(config, workdir, progress):
    """Thresholds ``[L]`` and the reference's mean final last-step MSE ``[L]`` (or None): the
    config's, ``WORKDIR/reference.json``'s, or the reference population's, trained now."""
    if config.reference.thresholds is not None:
        return np.asarray(config.reference.thresholds, np.float64), None
    path = os.path.join(workdir, "reference.json")
    as_array = lambda v: np.asarray([math.nan if x is None else x for x in v], np.float64)
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
        return as_array(saved["thresholds"]), as_array(saved["mse_last_mean"])
    if int(config.reference.num_seeds) < 1 or config.model.name == SOLVED_ACCUMULATOR:
        return None, None
    saved = run(
        REFERENCE, reference_config(config), os.path.join(workdir, "reference"), progress=progress
    )
    if saved is None:  # a non-zero process of a multi-host run: process 0 judges and writes
        return None, None
    rep.atomic_write(path, rep.dumps(saved) + "\n")  # after reference/seeds.csv
    return as_array(saved["thresholds"]), as_array(saved["mse_last_mean"])


def population(config, settings) -> Population:
    """The model's program; the thresholds come from ``prepare`` (the reference population)."""
    pop = _sequence.population(trainer_for(config), settings)  # data errors: before the workdir
    return dataclasses.replace(pop, metrics_jsonl=_metrics_jsonl(config, None))


def _metrics_jsonl(config, thresholds):
    lengths = [int(n) for n in config.task.test_lengths]
    return lambda history, done, diverged_at, first: report.metrics_jsonl(
        history, done, thresholds, diverged_at, lengths, first
    )


def prepare(config, workdir, pop: Population, progress: bool) -> Population:
    """``pop`` with the per-length thresholds of the reference population in every setting."""
    thresholds, ref_mean = reference(config, workdir, progress)
    return dataclasses.replace(
        pop,
        contexts=[{**c, "thresholds": thresholds, "ref_mean": ref_mean} for c in pop.contexts],
        metrics_jsonl=_metrics_jsonl(config, thresholds),
    )


def write_results(workdir, config, outcome: Outcome) -> dict:
    """Judge each seed per test length against the thresholds; write the workdir."""
    context, merged = outcome.populations[""].contexts[0], outcome.results[""]
    thresholds, ref_mean = context["thresholds"], context["ref_mean"]
    lengths = [int(n) for n in config.task.test_lengths]
    seeds, history, diverged = outcome.run_seed, merged["history"], merged["diverged"]
    final = {k: history[k][-1] for k in FIELDS}  # [S, L]
    if thresholds is None and config.model.name == SOLVED_ACCUMULATOR:
        thresholds = thresholds_from(final["mse_last"], float(config.reference.confidence))
    judged = thresholds is not None
    solved = (final["mse_last"] < thresholds) & ~diverged[:, None] if judged else None
    per_length = []
    for j, n in enumerate(lengths):
        group = rep.group_summary(
            {k: final[k][:, j] for k in FIELDS}, None if not judged else solved[:, j]
        )
        group.update(
            length=n,
            threshold=float(thresholds[j]) if judged else None,
            reference_mse_last_mean=float(ref_mean[j]) if ref_mean is not None else None,
        )
        per_length.append(group)
    summary = {
        **_sequence.run_fields(config, seeds, merged),
        "task": config.task.name,
        "data": config.data.source,
        "train_length": int(config.task.train_length),
        "image_accuracy_mean": float(np.nanmean(history["image_acc"][-1])),
        "sparsity_error": metrics_lib.quantiles(history["sparsity"][-1]),
        "per_length": per_length,
    }
    columns = {
        "seed": seeds,
        "diverged": diverged.astype(int),
        "diverged_at": merged["diverged_at"],
        "image_accuracy": history["image_acc"][-1],
    }
    for j, n in enumerate(lengths):
        for k in FIELDS:
            columns[f"{k}_{n}"] = final[k][:, j].astype(np.float64)
        if judged:
            columns[f"solved_{n}"] = solved[:, j].astype(int)
    # the cell's sparsity error at the end (ICLR 2020 §4.3 reports it beside the success);
    # empty for cells that have none (the recurrent baselines)
    columns["sparsity_error"] = np.asarray(history["sparsity"][-1], np.float64)
    rep.write_files(
        workdir,
        {
            "metrics.jsonl": report.metrics_jsonl(
                history, len(history["step"]), thresholds, merged["diverged_at"], lengths
            ),
            "seeds.csv": rep.csv_text(columns),
            "summary.json": rep.dumps(summary) + "\n",
            "summary.md": format_summary(summary),
            "curves.png": lambda: report.curves_png(summary),
        },
    )
    return summary


EXPERIMENT = Experiment(
    name="sequential_mnist",
    validate=validate,
    sweepable=SWEEPABLE,
    population=population,
    write_results=write_results,
    format_summary=format_summary,
    prepare=prepare,
)
