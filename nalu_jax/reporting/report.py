"""The writers: everything a run puts in its workdir, each file atomically (temp + rename).

The generic pieces every experiment uses (``atomic_write``, ``dumps``, ``csv_text``,
``markdown``, ``group_summary``, ``line_head``, ``write_files``, ``timing``) and the tables
and figures that compare several runs (``comparison``). Each experiment's own files are
written next to it (``nalu_jax.experiments.*_report``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Callable

import numpy as np

from nalu_jax.reporting import metrics as metrics_lib
from nalu_jax.reporting import plots

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


def timing(merged: dict) -> dict:
    """The summary's timing fields from merged run results."""
    loop_s, seed_steps = merged["loop_s"], merged["seed_steps"]
    resumed = int(merged.get("resumed_from_step", -1))  # this process's; -1: a fresh run
    return {
        "wall_time_s": merged["compile_s"] + loop_s,
        "compile_time_s": merged["compile_s"],
        "seed_steps_per_s": seed_steps / loop_s if seed_steps else 0.0,
        "resumed_from_step": None if resumed < 0 else resumed,
        **stopped_field(merged),
    }


def stopped_field(merged: dict) -> dict:
    """``{"stopped_at_step": step}`` where every run had diverged and training stopped there
    (``engine.loop``), else nothing (a summary of a run trained to the end has no such key)."""
    stopped = int(merged.get("stopped_at_step", -1))
    return {} if stopped < 0 else {"stopped_at_step": stopped}


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


def steps(v) -> str:
    """A step count (or a median or mean of them): a whole number with thousands separators."""
    return fmt(v) if v is None or not math.isfinite(v) else f"{v:,.0f}"


def sci(v) -> str:
    """An error or an MSE, in one format whatever its size: 3 significant digits, e-notation."""
    if v is None or not math.isfinite(v):
        return fmt(v)
    return f"{v:.2e}" if v else "0"


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


def write_png(path: str, png) -> None:
    """A run's figure at ``path``, atomically: ``png`` is its bytes, or a callable drawing them
    (called only where figures are on, ``plots.enabled``). With figures off, or ``png`` None,
    nothing is drawn and a PNG an earlier run left at ``path`` is removed: no figure outlives
    the numbers it showed."""
    if callable(png):
        png = png() if plots.enabled() else None
    if png is not None:
        atomic_write(path, png)
    elif os.path.exists(path):
        os.unlink(path)


def write_files(workdir: str, files: dict) -> None:
    """``{name: str | bytes}`` → atomic files in ``workdir``; a callable value draws a PNG
    (``write_png``)."""
    for name, data in files.items():
        path = os.path.join(workdir, name)
        write_png(path, data) if callable(data) else atomic_write(path, data)


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
    summaries: list, criterion: str = SOLVED_ACCUMULATOR_CRITERION, table=None
) -> tuple[str, Callable[[], bytes] | None]:
    """The combined table of several runs (``summary["setting"]`` names each) and, for the
    sequence experiments, a callable drawing its figure (for ``write_png``, which draws it only
    with figures on): success against test length per model (Wilson bars) and the median MSE
    (per-length experiments), or per model (split experiments). Other runs:
    ``table(summaries)`` (the experiment's table of settings), no figure."""
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
        draw = lambda: plots.group_plot(
            lengths, series, xlabel="sequence length", x_scale=scale, mse=mse
        )
        return per_length_markdown(summaries, criterion), draw
    if all("splits" in s for s in summaries):
        names = [s["setting"] for s in summaries]
        tests = [{g["split"]: g for g in s["splits"]}["test"] for s in summaries]
        series = {
            "test success rate": success_series(tests),
            "test exact-match accuracy (mean)": ([g["acc_mean"] for g in tests], None),
        }
        mse = {"test MSE (median)": [g["mse_median"] for g in tests]}
        draw = lambda: plots.group_plot(names, series, xlabel="model", x_scale="category", mse=mse)
        return splits_markdown(summaries), draw
    if table is None:
        raise ValueError("comparison: these summaries need the experiment's table(summaries).")
    return table(summaries), None
