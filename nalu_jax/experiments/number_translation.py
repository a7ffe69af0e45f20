"""Number translation (docs/protocols.md, "Number translation"): "two hundred and thirty four" → 234, many seeds at once.

Model (``nalu_jax.models.sequence.NumberTranslationModel``): token embedding → LSTM → with
``model.output = "recurrent"`` (the spec's set-up) a recurrent arithmetic output cell h_t =
Cell(concat(lstm_t, h_{t−1})) (1 output, state 0, pad tokens skipped) whose final h is the
value, or with ``"last"`` (the NALU authors' set-up, ``setup=authors``) a static unit ``H → 1``
(a linear layer for the recurrent baselines) on the LSTM output at the last non-pad token.
Trained on batches drawn from the 169 training numbers; evaluated on the 200 validation and
630 test numbers. Each seed is judged at its evaluation with the lowest validation MSE: test
MSE and exact-match accuracy (round(y) == n) there; a seed is solved when that accuracy
reaches ``success_accuracy`` (default: all 630).

Writes ``config.json``, ``metrics.jsonl``, ``seeds.csv``, ``summary.json``/``summary.md`` and
``curves.png``; checkpoints in ``checkpoints/`` make a re-run of the same command resume.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.config import ConfigError, choice, validate_common
from nalu_jax.engine import train
from nalu_jax.engine.run import Outcome, Population
from nalu_jax.experiments import _sequence
from nalu_jax.experiments.contract import Experiment
from nalu_jax.models.sequence import TRANSLATION_OUTPUTS, NumberTranslationModel, cell_options
from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import plots
from nalu_jax.reporting import report as rep
from nalu_jax.tasks import translation as tr_lib
from nalu_jax.units import UNITS
from nalu_jax.units.recurrent import RECURRENT_BASELINES

SPLITS = ("valid", "test")
FIELDS = ("mse", "mae", "acc")
SWEEPABLE = _sequence.SWEEPABLE


def validate(config) -> None:
    """Every field a user may get wrong, as one ``ConfigError`` sentence."""
    m = config.model
    validate_common(
        config,
        positive=(("model.embedding_size", m.embedding_size), ("model.hidden_size", m.hidden_size)),
    )
    try:
        config.model.name in UNITS  # noqa: B015  (a "module:Class" name is imported here)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    names = sorted(UNITS) + list(RECURRENT_BASELINES)
    choice("model.name", m.name, names)
    output = output_of(config)
    choice("model.output", output, TRANSLATION_OUTPUTS)
    if output == "last":
        for field, value in (
            ("learn_initial_state", m.learn_initial_state),
            ("log_space", m.log_space),
        ):
            if value not in (False, "auto"):
                raise ConfigError(
                    f"model.{field} applies only to model.output='recurrent' (a recurrent "
                    f"output cell), got {value!r} with model.output='last'."
                )
    if not 0.0 <= config.success_accuracy <= 1.0:
        raise ConfigError(f"success_accuracy must be in [0, 1], got {config.success_accuracy!r}.")


def output_of(config) -> str:
    """``model.output``; "recurrent" for configs written before the field existed."""
    return config.model.get("output", "recurrent")


def trainer_for(config) -> train.Trainer:
    """The per-seed ``Trainer`` of ``config``."""
    m = config.model
    output = output_of(config)
    if output == "recurrent":
        options = cell_options(
            m.name,
            log_space=m.log_space,
            learn_initial_state=m.learn_initial_state,
            unit_options=dict(m.unit_options),
        )
    else:  # a static head: only the unit's own options apply (none for the linear head)
        options = {} if m.name in RECURRENT_BASELINES else {"unit_options": dict(m.unit_options)}

    def factory(rngs):
        return NumberTranslationModel(
            len(tr_lib.VOCAB),
            m.name,
            rngs=rngs,
            embedding_size=m.embedding_size,
            hidden_size=m.hidden_size,
            readout=m.readout,
            output=output,
            **options,
        )

    numbers = tr_lib.split(int(config.data.split_seed))
    arrays = {k: tr_lib.dataset(v) for k, v in numbers.items()}
    batch = int(config.train.batch_size)

    def model_loss(model, data_key, noise_key, data):
        idx = jax.random.randint(data_key, (batch,), 0, data["values"].shape[0])
        y, regs = model(data["tokens"][idx], training=True, key=noise_key)
        return jnp.mean((y - data["values"][idx]) ** 2), regs

    def eval_metrics(model, state, hp, data):
        out = {"sparsity": model.sparsity_error()}
        for split in SPLITS:
            tokens, values = data[split]
            y, _ = model(tokens)
            out[f"{split}_mse"] = jnp.mean((y - values) ** 2)
            out[f"{split}_mae"] = jnp.mean(jnp.abs(y - values))
            out[f"{split}_acc"] = jnp.mean((jnp.round(y) == values).astype(jnp.float32))
        return state.aux, out

    tokens, values = arrays["train"]
    train_data = {"tokens": jnp.asarray(tokens), "values": jnp.asarray(values)}
    eval_data = {s: tuple(jnp.asarray(a) for a in arrays[s]) for s in SPLITS}
    return _sequence.trainer_for(
        config, factory, model_loss, eval_metrics, train_data=train_data, eval_data=eval_data
    )


def judge(history, diverged, success_accuracy: float) -> dict:
    """Per seed ``[S]``: the evaluation with the lowest validation MSE (earliest on ties, NaN as
    +inf) and the valid/test metrics there; solved = test accuracy ≥ ``success_accuracy``."""
    valid = history["valid_mse"]
    best = np.argmin(np.where(np.isnan(valid), np.inf, valid), axis=0)
    seeds = np.arange(valid.shape[1])
    out = {"best_step": history["step"][best]}
    for split in SPLITS:
        for k in FIELDS:
            out[f"{split}_{k}"] = history[f"{split}_{k}"][best, seeds].astype(np.float64)
    out["solved"] = (out["test_acc"] >= success_accuracy) & ~diverged
    return out


def metrics_jsonl(history, num_done, diverged_at, first=0) -> str:
    """One JSON line per evaluation ``first ≤ e < num_done``: quantiles over seeds of each
    metric."""
    lines = []
    for e in range(first, num_done):
        line = rep.line_head(history, e, diverged_at)
        for split in SPLITS:
            for k in FIELDS:
                line[f"{split}_{k}"] = metrics_lib.quantiles(history[f"{split}_{k}"][e])
        lines.append(rep.dumps(line) + "\n")
    return "".join(lines)


def population(config, settings) -> Population:
    pop = _sequence.population(trainer_for(config), settings)
    pop.metrics_jsonl = metrics_jsonl
    return pop


def write_results(workdir, config, outcome: Outcome) -> dict:
    """Judge each seed at its best validation MSE; write the workdir; returns the summary."""
    merged, seeds = outcome.results[""], outcome.run_seed
    history, diverged = merged["history"], merged["diverged"]
    judged = judge(history, diverged, float(config.success_accuracy))
    splits = []
    for split in SPLITS:
        values = {k: judged[f"{split}_{k}"] for k in FIELDS}
        group = rep.group_summary(values, judged["solved"] if split == "test" else None)
        splits.append({"split": split, **group})
    summary = {
        **_sequence.run_fields(config, seeds, merged),
        "output": output_of(config),
        "success_accuracy": float(config.success_accuracy),
        "splits": splits,
    }
    columns = {
        "seed": seeds,
        "solved": judged["solved"].astype(int),
        "best_step": judged["best_step"],
    }
    columns.update({f"{s}_{k}": judged[f"{s}_{k}"] for s in SPLITS for k in FIELDS})
    columns.update(diverged=diverged.astype(int), diverged_at=merged["diverged_at"])
    rep.write_files(
        workdir,
        {
            "metrics.jsonl": metrics_jsonl(history, len(history["step"]), merged["diverged_at"]),
            "seeds.csv": rep.csv_text(columns),
            "summary.json": rep.dumps(summary) + "\n",
            "summary.md": format_summary(summary),
            "curves.png": lambda: _plot(history),
        },
    )
    return summary


def format_summary(summary: dict) -> str:
    """The printed and saved table: run facts, then one row per split."""
    if "settings" in summary:
        return rep.settings_markdown(summary, format_summary)
    s = summary
    if s.get("output", "recurrent") == "last":
        head = "linear" if s["model"] in RECURRENT_BASELINES else s["model"]
        model = f"embedding → LSTM → {head} layer on the last token"
    else:
        model = f"embedding → LSTM → {s['model']} output cell"
    header = [
        ("model", model),
        ("seeds", f"{s['num_seeds']} (first {s['first_seed']}, root {s['root_seed']})"),
        ("steps", s["num_steps"]),
        ("diverged", s["diverged"]),
        ("wall time", f"{s['wall_time_s']:.1f} s (compile {s['compile_time_s']:.1f} s)"),
    ]
    columns = [
        "split",
        "success rate [95% CI]",
        "MSE (mean)",
        "MSE (median)",
        "MAE (mean)",
        "accuracy (mean)",
    ]
    rows = [
        [
            g["split"],
            rep.success_cell(g),
            rep.fmt(g["mse_mean"]),
            rep.fmt(g["mse_median"]),
            rep.fmt(g.get("mae_mean")),
            rep.fmt(g["acc_mean"], True),
        ]
        for g in s["splits"]
    ]
    note = (
        "Each seed at its lowest-validation-MSE evaluation. Solved: test exact-match accuracy "
        f">= {rep.fmt(s['success_accuracy'], True)}; Wilson score 95% interval."
    )
    return rep.markdown(header, columns, rows, note)


def _plot(history) -> bytes:
    q = lambda a: np.nanmedian(np.where(np.isfinite(a), a, np.nan), axis=1)
    with warnings.catch_warnings():  # all-NaN rows: every seed diverged
        warnings.simplefilter("ignore", RuntimeWarning)
        acc = {s: np.nanmean(history[f"{s}_acc"], 1) for s in SPLITS}
        mse = {f"{s} MSE (median)": q(history[f"{s}_mse"]) for s in SPLITS}
    series = {f"{s} accuracy (mean)": (acc[s], None) for s in SPLITS}
    return plots.group_plot(history["step"], series, xlabel="step", x_scale="linear", mse=mse)


EXPERIMENT = Experiment(
    name="number_translation",
    validate=validate,
    sweepable=SWEEPABLE,
    population=population,
    write_results=write_results,
    format_summary=format_summary,
)
