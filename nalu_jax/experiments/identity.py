"""Identity-extrapolation failure (docs/protocols.md, "Identity-extrapolation failure"; Trask et al. 2018, Fig. 1) as an experiment.

For each activation, MLP autoencoders of a scalar ``1 → 8 → 8 → 8 → 1`` (hidden layers of
``identity.hidden_layers`` units with that activation, a ``linear`` output layer; for the
arithmetic units ``nac_add``/``nau`` every layer is the unit) are trained with Adam on MSE for
``x ~ U[train_range)`` (fresh batch each step), many seeds at once (fixed-width seed blocks
of ``nalu_jax.engine.loop``; seed k's key is ``fold_in(key(seed), k)``, so every activation sees
the same batches). A seed whose loss or parameters become non-finite stops updating and is
counted as diverged (excluded from the statistics). NAU weights are projected after each step.

Test: ``|f(x) − x|`` on a fixed grid of ``identity.grid_size`` points over ``test_range``;
``mae_inside`` / ``mae_outside`` average it over grid points inside / outside the training
range. Each activation is one program of the shared run loop (``checkpoints/ACTIVATION``:
resumable, progress bar, devices; ``lr`` sweepable); the grid errors are evaluated every
``eval_every`` steps and judged at the last. Workdir (atomic writes): ``config.json``,
``seeds.csv``, ``errors.csv`` (median over non-diverged seeds per grid point),
``summary.json``, ``summary.md`` (mean with a Student-t 95% interval), ``curves.png``.
"""

from __future__ import annotations

import csv
import io
import math
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.config import ConfigError, validate_common
from nalu_jax.engine import train
from nalu_jax.engine.run import Outcome, Population, programs_over
from nalu_jax.experiments.contract import Experiment
from nalu_jax.models.arithmetic import ArithmeticNetwork
from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import plots, report
from nalu_jax.units import UNITS, TrainingNeeds, make_unit

SWEEPABLE = ("lr",)

SELF_STACKED = ("nac_add", "nau")  # arithmetic units used in every layer, output included


def _layer_units(name: str, hidden: tuple[int, ...]) -> list[tuple[str, int, int]]:
    sizes = (1, *hidden, 1)
    units = [name] * len(hidden) + [name if name in SELF_STACKED else "linear"]
    return [(u, sizes[i], sizes[i + 1]) for i, u in enumerate(units)]


def model_factory(name: str, hidden: tuple[int, ...]):
    """``rngs -> ArithmeticNetwork`` mapping ``x [batch, 1]`` → ``[batch, 1]``."""
    layers = _layer_units(name, hidden)
    return lambda rngs: ArithmeticNetwork([make_unit(u, i, o, rngs=rngs) for u, i, o in layers])


def validate(config) -> None:
    """Every field this experiment reads; one ``ConfigError`` sentence for a bad value."""
    validate_common(config, positive=(("identity.grid_size", config.identity.grid_size),))
    acts = tuple(config.identity.activations)
    unknown = [a for a in acts if a not in UNITS]
    if not acts or unknown or len(set(acts)) != len(acts):
        raise ConfigError(
            f"identity.activations must be distinct names of {sorted(UNITS)}, got {list(acts)}."
        )
    hidden = tuple(config.identity.hidden_layers)
    if not all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in hidden):
        raise ConfigError(f"identity.hidden_layers must be positive integers, got {list(hidden)}.")
    for field in ("train_range", "test_range"):
        lo, hi = getattr(config.identity, field)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"identity.{field} must be (lo, hi) with lo < hi, got {(lo, hi)}.")


def programs(config) -> list:
    """One compiled program per activation (the networks differ), run one after another."""
    return programs_over(config, "identity", "activation", config.identity.activations)


def grid(config) -> np.ndarray:
    ic = config.identity
    return np.asarray(
        jnp.linspace(float(ic.test_range[0]), float(ic.test_range[1]), int(ic.grid_size))
    )


def trainer_for(config) -> train.Trainer:
    """Per seed: Adam on MSE(f(x), x), x ~ U[train_range) fresh each step; the evaluation is
    ``|f(x) − x|`` on the test grid ``[G]``."""
    hidden = tuple(int(h) for h in config.identity.hidden_layers)
    factory = model_factory(config.identity.activation, hidden)
    lo, hi = (float(v) for v in config.identity.train_range)
    batch = int(config.train.batch_size)

    def loss(model, hp, state, key, data):
        x = jax.random.uniform(key, (batch, 1), jnp.float32, lo, hi)
        mse = jnp.mean((model(x) - x) ** 2)
        return mse, mse

    def evaluate(model, state, hp, data):
        xs = data["grid"]
        return state.aux, {"errors": jnp.abs(model(xs[:, None])[:, 0] - xs)}

    recipe = train.Recipe(factory, loss, evaluate, eval_data={"grid": jnp.asarray(grid(config))})
    return train.make_train(recipe, config, hparams(config))


def hparams(config) -> train.HParams:
    return train.build_hparams(config.train, TrainingNeeds())


def population(config, settings) -> Population:
    return Population(
        trainer_for(config), [hparams(s.config) for s in settings], [{} for _ in settings]
    )


def _stats(values, diverged) -> dict:
    v = np.where(diverged, np.nan, values)
    mean, lo, hi = metrics_lib.mean_interval(v)
    return {"mean": mean, "interval": (lo, hi), "median": metrics_lib.median(v)}


def write_results(workdir, config, outcome: Outcome) -> dict:
    """Per activation and seed, MAE inside / outside the training range; write the workdir."""
    ic = config.identity
    xs = grid(config)
    inside = (xs >= ic.train_range[0]) & (xs <= ic.train_range[1])
    results, per_activation = {}, {}
    for name in ic.activations:
        merged = outcome.results[name]
        r = {
            "errors": merged["history"]["errors"][-1],
            "diverged": merged["diverged"],
            "diverged_at": merged["diverged_at"],
        }
        with np.errstate(all="ignore"):
            r["mae_inside"] = np.mean(r["errors"][:, inside], axis=1)
            r["mae_outside"] = np.mean(r["errors"][:, ~inside], axis=1)
        results[name] = r
        per_activation[name] = {
            "mae_inside": _stats(r["mae_inside"], r["diverged"]),
            "mae_outside": _stats(r["mae_outside"], r["diverged"]),
            "diverged": int(np.sum(r["diverged"])),
        }
    timings = [report.timing(outcome.results[n]) for n in ic.activations]
    summary = {
        "experiment": "identity",
        "activations": per_activation,
        "num_seeds": int(len(outcome.run_seed)),
        "first_seed": int(config.first_seed),
        "root_seed": int(config.seed),
        "num_steps": int(config.num_steps),
        "lr": float(config.train.lr),
        "hidden_layers": [int(h) for h in ic.hidden_layers],
        "train_range": [float(v) for v in ic.train_range],
        "test_range": [float(v) for v in ic.test_range],
        "wall_time_s": sum(t["wall_time_s"] for t in timings),
        "compile_time_s": sum(t["compile_time_s"] for t in timings),
    }
    write_outputs(workdir, outcome.run_seed, xs, results, summary)
    return summary


def format_summary(summary: dict) -> str:
    """Markdown table: MAE inside / outside the training range, mean [95% CI], per activation."""
    if "settings" in summary:
        return report.settings_markdown(summary, format_summary)

    def cell(s):
        lo, hi = s["interval"]
        return f"{s['mean']:.4g} [{lo:.4g}, {hi:.4g}]"

    lo, hi = summary["train_range"]
    lines = [
        f"| activation | MAE inside [{lo:g}, {hi:g}] | MAE outside | diverged |",
        "|---|---|---|---|",
    ]
    for name, s in summary["activations"].items():
        row = (name, cell(s["mae_inside"]), cell(s["mae_outside"]), s["diverged"])
        lines.append("| {} | {} | {} | {} |".format(*row))
    note = (
        f"\n{summary['num_seeds']} seeds, {summary['num_steps']} steps, hidden layers "
        f"{summary['hidden_layers']}, test range {summary['test_range']}. Mean over non-diverged "
        "seeds with a Student-t 95% interval.\n"
    )
    return "\n".join(lines) + "\n" + note


def write_outputs(workdir: str, seeds, xs, results: dict, summary: dict) -> None:
    """seeds.csv, errors.csv, summary.json, summary.md and curves.png (all atomic)."""
    join = lambda name: os.path.join(workdir, name)
    rows = [("activation", "seed", "mae_inside", "mae_outside", "diverged")]
    err_rows = [("activation", "x", "median_abs_error")]
    for name, r in results.items():
        for i, seed in enumerate(seeds):
            rows.append(
                (name, int(seed), repr(float(r["mae_inside"][i])),
                 repr(float(r["mae_outside"][i])), int(r["diverged"][i]))
            )  # fmt: skip
        med = _median_curve(r)
        err_rows += [(name, repr(float(x)), repr(float(m))) for x, m in zip(xs, med, strict=True)]
    report.atomic_write(join("seeds.csv"), _csv(rows))
    report.atomic_write(join("errors.csv"), _csv(err_rows))
    report.atomic_write(join("summary.json"), report.dumps(summary) + "\n")
    report.atomic_write(join("summary.md"), format_summary(summary))
    report.write_png(join("curves.png"), lambda: curves_png(xs, results, summary["train_range"]))


def _median_curve(r) -> np.ndarray:
    live = r["errors"][~r["diverged"]]
    if live.size == 0:
        return np.full(r["errors"].shape[1], np.nan)
    with warnings.catch_warnings():  # a point no live seed holds finite: NaN, a gap
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(np.where(np.isfinite(live), live, np.nan), axis=0)


def _csv(rows) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def curves_png(xs, results: dict, train_range) -> bytes:
    """Median |f(x) − x| over seeds versus x, one line per activation, log-scale y."""
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.axvspan(*train_range, color="0.9", label="training range")
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(results), 2)))  # > 10 distinct lines
    for (name, r), color in zip(results.items(), colors, strict=False):
        ax.plot(xs, np.maximum(_median_curve(r), 1e-8), label=name, lw=1.2, color=color)
    ax.set(xlabel="x", ylabel="median |f(x) − x| over seeds", yscale="log")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return plots.png(fig)


EXPERIMENT = Experiment(
    name="identity",
    validate=validate,
    sweepable=SWEEPABLE,
    population=population,
    write_results=write_results,
    format_summary=format_summary,
    programs=programs,
)
