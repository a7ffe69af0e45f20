"""The plots of a table run, one PNG per op in ``WORKDIR/figures``.

Arithmetic tables: success rate, solved-at (mean) and sparsity error (mean) per model with
their 95% intervals, ours beside the published figure where both exist. Single-module: success
rate per range and model with Wilson intervals (the primer's per-range success plot).
"""

from __future__ import annotations

import math
import os

import numpy as np

from nalu_jax.reproduce.specs import OP_LABELS, TableSpec

PANELS = (
    ("success", "success rate", "linear"),
    ("solved_at", "solved at (mean)", "log"),
    ("sparsity_error", "sparsity error (mean)", "log"),
)


def _stat(r: dict, name: str, prefix: str = "") -> tuple[float, float, float]:
    mid = r.get(f"{prefix}{name}_rate" if name == "success" else f"{prefix}{name}_mean", math.nan)
    lo, hi = r.get(f"{prefix}{name}_lo", math.nan), r.get(f"{prefix}{name}_hi", math.nan)
    return (mid, lo, hi)


def _bars(ax, x, stats, label, color, log):
    mid, lo, hi = (np.array(v, float) for v in zip(*stats, strict=True)) if stats else ([],) * 3
    ok = np.isfinite(mid) & ((mid > 0) if log else True)
    if not ok.any():
        return
    err = np.stack([np.where(np.isfinite(lo), mid - lo, 0), np.where(np.isfinite(hi), hi - mid, 0)])
    err = np.clip(err, 0, None)[:, ok]
    if log:  # a lower bound at or below zero cannot be drawn on a log axis
        err[0] = np.minimum(err[0], mid[ok] * 0.999)
    ax.errorbar(x[ok], mid[ok], yerr=err, fmt="o", capsize=3, color=color, label=label)


def arithmetic_png(op: str, rows: list[dict]) -> bytes:
    from nalu_jax.reporting.plots import png, pyplot

    plt = pyplot()
    # the labels stand at 45° under the axes: a long one (a swept cell's setting) needs the room
    longest = max((len(r["paper_name"]) for r in rows), default=0)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4 + max(0, longest - 16) * 0.07))
    x = np.arange(len(rows), dtype=float)
    for ax, (name, title, scale) in zip(axes, PANELS, strict=True):
        log = scale == "log"
        _bars(ax, x - 0.12, [_stat(r, name) for r in rows], "ours", "C0", log)
        _bars(ax, x + 0.12, [_stat(r, name, "published_") for r in rows], "published", "C1", log)
        ax.set_xticks(x, [r["paper_name"] for r in rows], rotation=45, ha="right")
        ax.set(title=f"{OP_LABELS.get(op, op)}: {title}", yscale=scale)
        if name == "success":
            ax.set_ylim(-0.03, 1.03)
        if ax.has_data():
            ax.legend(fontsize=8)
    return png(fig)


def single_module_png(op: str, rows: list[dict]) -> bytes:
    from nalu_jax.reporting.plots import png, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    models = list(dict.fromkeys(r["paper_name"] for r in rows))
    for i, m in enumerate(models):
        mine = sorted((r for r in rows if r["paper_name"] == m), key=lambda r: int(r["range"]))
        x = np.array([int(r["range"]) for r in mine], float) + (i - len(models) / 2) * 0.05
        _bars(ax, x, [_stat(r, "success") for r in mine], m, f"C{i % 10}", False)
        ax.plot(x, [r["success_rate"] for r in mine], color=f"C{i % 10}", lw=0.8)
    ax.set(xlabel="range (1–9)", ylabel="success rate", ylim=(-0.03, 1.03),
           title=f"single module {OP_LABELS.get(op, op)}: success per range (Wilson 95%)")  # fmt: skip
    ax.set_xticks(range(1, 10))
    ax.legend(fontsize=8, ncol=2)
    return png(fig)


def write(spec: TableSpec, workdir: str, rows: list[dict]) -> list[str]:
    """One ``figures/OP.png`` per op with results; returns the paths written (none with
    figures off, ``plots.enabled``)."""
    from nalu_jax.reporting import plots
    from nalu_jax.reporting.report import write_png

    done = [r for r in rows if r["status"] == "done"]
    draw = single_module_png if spec.kind == "single_module" else arithmetic_png
    paths = []
    for op in dict.fromkeys(r["op"] for r in done):
        mine = [r for r in done if r["op"] == op]
        path = os.path.join(workdir, "figures", f"{op}.png")
        if plots.enabled():
            os.makedirs(os.path.dirname(path), exist_ok=True)
            paths.append(path)
        write_png(path, lambda op=op, mine=mine: draw(op, mine))
    return paths
