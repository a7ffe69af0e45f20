"""The arithmetic family's writers (static, single-module and recurrent tasks): per run
``metrics.jsonl`` (one line per evaluation), ``seeds.csv`` (one row per seed), ``summary.json``
/ ``summary.md`` and ``curves.png`` (figures: ``nalu_jax.reporting.plots``); per sweep, the table of
settings. The generic pieces (atomic files, JSON, CSV, Markdown) are ``nalu_jax.reporting.report``'s.
"""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np

from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import plots
from nalu_jax.reporting.report import atomic_write, dumps, fmt, sci, steps, timing, write_png
from nalu_jax.tasks.arithmetic import op_label

SEED_COLUMNS = (
    "seed",
    "solved",
    "best_step",
    "interpolation_mse",
    "extrapolation_mse",
    "solved_at",
    "sparsity_error",
    "diverged",
    "diverged_at",
)


class SolvedTracker:
    """Seeds solved if the run ended now, fed one evaluation row at a time.

    A seed's best step is its lowest validation MSE so far (NaN as +inf, ties keep the
    earliest); it is solved when its test MSE there is below ``threshold`` (a scalar or one
    per seed).
    """

    def __init__(self, num_seeds: int, threshold):
        self.threshold = np.asarray(threshold, np.float64)
        self.best_valid = np.full(num_seeds, np.inf)
        self.best_test = np.full(num_seeds, np.nan)
        self.rows = 0  # evaluation rows consumed
        self.solved = 0  # the count after the last row

    def update(self, valid_row, test_row) -> int:
        v = np.where(np.isnan(valid_row), np.inf, valid_row)
        better = v < self.best_valid  # strict: ties keep the earliest step
        self.best_valid = np.where(better, v, self.best_valid)
        self.best_test = np.where(better, test_row, self.best_test)
        self.rows += 1
        self.solved = int(np.sum(self.best_test < self.threshold))
        return self.solved


def running_solved(valid: np.ndarray, test: np.ndarray, threshold) -> np.ndarray:
    """Seeds solved if the run ended at each evaluation: ``[E, S]`` → ``[E]`` counts."""
    tracker = SolvedTracker(valid.shape[1], threshold)
    return np.array([tracker.update(v, t) for v, t in zip(valid, test, strict=True)], np.int64)


def metrics_lines(history: dict, num_evals: int, threshold: float, diverged_at, first=0) -> str:
    """One JSON line per evaluation ``first ≤ e < num_evals``: quantiles over seeds, seeds
    solved and diverged so far."""
    steps = history["step"][:num_evals]
    valid, test = history["valid_mse"][:num_evals], history["test_mse"][:num_evals]
    solved = running_solved(valid, test, threshold)
    diverged_at = np.asarray(diverged_at)
    lines = []
    for e in range(first, num_evals):
        loss = history["train_loss"][e]
        lines.append(
            dumps(
                {
                    "step": int(steps[e]),
                    "train_loss": None if np.all(np.isnan(loss)) else metrics_lib.quantiles(loss),
                    "interpolation_mse": metrics_lib.quantiles(valid[e]),
                    "extrapolation_mse": metrics_lib.quantiles(test[e]),
                    "sparsity_error": metrics_lib.quantiles(history["sparsity"][e]),
                    "seeds_solved": int(solved[e]),
                    "seeds_diverged": int(np.sum((diverged_at >= 0) & (diverged_at < steps[e]))),
                }
            )
            + "\n"
        )
    return "".join(lines)


def seeds_csv(seeds, judgement: dict, diverged_at) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SEED_COLUMNS)
    for i, seed in enumerate(seeds):
        row = [int(seed), int(bool(judgement["solved"][i])), int(judgement["best_step"][i])]
        for name in ("interpolation_mse", "extrapolation_mse", "solved_at", "sparsity_error"):
            v = float(judgement[name][i])
            row.append("" if math.isnan(v) else (int(v) if name == "solved_at" else repr(v)))
        row += [int(bool(judgement["diverged"][i])), int(diverged_at[i])]
        w.writerow(row)
    return buf.getvalue()


def summary_markdown(summary: dict) -> str:
    """The printed and saved summary table (a Markdown table, one row per quantity)."""
    s = summary
    lo, hi = s["success_interval"]
    rows = [
        ("model", s["model"]),
        ("task", f"{s['task']} / {s['op']}"),
        ("ranges", f"{s['interpolation_range']} -> {s['extrapolation_range']}"),
        ("seeds", f"{s['num_seeds']} (first {s['first_seed']}, root {s['root_seed']})"),
        ("steps", s["num_steps"]),
        (
            "threshold (solved: extrapolation MSE below it at the best validation step)",
            fmt(s["threshold"]),
        ),  # fmt: skip
        ("success rate", f"{fmt(s['success_rate'], True)} [{fmt(lo, True)}, {fmt(hi, True)}]"),
        ("solved", f"{s['solved']} / {s['num_seeds']}"),
        (
            "solved at (median; mean [95% CI])",
            f"{steps(s['solved_at_median'])}; {steps(s['solved_at_mean'])} "
            f"[{steps(s['solved_at_interval'][0])}, {steps(s['solved_at_interval'][1])}]",
        ),
        (
            "sparsity error (mean [95% CI])",
            f"{sci(s['sparsity_error_mean'])} [{sci(s['sparsity_error_interval'][0])}, "
            f"{sci(s['sparsity_error_interval'][1])}]",
        ),
        ("diverged", s["diverged"]),
        ("wall time", f"{s['wall_time_s']:.1f} s (compile {s['compile_time_s']:.1f} s)"),
        ("seed-steps / s", f"{s['seed_steps_per_s']:,.0f}"),
    ]
    if s.get("stopped_at_step") is not None:
        stop = f"every seed had diverged by step {s['stopped_at_step']:,}: not trained after"
        rows.append(("training stopped", stop))
    lines = ["| quantity | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    note = (
        "\nSuccess: Wilson score 95% interval. solved_at and sparsity error: mean with a "
        "Student-t 95% interval over solved seeds.\n"
    )
    return "\n".join(lines) + "\n" + note


def model_label(model) -> str:
    """A model's name in reports: ``model.name``, or its units in order (``model.units``)."""
    return " → ".join(model.units) if "units" in model else model.name


def write_population(workdir, config, setting, context, seeds, merged, num_evals) -> dict:
    """Judge every seed of one setting against its threshold (``context``: ``threshold``,
    ``task``), write ``workdir``'s files and return the summary."""
    history, task, threshold = merged["history"], context["task"], float(context["threshold"])
    judgement = metrics_lib.judge_seeds(
        history["step"], history["valid_mse"], history["test_mse"], history["sparsity"],
        threshold, merged["diverged"], select_from=int(config.task.get("select_from_step", 0)),
    )  # fmt: skip
    summary = metrics_lib.summarize(judgement, threshold)
    summary.update(
        model=model_label(config.model),
        task=config.task.get("kind") or config.experiment,  # a family member: its own name
        op=op_label(task.op),
        input_size=task.input_size,
        interpolation_range=task.interpolation_range,
        extrapolation_range=task.extrapolation_range,
        setting=setting.name,
        setting_values=setting.values,
        num_steps=int(config.num_steps),
        first_seed=int(config.first_seed),
        root_seed=int(config.seed),
        threshold=threshold,
        **timing(merged),
    )
    write_outputs(workdir, seeds, judgement, merged["diverged_at"], history, num_evals, threshold,
                  summary)  # fmt: skip
    return summary


def write_outputs(workdir, seeds, judgement, diverged_at, history, num_evals, threshold, summary):
    """metrics.jsonl, seeds.csv, summary.json, summary.md and curves.png (all atomic)."""
    join = lambda name: os.path.join(workdir, name)
    atomic_write(join("metrics.jsonl"), metrics_lines(history, num_evals, threshold, diverged_at))
    atomic_write(join("seeds.csv"), seeds_csv(seeds, judgement, diverged_at))
    atomic_write(join("summary.json"), dumps(summary) + "\n")
    atomic_write(join("summary.md"), summary_markdown(summary))
    title = (
        f"{summary['model']}, {summary['task']} / {summary['op']}"
        + (f", {summary['setting']}" if summary.get("setting") else "")
        + f": {summary['num_steps']:,} steps, {summary['num_seeds']} seeds"
    )
    write_png(join("curves.png"),
              lambda: plots.curves_png(history, num_evals, threshold, running_solved, title))  # fmt: skip


def combined_markdown(summaries: list) -> str:
    """One row per sweep setting: success rate with its interval, solved-at, sparsity."""
    models = ", ".join(dict.fromkeys(s["model"] for s in summaries))
    # launch.compare_models names each row "MODEL [SETTING]"; a sweep's rows are its settings
    by_model = all(str(s["setting"]).split(" ")[0] == s["model"] for s in summaries)
    swept = any(s.get("setting_values") for s in summaries)
    name = ("model and setting" if swept else "model") if by_model else "setting"
    head = f"| # | {name} | success | 95% CI | solved at (median) | sparsity (mean) | diverged |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for h, s in enumerate(summaries):
        lo, hi = s["success_interval"]
        lines.append(
            f"| {h:03d} | {s['setting']} | {s['solved']}/{s['num_seeds']} "
            f"({fmt(s['success_rate'], True)}) | [{fmt(lo, True)}, {fmt(hi, True)}] | "
            f"{steps(s['solved_at_median'])} | {sci(s['sparsity_error_mean'])} | {s['diverged']} |"
        )
    s0 = summaries[0]
    lines.append(
        f"\nmodel {models}; {s0['task']} / {s0['op']}; {s0['num_steps']} steps; "
        "Wilson 95% intervals.\n"
    )
    return "\n".join(lines)
