"""Merge a workdir's finished cells with the published figures: ``table.md`` and ``table.csv``.

Rows are read back from each cell's ``summary.json`` (one row per cell; single-module cells one
row per range), so the table of a workdir is the same whoever ran its cells (one process, a
SLURM array, a ``jax.distributed`` job) and grows as more cells finish. The overlap columns are
computed: two 95% intervals overlap when the larger lower bound is at most the smaller upper
bound; "n/a" when either interval is undefined (no published figure, no solved seed). The
sparsity-error overlap compares like with like: where the published figure comes from another
estimator (the published CSV's ``sparsity_error_estimator``), ours is computed with that
estimator from the cell's per-seed errors (:func:`like_published`) and shown beside our own.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from importlib import resources

from nalu_jax.reproduce.cells import cell_dir
from nalu_jax.reproduce.specs import OP_LABELS, TableSpec, cells

STATS = (
    "success_rate", "success_lo", "success_hi", "solved_at_median", "solved_at_mean",
    "solved_at_lo", "solved_at_hi", "sparsity_error_mean", "sparsity_error_lo",
    "sparsity_error_hi",
)  # fmt: skip
COLUMNS = (
    ("table", "op", "model", "paper_name", "range", "status", "num_seeds", "num_steps", "solved")
    + STATS
    + ("diverged", "wall_time_s", "published_num_seeds")
    + tuple(f"published_{s}" for s in STATS)
    + (
        "published_sparsity_error_estimator",
        "sparsity_error_like_published_mean",
        "sparsity_error_like_published_lo",
        "sparsity_error_like_published_hi",
    )
    + ("success_overlap", "solved_at_overlap", "sparsity_error_overlap")
)


def published(spec: TableSpec) -> dict:
    """``{(op, model): {column: value}}`` from the table's CSV (``#`` lines are its citation)."""
    if spec.published is None:
        return {}
    text = resources.files("nalu_jax.reproduce").joinpath("published", spec.published).read_text()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    out = {}
    for r in csv.DictReader(lines):
        row = {
            k: (float(v) if v != "" else math.nan) if k in STATS + ("num_seeds",) else v
            for k, v in r.items()
        }
        row["sparsity_error_estimator"] = row.get("sparsity_error_estimator") or "normal"
        if row["sparsity_error_estimator"] not in ("normal", "beta"):
            raise ValueError(
                f"{spec.published}: sparsity_error_estimator of {r['op']}-{r['model']} is "
                f"{row['sparsity_error_estimator']!r}; allowed: 'normal', 'beta'."
            )
        out[(r["op"], r["model"])] = row
    return out


def like_published(row: dict, estimator: str, cell_path: str) -> dict:
    """Our sparsity error computed with the published figure's estimator: ``normal`` is the
    sample mean with its Student-t interval (ours as it is); ``beta`` is the ICLR 2020 analysis'
    Beta fit of the solved seeds' errors in ``cell_path/seeds.csv``
    (:func:`nalu_jax.reporting.published_estimators.iclr2020_sparsity_error`)."""
    if estimator == "normal":
        return {f"sparsity_error_like_published_{k}": row[f"sparsity_error_{k}"]
                for k in ("mean", "lo", "hi")}  # fmt: skip
    from nalu_jax.reporting.metrics import judgement_from_rows
    from nalu_jax.reporting.published_estimators import iclr2020_sparsity_error
    from nalu_jax.reproduce.results import read_csv

    # a cell measured before a figure existed (Linear before 09046a2) has NaN: the fit ignores it
    seeds = judgement_from_rows(read_csv(os.path.join(cell_path, "seeds.csv")))
    fit = iclr2020_sparsity_error(seeds["sparsity_error"][seeds["solved"]])
    return {f"sparsity_error_like_published_{k}": float(fit[k]) for k in ("mean", "lo", "hi")}


def _ours(s: dict) -> dict:
    pairs = (("success", "success_interval"), ("solved_at", "solved_at_interval"),
             ("sparsity_error", "sparsity_error_interval"))  # fmt: skip
    row = {k: s[k] for k in ("num_seeds", "num_steps", "solved", "success_rate", "diverged")}
    row.update(solved_at_median=s["solved_at_median"], solved_at_mean=s["solved_at_mean"])
    row["sparsity_error_mean"] = s["sparsity_error_mean"]
    row["wall_time_s"] = s.get("wall_time_s")
    for name, key in pairs:
        row[f"{name}_lo"], row[f"{name}_hi"] = s[key]
    return {k: (math.nan if v is None else v) for k, v in row.items()}


def overlap(a, b) -> str:
    """Overlap ("yes"/"no") of two intervals ``(lo, hi)``; "n/a" when either is undefined."""
    if any(v is None or not math.isfinite(v) for v in (*a, *b)):
        return "n/a"
    return "yes" if max(a[0], b[0]) <= min(a[1], b[1]) else "no"


def collect(spec: TableSpec, workdir: str, locate=None) -> list[dict]:
    """One row per finished cell (per range for single-module), plus the unavailable variants
    of the ops that have results; in table order. ``locate(cell)`` gives a cell's directory
    (default: ``WORKDIR/cells/OP-MODEL``; the committed ``results/`` tree uses
    ``results/TABLE/OP-MODEL``)."""
    from nalu_jax.reproduce.results import read_json, wall_by_machine

    pub = published(spec)
    locate = locate or (lambda c: cell_dir(workdir, c))
    rows, ops_run = [], set()
    for cell in cells(spec):
        base = {"table": spec.name, "op": cell.op, "model": cell.variant.key,
                "paper_name": cell.variant.label, "range": "", "cell": cell.key}  # fmt: skip
        if cell.variant.unavailable:
            rows.append({**base, "status": cell.variant.unavailable})
            continue
        path = os.path.join(locate(cell), "summary.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            summary = json.load(f)
        ops_run.add(cell.op)
        # a committed cell's wall time per machine of its batches (one per run: a cell extended
        # on a GPU holds the CPU's and the GPU's); a workdir's cell has no provenance
        prov = os.path.join(locate(cell), "provenance.json")
        walls = wall_by_machine(read_json(prov)["batches"]) if os.path.exists(prov) else None
        p = pub.get((cell.op, cell.variant.key))
        estimator = p["sparsity_error_estimator"] if p is not None else "normal"
        for s in summary.get("settings", [summary]):
            rng = s.get("setting_values", {}).get("range_index", "")
            row = {**base, "range": rng, "status": "done", **_ours(s)}
            if spec.axis is not None:  # a figure's point, in its rows' name: "NMU [h4]"
                point = cell.point or s.get("setting", "")
                row["paper_name"] = f"{base['paper_name']} [{point}]"
            row["published_sparsity_error_estimator"] = estimator
            row["wall_by_machine"] = walls
            rows.append({**row, **like_published(row, estimator, locate(cell))})
    rows = [r for r in rows if r["status"] == "done" or not ops_run or r["op"] in ops_run]
    for r in rows:
        p = pub.get((r["op"], r["model"]))
        if p is not None:
            r["published_num_seeds"] = p["num_seeds"]
            r.update({f"published_{k}": p[k] for k in STATS})
        for name in ("success", "solved_at", "sparsity_error"):
            ours = "sparsity_error_like_published" if name == "sparsity_error" else name
            mine = (r.get(f"{ours}_lo", math.nan), r.get(f"{ours}_hi", math.nan))
            theirs = (
                r.get(f"published_{name}_lo", math.nan),
                r.get(f"published_{name}_hi", math.nan),
            )
            r[f"{name}_overlap"] = overlap(mine, theirs) if p is not None else "n/a"
    return rows


def like_published_cell(r) -> str:
    """Our sparsity error under the published figure's estimator: ``β: …`` for the Beta fit,
    "= ours" where the published figure is a sample mean as ours is."""
    if r.get("published_sparsity_error_estimator") != "beta":
        return "= ours"
    mine = _iv(r, "sparsity_error_like_published")
    return mine if mine == "—" else "β: " + mine


def _f(v, pct=False) -> str:
    if v is None or v == "" or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{100 * v:.0f}%" if pct else f"{v:.3g}"


def _iv(r, name, prefix="", pct=False) -> str:
    mid = r.get(f"{prefix}{name}_rate" if name == "success" else f"{prefix}{name}_mean")
    lo, hi = r.get(f"{prefix}{name}_lo"), r.get(f"{prefix}{name}_hi")
    if mid is None or (isinstance(mid, float) and not math.isfinite(mid)):
        return "—"
    if lo is None or not math.isfinite(lo):
        return _f(mid, pct)
    # every figure here (a rate, a step, a sparsity error) is ≥ 0: a t interval's bound is not
    return f"{_f(mid, pct)} [{_f(max(0.0, lo), pct)}, {_f(hi, pct)}]"


def header(spec: TableSpec, rows: list[dict]) -> list[str]:
    """What was measured, under which protocol, on which machine."""
    from nalu_jax.reproduce.results import minutes_on

    done = [r for r in rows if r["status"] == "done"]
    protocols = sorted({(int(r["num_seeds"]), int(r["num_steps"])) for r in done})
    full = (spec.num_seeds, spec.num_steps)
    # a cell's rows (its sweep settings or ranges) each carry the wall time of the one program
    # that trained them all: count it once per cell, on the machines its batches name (a cell
    # without provenance trained here)
    cells_, walls = set(), {}
    for r in done:
        if r["cell"] in cells_:
            continue
        cells_.add(r["cell"])
        for where, w in (r.get("wall_by_machine") or {machine(): r["wall_time_s"]}).items():
            if math.isfinite(w):
                walls[where] = walls.get(where, 0.0) + w
    times = minutes_on(walls) or "0.0 min"
    lines = [f"# {spec.name}", "", f"Published figures: {spec.source}."]
    lines.append(f"Published protocol: {full[0]} seeds × {full[1]:,} iterations per cell.")
    for p in protocols:
        tag = "the published protocol" if p == full else "**REDUCED** protocol"
        lines.append(f"Ours: {p[0]} seeds × {p[1]:,} iterations ({tag}).")
    lines.append(f"Cells measured: {len(cells_)}; training wall time {times}.")
    lines.append(
        "Success: Wilson 95% interval. Solved at: first evaluation below the threshold (median; "
        "mean with a Student-t 95% interval over solved seeds). Sparsity error at the best "
        "validation step (mean, t interval over solved seeds)."
        + (
            " Overlap: do the 95% intervals of ours and the published figure overlap (computed; "
            "n/a when either is undefined). Where the published sparsity error is the ICLR 2020 "
            "analysis' Beta fit (whose μ is half the fitted mean), ours is also given under that "
            "fit (β) and the sparsity overlap uses it."
            if spec.published
            else ""
        )
    )
    return lines


def machine() -> str:
    """This machine as a provenance batch names it: the accelerator's kind, or on XLA:CPU the
    CPU model, its cores and vector width ("AMD EPYC, 2 cores, 512-bit vectors")."""
    from nalu_jax.reproduce.results import describe_machine
    from nalu_jax.reproduce.results import machine as this_machine

    return describe_machine(this_machine())


def by_range(rows: list[dict]) -> list[str]:
    """Single-module: success (solved/seeds) per op and model (rows) × range (columns)."""
    done = [r for r in rows if r["status"] == "done"]
    ranges = sorted({int(r["range"]) for r in done})
    lines = ["| op | model | " + " | ".join(f"range {k}" for k in ranges) + " |"]
    lines.append("|" + "---|" * (len(ranges) + 2))
    for op, model in dict.fromkeys((r["op"], r["paper_name"]) for r in done):
        got = {int(r["range"]): r for r in done if (r["op"], r["paper_name"]) == (op, model)}
        cells_ = [
            f"{int(got[k]['solved'])}/{int(got[k]['num_seeds'])}" if k in got else "—"
            for k in ranges
        ]
        lines.append(f"| {OP_LABELS.get(op, op)} | {model} | " + " | ".join(cells_) + " |")
    return lines


#: columns whose figures depend on the iteration budget (marked † at a reduced one)
BUDGET_COLUMNS = ("success", "solved at", "sparsity error", "overlap")


def reduced_budget(spec: TableSpec, rows: list[dict]) -> bool:
    """Some finished cell ran fewer iterations than the published protocol."""
    return any(r["status"] == "done" and int(r["num_steps"]) < spec.num_steps for r in rows)


def _mark(cols: list[str]) -> list[str]:
    return [f"{c} †" if c.startswith(BUDGET_COLUMNS) else c for c in cols]


def markdown(spec: TableSpec, rows: list[dict]) -> str:
    lines = header(spec, rows) + [""]
    reduced = reduced_budget(spec, rows)
    if reduced:
        lines += [
            f"† Not comparable with the paper: cells ran fewer than the published "
            f"{spec.num_steps:,} iterations, so the regulariser ramp and the time to solve are "
            "cut short; success, solved-at and sparsity figures (and their overlaps) measure "
            "a different protocol.",
            "",
        ]
    if spec.kind == "single_module" and any(r["status"] == "done" for r in rows):
        title = "Seeds solved per range" + (" †" if reduced else "")
        lines += [f"{title}:", ""] + by_range(rows) + ["", "All figures:", ""]
    if spec.kind == "single_module":
        cols = ["op", "model", "range", "seeds × steps", "success [95%]", "solved at median",
                "solved at mean [95%]", "sparsity error [95%]", "diverged"]  # fmt: skip
    else:
        cols = ["op", "model", "seeds × steps", "success [95%]", "published success [95%]",
                "overlap", "solved at median (ours / published)", "solved at mean [95%]",
                "published solved at mean [95%]", "sparsity error [95%]",
                "sparsity error, published estimator [95%]", "published sparsity error [95%]",
                "overlap (solved at / sparsity)"]  # fmt: skip
    if reduced:
        cols = _mark(cols)
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        op = OP_LABELS.get(r["op"], r["op"])
        if r["status"] != "done":
            lines.append(f"| {op} | {r['paper_name']} | " + r["status"] + " |" * (len(cols) - 2))
            continue
        sz = f"{int(r['num_seeds'])} × {int(r['num_steps']):,}"
        if spec.kind == "single_module":
            cells_ = [op, r["paper_name"], str(r["range"]), sz, _iv(r, "success", pct=True),
                      _f(r["solved_at_median"]), _iv(r, "solved_at"), _iv(r, "sparsity_error"),
                      str(int(r["diverged"]))]  # fmt: skip
        else:
            pm = r.get("published_solved_at_median")
            cells_ = [op, r["paper_name"], sz, _iv(r, "success", pct=True),
                      _iv(r, "success", "published_", pct=True), r["success_overlap"],
                      f"{_f(r['solved_at_median'])} / {_f(pm)}", _iv(r, "solved_at"),
                      _iv(r, "solved_at", "published_"), _iv(r, "sparsity_error"),
                      like_published_cell(r), _iv(r, "sparsity_error", "published_"),
                      f"{r['solved_at_overlap']} / {r['sparsity_error_overlap']}"]  # fmt: skip
        lines.append("| " + " | ".join(cells_) + " |")
    return "\n".join(lines) + "\n"


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if isinstance(v, float) and not math.isfinite(v) else v)
                    for k, v in r.items()})  # fmt: skip
    return buf.getvalue()


def write(spec: TableSpec, workdir: str, rows: list[dict]) -> None:
    from nalu_jax.reporting.report import atomic_write

    atomic_write(os.path.join(workdir, "table.md"), markdown(spec, rows))
    atomic_write(os.path.join(workdir, "table.csv"), csv_text(rows))
