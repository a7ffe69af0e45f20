"""Everything a run writes to its workdir, each file written atomically (temp file + rename).

``config.json``, ``metrics.jsonl`` (one line per evaluation), ``seeds.csv`` (one row per seed),
``summary.json`` / ``summary.md`` and ``curves.png``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile

import numpy as np

from nalu_jax import metrics as metrics_lib

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


def atomic_write(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN/inf; null means "undefined" (e.g. solved_at of no seed)
    return value


def dumps(value) -> str:
    return json.dumps(_jsonable(value), sort_keys=True)


class SolvedTracker:
    """Seeds solved if the run ended now, fed one evaluation row at a time.

    A seed's best step is its lowest validation MSE so far (NaN as +inf, ties keep the
    earliest); it is solved when its test MSE there is below ``threshold`` (a scalar or one
    per seed).
    """

    def __init__(self, num_seeds: int, threshold):
        self.threshold = threshold
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


def metrics_lines(history: dict, num_evals: int, threshold: float, diverged_at) -> str:
    """One JSON line per evaluation: quantiles over seeds, seeds solved and diverged so far."""
    steps = history["step"][:num_evals]
    valid, test = history["valid_mse"][:num_evals], history["test_mse"][:num_evals]
    solved = running_solved(valid, test, threshold)
    diverged_at = np.asarray(diverged_at)
    lines = []
    for e in range(num_evals):
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
        )
    return "\n".join(lines) + "\n"


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


def _fmt(v, pct=False):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{100 * v:.1f}%" if pct else f"{v:.4g}"


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
        ("threshold", _fmt(s["threshold"])),
        ("success rate", f"{_fmt(s['success_rate'], True)} [{_fmt(lo, True)}, {_fmt(hi, True)}]"),
        ("solved", f"{s['solved']} / {s['num_seeds']}"),
        (
            "solved at (median; mean [95% CI])",
            f"{_fmt(s['solved_at_median'])}; {_fmt(s['solved_at_mean'])} "
            f"[{_fmt(s['solved_at_interval'][0])}, {_fmt(s['solved_at_interval'][1])}]",
        ),
        (
            "sparsity error (mean [95% CI])",
            f"{_fmt(s['sparsity_error_mean'])} [{_fmt(s['sparsity_error_interval'][0])}, "
            f"{_fmt(s['sparsity_error_interval'][1])}]",
        ),
        ("diverged", s["diverged"]),
        ("wall time", f"{s['wall_time_s']:.1f} s (compile {s['compile_time_s']:.1f} s)"),
        ("seed-steps / s", f"{s['seed_steps_per_s']:,.0f}"),
    ]
    lines = ["| quantity | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    note = (
        "\nSuccess: Wilson score 95% interval. solved_at and sparsity error: mean with a "
        "Student-t 95% interval over solved seeds.\n"
    )
    return "\n".join(lines) + "\n" + note


def curves_png(history: dict, num_evals: int, threshold: float) -> bytes:
    """Fraction of seeds solved over steps, and median / quartile MSE curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = history["step"][:num_evals]
    valid, test = history["valid_mse"][:num_evals], history["test_mse"][:num_evals]
    num_seeds = valid.shape[1]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].plot(steps, running_solved(valid, test, threshold) / num_seeds)
    axes[0].set(xlabel="step", ylabel="fraction of seeds solved", ylim=(-0.02, 1.02))
    for name, data in (("interpolation", valid), ("extrapolation", test)):
        with np.errstate(all="ignore"):
            q = np.nanquantile(np.where(np.isfinite(data), data, np.nan), [0.25, 0.5, 0.75], 1)
        (line,) = axes[1].plot(steps, q[1], label=f"{name} MSE (median)")
        axes[1].fill_between(steps, q[0], q[2], color=line.get_color(), alpha=0.2)
    axes[1].axhline(threshold, color="k", ls="--", lw=0.8, label="success threshold")
    axes[1].set(xlabel="step", ylabel="MSE", yscale="log")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def write_population(workdir, config, settings, thresholds, run_setting, run_seed, merged,
                     num_evals):  # fmt: skip
    """Judge every run against its setting's threshold and write each setting's outputs.

    One setting: the files go in ``workdir`` and its summary is returned. A sweep: each
    setting's files go in ``workdir/settings/NNN`` and ``workdir`` gets the combined
    ``summary.json`` / ``summary.md``; returns ``{"settings": [summary, …]}``.
    """
    history = merged["history"]
    loop_s = merged["loop_s"]
    summaries = []
    for h, setting in enumerate(settings):
        idx = np.flatnonzero(run_setting == h)
        hist = {k: (v if k == "step" else v[:, idx]) for k, v in history.items()}
        threshold = float(thresholds[h])
        judgement = metrics_lib.judge_seeds(
            hist["step"], hist["valid_mse"], hist["test_mse"], hist["sparsity"],
            threshold, merged["diverged"][idx],
        )  # fmt: skip
        summary = metrics_lib.summarize(judgement, threshold)
        summary.update(
            model=config.model.name,
            task=config.task.kind,
            op=setting.task.op,
            input_size=setting.task.input_size,
            interpolation_range=setting.task.interpolation_range,
            extrapolation_range=setting.task.extrapolation_range,
            setting=setting.name,
            setting_values=setting.values,
            num_steps=int(config.num_steps),
            first_seed=int(config.first_seed),
            root_seed=int(config.seed),
            threshold=threshold,
            wall_time_s=merged["compile_s"] + loop_s,
            compile_time_s=merged["compile_s"],
            seed_steps_per_s=merged["seed_steps"] / loop_s if merged["seed_steps"] else 0.0,
        )
        out = workdir if len(settings) == 1 else os.path.join(workdir, "settings", f"{h:03d}")
        os.makedirs(out, exist_ok=True)
        write_outputs(out, run_seed[idx], judgement, merged["diverged_at"][idx], hist,
                      num_evals, threshold, summary)  # fmt: skip
        summaries.append(summary)
    if len(settings) == 1:
        return summaries[0]
    atomic_write(os.path.join(workdir, "summary.json"), dumps({"settings": summaries}) + "\n")
    atomic_write(os.path.join(workdir, "summary.md"), combined_markdown(summaries))
    return {"settings": summaries}


def write_outputs(workdir, seeds, judgement, diverged_at, history, num_evals, threshold, summary):
    """metrics.jsonl, seeds.csv, summary.json, summary.md and curves.png (all atomic)."""
    join = lambda name: os.path.join(workdir, name)
    atomic_write(join("metrics.jsonl"), metrics_lines(history, num_evals, threshold, diverged_at))
    atomic_write(join("seeds.csv"), seeds_csv(seeds, judgement, diverged_at))
    atomic_write(join("summary.json"), dumps(summary) + "\n")
    atomic_write(join("summary.md"), summary_markdown(summary))
    atomic_write(join("curves.png"), curves_png(history, num_evals, threshold))


def combined_markdown(summaries: list) -> str:
    """One row per sweep setting: success rate with its interval, solved-at, sparsity."""
    head = "| # | setting | success | 95% CI | solved at (median) | sparsity (mean) | diverged |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for h, s in enumerate(summaries):
        lo, hi = s["success_interval"]
        lines.append(
            f"| {h:03d} | {s['setting']} | {s['solved']}/{s['num_seeds']} "
            f"({_fmt(s['success_rate'], True)}) | [{_fmt(lo, True)}, {_fmt(hi, True)}] | "
            f"{_fmt(s['solved_at_median'])} | {_fmt(s['sparsity_error_mean'])} | {s['diverged']} |"
        )
    s0 = summaries[0]
    models = ", ".join(dict.fromkeys(s["model"] for s in summaries))
    lines.append(
        f"\nmodel {models}; {s0['task']} / {s0['op']}; {s0['num_steps']} steps; "
        "Wilson 95% intervals.\n"
    )
    return "\n".join(lines)
