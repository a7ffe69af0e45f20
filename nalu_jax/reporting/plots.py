"""The figures every experiment writes (PNG bytes; matplotlib's Agg backend, no screen).

A run draws its PNGs unless ``NALU_JAX_FIGURES=0`` (every entry point's ``--nofigures`` sets
it): a sweep of many runs, or a test suite, that reads only the numbers saves drawing them
(0.6–1.5 s per figure in one profile of a smoke cell on 2 busy cores). The documents' figures
(``nalu_jax.reproduce.render``) are drawn either way."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np

FIGURES_ENV = "NALU_JAX_FIGURES"


def enabled() -> bool:
    """Whether runs draw their PNGs: ``NALU_JAX_FIGURES`` is 1 (the default) or 0."""
    value = os.environ.get(FIGURES_ENV, "1")
    if value not in ("0", "1"):
        raise ValueError(
            f"{FIGURES_ENV} must be 1 (draw each run's PNGs, the default) or 0 (none), "
            f"not {value!r}."
        )
    return value == "1"


def pyplot():
    """matplotlib.pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png(fig, title: str | None = None) -> bytes:
    """``fig`` as PNG bytes (then closed); ``title`` also goes into the file's Title text."""
    plt = pyplot()
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100, metadata={"Title": title} if title else None)
    plt.close(fig)
    return buf.getvalue()


def curves_png(
    history: dict, num_evals: int, threshold: float, running_solved, title: str = ""
) -> bytes:
    """Fraction of seeds solved over steps (``running_solved(valid, test, threshold)``), and
    median / quartile MSE curves; ``title`` names the run (model, op, steps, seeds)."""
    plt = pyplot()
    steps = history["step"][:num_evals]
    valid, test = history["valid_mse"][:num_evals], history["test_mse"][:num_evals]
    num_seeds = valid.shape[1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].plot(steps, running_solved(valid, test, threshold) / num_seeds)
    axes[0].set(xlabel="step", ylabel="fraction of seeds solved", ylim=(-0.02, 1.02))
    for name, data in (("interpolation", valid), ("extrapolation", test)):
        with warnings.catch_warnings():  # an evaluation no seed survived: a gap in the curve
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanquantile(np.where(np.isfinite(data), data, np.nan), [0.25, 0.5, 0.75], 1)
        (line,) = axes[1].plot(steps, q[1], label=f"{name} MSE (median)")
        axes[1].fill_between(
            steps, q[0], q[2], color=line.get_color(), alpha=0.2,
            label=f"{name} MSE (middle half of the seeds: 25%–75%)",
        )  # fmt: skip
    axes[1].axhline(threshold, color="k", ls="--", lw=0.8, label="success threshold")
    axes[1].set(xlabel="step", ylabel="MSE", yscale="log")
    axes[1].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return png(fig, title)


def group_plot(labels, series: dict, *, xlabel: str, x_scale: str, mse: dict) -> bytes:
    """Left: fractions per x (``series`` name → (values, (lo, hi) or None)); right: MSE lines
    (``mse`` name → values), log scale. ``x_scale``: "log", "linear" or "category"."""
    plt = pyplot()
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
    return png(fig)
