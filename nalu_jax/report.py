"""The writers: everything a run puts in its workdir, each file atomically (temp + rename).

Generic pieces every experiment uses (``atomic_write``, ``dumps``, ``csv_text``, ``markdown``,
``group_summary``, ``line_head``, ``write_files``) and the arithmetic family's outputs
(static, single-module and recurrent tasks): ``metrics.jsonl`` (one line per evaluation),
``seeds.csv`` (one row per seed), ``summary.json`` / ``summary.md`` and ``curves.png``
(figures: ``nalu_jax.plots``).
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
from nalu_jax import plots

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


_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read the process umask (os has no getter)


def atomic_write(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would create it (mkstemp makes 0600)
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
        ("threshold", fmt(s["threshold"])),
        ("success rate", f"{fmt(s['success_rate'], True)} [{fmt(lo, True)}, {fmt(hi, True)}]"),
        ("solved", f"{s['solved']} / {s['num_seeds']}"),
        (
            "solved at (median; mean [95% CI])",
            f"{fmt(s['solved_at_median'])}; {fmt(s['solved_at_mean'])} "
            f"[{fmt(s['solved_at_interval'][0])}, {fmt(s['solved_at_interval'][1])}]",
        ),
        (
            "sparsity error (mean [95% CI])",
            f"{fmt(s['sparsity_error_mean'])} [{fmt(s['sparsity_error_interval'][0])}, "
            f"{fmt(s['sparsity_error_interval'][1])}]",
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


def timing(merged: dict) -> dict:
    """The summary's timing fields from merged run results."""
    loop_s, seed_steps = merged["loop_s"], merged["seed_steps"]
    resumed = int(merged.get("resumed_from_step", -1))  # this process's; -1: a fresh run
    return {
        "wall_time_s": merged["compile_s"] + loop_s,
        "compile_time_s": merged["compile_s"],
        "seed_steps_per_s": seed_steps / loop_s if seed_steps else 0.0,
        "resumed_from_step": None if resumed < 0 else resumed,
    }


def write_population(workdir, config, setting, context, seeds, merged, num_evals) -> dict:
    """Judge every seed of one setting against its threshold (``context``: ``threshold``,
    ``task``), write ``workdir``'s files and return the summary."""
    history, task, threshold = merged["history"], context["task"], float(context["threshold"])
    judgement = metrics_lib.judge_seeds(
        history["step"], history["valid_mse"], history["test_mse"], history["sparsity"],
        threshold, merged["diverged"],
    )  # fmt: skip
    summary = metrics_lib.summarize(judgement, threshold)
    summary.update(
        model=config.model.name,
        task=config.task.kind,
        op=task.op,
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
    atomic_write(
        join("curves.png"), plots.curves_png(history, num_evals, threshold, running_solved)
    )


def combined_markdown(summaries: list) -> str:
    """One row per sweep setting: success rate with its interval, solved-at, sparsity."""
    head = "| # | setting | success | 95% CI | solved at (median) | sparsity (mean) | diverged |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for h, s in enumerate(summaries):
        lo, hi = s["success_interval"]
        lines.append(
            f"| {h:03d} | {s['setting']} | {s['solved']}/{s['num_seeds']} "
            f"({fmt(s['success_rate'], True)}) | [{fmt(lo, True)}, {fmt(hi, True)}] | "
            f"{fmt(s['solved_at_median'])} | {fmt(s['sparsity_error_mean'])} | {s['diverged']} |"
        )
    s0 = summaries[0]
    models = ", ".join(dict.fromkeys(s["model"] for s in summaries))
    lines.append(
        f"\nmodel {models}; {s0['task']} / {s0['op']}; {s0['num_steps']} steps; "
        "Wilson 95% intervals.\n"
    )
    return "\n".join(lines)


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


def write_files(workdir: str, files: dict) -> None:
    """``{name: str | bytes}`` → atomic files in ``workdir``."""
    for name, data in files.items():
        atomic_write(os.path.join(workdir, name), data)


def settings_markdown(summary: dict, one) -> str:
    """A sweep's summaries (``{"settings": [...]}``), one ``one(summary)`` section each; a
    single run's summary as ``one(summary)``."""
    if "settings" not in summary:
        return one(summary)
    return "\n".join(
        f"## setting {h:03d}: {s['setting'] or '(default)'}\n\n{one(s)}"
        for h, s in enumerate(summary["settings"])
    )


def _solved_cell(g: dict, num_seeds: int) -> str:
    if "success_rate" not in g:
        return "n/a"
    return f"{g['solved']}/{num_seeds} {success_cell(g)}"


SOLVED_ACCUMULATOR_CRITERION = "the solved-accumulator threshold at that length"


def per_length_markdown(summaries: list, criterion: str = SOLVED_ACCUMULATOR_CRITERION) -> str:
    """Sequence experiments (``per_length`` groups): one row per test length, per model its
    success (solved/seeds, rate, Wilson 95% interval) and median last-step MSE."""
    lengths = [g["length"] for g in summaries[0]["per_length"]]
    names = [s["setting"] for s in summaries]
    head = "| length | threshold | " + " | ".join(
        f"{n}: success [95% CI] | {n}: MSE (median)" for n in names
    )
    lines = [head + " |", "|" + "---|" * (2 + 2 * len(names))]
    for j, n in enumerate(lengths):
        cells = [str(n), fmt(summaries[0]["per_length"][j].get("threshold"))]
        for s in summaries:
            g = s["per_length"][j]
            cells += [_solved_cell(g, s["num_seeds"]), fmt(g.get("mse_last_median"))]
        lines.append("| " + " | ".join(cells) + " |")
    s0 = summaries[0]
    seeds = ", ".join(f"{s['setting']} {s['num_seeds']}" for s in summaries)
    lines.append(
        f"\n{s0.get('task', '')} task, train length {s0.get('train_length', '?')}; "
        f"{s0['num_steps']} steps; seeds: {seeds}. Success: last-step MSE below "
        f"{criterion}; Wilson 95% intervals.\n"
    )
    return "\n".join(lines)


def splits_markdown(summaries: list) -> str:
    """Experiments judged per split (number translation): one row per model."""
    cols = ["model", "test success [95% CI]", "test exact-match acc (mean)", "test MSE (median)"]
    has_mae = "mae_mean" in next(g for g in summaries[0]["splits"] if g["split"] == "test")
    if has_mae:
        cols.append("test MAE (mean)")
    cols += ["valid acc (mean)", "diverged", "wall time"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for s in summaries:
        g = {x["split"]: x for x in s["splits"]}
        cells = [
            s["setting"],
            _solved_cell(g["test"], s["num_seeds"]),
            fmt(g["test"]["acc_mean"], True),
            fmt(g["test"]["mse_median"]),
        ]
        if has_mae:
            cells.append(fmt(g["test"].get("mae_mean")))
        cells += [
            fmt(g["valid"]["acc_mean"], True),
            str(s["diverged"]),
            f"{s['wall_time_s']:.0f} s",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        f"\n{summaries[0]['num_steps']} steps; each seed at its lowest-validation-MSE evaluation; "
        "solved: test exact-match accuracy ≥ "
        f"{fmt(summaries[0].get('success_accuracy'), True)}; Wilson 95% intervals.\n"
    )
    return "\n".join(lines)


def success_series(groups: list):
    """``(rates, (lows, highs))`` of per-length (or per-split) summary groups for
    ``plots.group_plot``: the success rate and its Wilson interval; None when the groups were not
    judged (no threshold)."""
    if not groups or "success_rate" not in groups[0]:
        return None
    lo_hi = list(zip(*(g["success_interval"] for g in groups), strict=True))
    return [g["success_rate"] for g in groups], lo_hi


def comparison(
    summaries: list, criterion: str = SOLVED_ACCUMULATOR_CRITERION
) -> tuple[str, bytes | None]:
    """The combined table of several runs (``summary["setting"]`` names each) and, for the
    sequence experiments, its figure: success against test length per model (Wilson bars) and
    the median MSE (per-length experiments), or per model (split experiments)."""
    if all("per_length" in s for s in summaries):
        lengths = [g["length"] for g in summaries[0]["per_length"]]
        series, mse = {}, {}
        for s in summaries:
            groups = s["per_length"]
            if (rates := success_series(groups)) is not None:
                series[s["setting"]] = rates
            mse[s["setting"]] = [g["mse_last_median"] for g in groups]
        if summaries[0]["per_length"][0].get("threshold") is not None:
            mse["threshold"] = [g["threshold"] for g in summaries[0]["per_length"]]
        scale = "log" if max(lengths) / max(min(lengths), 1) >= 50 else "linear"
        png = plots.group_plot(lengths, series, xlabel="sequence length", x_scale=scale, mse=mse)
        return per_length_markdown(summaries, criterion), png
    if all("splits" in s for s in summaries):
        names = [s["setting"] for s in summaries]
        tests = [{g["split"]: g for g in s["splits"]}["test"] for s in summaries]
        series = {
            "test success rate": success_series(tests),
            "test exact-match accuracy (mean)": ([g["acc_mean"] for g in tests], None),
        }
        mse = {"test MSE (median)": [g["mse_median"] for g in tests]}
        png = plots.group_plot(names, series, xlabel="model", x_scale="category", mse=mse)
        return splits_markdown(summaries), png
    return combined_markdown(summaries), None
