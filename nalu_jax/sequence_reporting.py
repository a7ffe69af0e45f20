"""Workdir outputs of the recurrent experiments, grouped by test length or data split.

Each experiment judges seeds per group (a sequence length, or "valid"/"test"); these helpers
turn ``[S, G]`` arrays into ``seeds.csv`` rows, summary statistics, a Markdown table and a
plot. Every file is written atomically (``nalu_jax.reporting.atomic_write``).
"""

from __future__ import annotations

import csv
import io
import math
import os

import numpy as np

from nalu_jax import metrics as metrics_lib
from nalu_jax import reporting


def csv_text(columns: dict) -> str:
    """``{name: [S] values}`` → CSV text, one row per seed; NaN as an empty cell."""
    names = list(columns)
    rows = zip(*(np.asarray(columns[k]).tolist() for k in names), strict=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(names)
    for row in rows:
        w.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in row])
    return buf.getvalue()


def line_head(history: dict, e: int, diverged_at) -> dict:
    """Fields every ``metrics.jsonl`` line starts with: the step, training-loss quantiles over
    seeds (None at step 0) and the seeds diverged before that step (``diverged_at [S]``)."""
    step, loss = history["step"][e], history["train_loss"][e]
    return {
        "step": int(step),
        "train_loss": None if np.all(np.isnan(loss)) else metrics_lib.quantiles(loss),
        "seeds_diverged": int(np.sum((diverged_at >= 0) & (diverged_at < step))),
    }


def group_summary(values: dict, solved) -> dict:
    """One group's population statistics from per-seed ``values`` ``{name: [S]}`` and
    ``solved [S]`` (bool, or None when success is not judged)."""
    out = {}
    for name, v in values.items():
        mean, lo, hi = metrics_lib.mean_interval(np.where(np.isfinite(v), v, np.nan))
        out[f"{name}_mean"] = mean
        out[f"{name}_interval"] = (lo, hi)
        out[f"{name}_median"] = metrics_lib.median(np.where(np.isfinite(v), v, np.nan))
    if solved is not None:
        solved = np.asarray(solved, bool)
        out["solved"] = int(solved.sum())
        out["success_rate"] = float(solved.mean()) if solved.size else math.nan
        out["success_interval"] = metrics_lib.wilson_interval(int(solved.sum()), solved.size)
    return out


def fmt(v, pct=False) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{100 * v:.1f}%" if pct else f"{v:.4g}"


def success_cell(group: dict) -> str:
    if "success_rate" not in group:
        return "n/a"
    lo, hi = group["success_interval"]
    return f"{fmt(group['success_rate'], True)} [{fmt(lo, True)}, {fmt(hi, True)}]"


def markdown(header: list, columns: list, rows: list, note: str = "") -> str:
    """A key/value table, then a table with ``columns`` and ``rows`` (lists of cells)."""
    lines = ["| quantity | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in header]
    lines += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n" + (f"\n{note}\n" if note else "")


def group_plot(labels, series: dict, *, xlabel: str, x_scale: str, mse: dict) -> bytes:
    """Left: fractions per x (``series`` name → (values, (lo, hi) or None)); right: MSE lines
    (``mse`` name → values), log scale. ``x_scale``: "log", "linear" or "category"."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(labels)) if x_scale == "category" else np.asarray(labels, float)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, (values, interval) in series.items():
        values = np.asarray(values, float)
        if interval is not None:
            lo, hi = (np.asarray(b, float) for b in interval)
            yerr = np.stack([values - lo, hi - values])
            axes[0].errorbar(x, values, yerr=np.nan_to_num(yerr), marker="o", capsize=3, label=name)
        else:
            axes[0].plot(x, values, marker="o", label=name)
    axes[0].set(xlabel=xlabel, ylabel="fraction", ylim=(-0.02, 1.02))
    for name, values in mse.items():
        v = np.asarray(values, float)
        axes[1].plot(x, np.where(np.isfinite(v) & (v > 0), v, np.nan), marker="o", label=name)
    axes[1].set(xlabel=xlabel, ylabel="MSE", yscale="log")
    for ax in axes:
        if x_scale == "log":
            ax.set_xscale("log")
        elif x_scale == "category":
            ax.set_xticks(x, [str(v) for v in labels])
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def write_files(workdir: str, files: dict) -> None:
    """``{name: str | bytes}`` → atomic files in ``workdir``."""
    for name, data in files.items():
        reporting.atomic_write(os.path.join(workdir, name), data)
