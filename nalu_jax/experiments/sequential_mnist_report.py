"""Sequential MNIST outputs: ``metrics.jsonl`` lines, the summary table and ``curves.png``."""

from __future__ import annotations

import numpy as np

from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import plots
from nalu_jax.reporting import report as rep

FIELDS = ("mse_last", "mse_all", "acc_last", "acc_all")


def _line(history, e, thresholds, diverged_at, lengths):
    line = rep.line_head(history, e, diverged_at)
    line["image_accuracy"] = metrics_lib.quantiles(history["image_acc"][e])
    line["lengths"] = {}
    for j, n in enumerate(lengths):
        entry = {k: metrics_lib.quantiles(history[k][e][:, j]) for k in FIELDS}
        if thresholds is not None:
            entry["seeds_solved"] = int(np.sum(history["mse_last"][e][:, j] < thresholds[j]))
        line["lengths"][str(n)] = entry
    return rep.dumps(line)


def metrics_jsonl(history, num_done, thresholds, diverged_at, lengths, first=0) -> str:
    """One JSON line per evaluation ``first ≤ e < num_done``: quantiles over seeds of each
    metric per test length (``thresholds [L]`` or None adds the seeds below the threshold)."""
    return "".join(
        _line(history, e, thresholds, diverged_at, lengths) + "\n" for e in range(first, num_done)
    )


def format_summary(summary: dict) -> str:
    """The printed and saved table: run facts, then one row per test length."""
    if "settings" in summary:
        return rep.settings_markdown(summary, format_summary)
    s = summary
    header = [
        ("model", s["model"]),
        ("task", f"{s['task']} (train length {s['train_length']})"),
        ("data", s["data"]),
        ("seeds", f"{s['num_seeds']} (first {s['first_seed']}, root {s['root_seed']})"),
        ("steps", s["num_steps"]),
        ("diverged", s["diverged"]),
        ("CNN digit accuracy (mean)", rep.fmt(s["image_accuracy_mean"], True)),
        ("wall time", f"{s['wall_time_s']:.1f} s (compile {s['compile_time_s']:.1f} s)"),
    ]
    columns = [
        "length",
        "threshold",
        "success rate [95% CI]",
        "MSE last (mean)",
        "accuracy last",
        "accuracy all",
    ]
    rows = [
        [
            g["length"],
            rep.fmt(g["threshold"]),
            rep.success_cell(g),
            rep.fmt(g["mse_last_mean"]),
            rep.fmt(g["acc_last_mean"], True),
            rep.fmt(g["acc_all_mean"], True),
        ]
        for g in s["per_length"]
    ]
    note = (
        "Success: final last-step MSE below the solved-accumulator reference threshold "
        "(mean + t_0.99·sd/√n over its seeds); Wilson score 95% interval."
    )
    return rep.markdown(header, columns, rows, note)


def curves_png(summary) -> bytes:
    groups = summary["per_length"]
    lengths = [g["length"] for g in groups]
    series = {"accuracy (last step)": ([g["acc_last_mean"] for g in groups], None)}
    if (rates := rep.success_series(groups)) is not None:
        series["success rate"] = rates
    mse = {"MSE last step (median)": [g["mse_last_median"] for g in groups]}
    if groups and groups[0]["threshold"] is not None:
        mse["reference threshold"] = [g["threshold"] for g in groups]
    return plots.group_plot(lengths, series, xlabel="sequence length", x_scale="log", mse=mse)
