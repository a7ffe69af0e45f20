"""Render ``docs/reproductions.md`` from its template and the committed ``results/`` tree.

    python -m nalu_jax.reproduce.render            # rewrite docs/reproductions.md
    python -m nalu_jax.reproduce.render --check    # exit 1 if the committed document differs

The template (``docs/reproductions.template.md``) is the document's prose — claims, protocols,
departures, the rubric, verdicts — with every figure written as a placeholder ``{{ expr }}``:
a call of one of the functions below on a results cell (``results/<group>/<cell>``). A
placeholder whose cell is not committed renders as "no committed data", so the document can
never show a figure that the data does not hold, and a figure edited by hand in the rendered
document fails ``--check`` (``tests/test_render.py``).

Functions (all read ``results/``):
  ``success(cell, setting=None)``                  "8/10 (80%) [49%, 94%]"
  ``solved(cell)`` / ``seeds(cell)``               counts
  ``gridworld_table(cell, times=None)``             grid world: success and seeds mastering per T
  ``success_at_t(cell, agent, t)``                 grid world: one agent's success at T, "93%"
  ``solved_in_all(cell)``                          a sweep cell's settings summed: "211/225 (9 ranges)"
  ``stat(cell, key, setting=None, digits=3)``      any summary value, formatted
  ``arith_table(table, ops=None, models=None, only=None)``  a published arithmetic table, ours
                                                   beside the paper's, a verdict per cell (``only``:
                                                   cell keys such as "mul-nmu"; ``TABLE1``: ICLR
                                                   2020 Table 1's 11, ``APPC_OTHERS``: App. C's
                                                   other models on +, −, ×)
  ``arith_counts(table, ops=None, models=None, only=None)``  "7 of 11 cells reproduced, …"
  ``arith_seeds(table, ops=None, models=None, only=None)``   "100 seeds: × NMU, + NAU; 20 seeds: …"
  ``primer_table(ops)``                            single-module success per range
  ``identity_table(cell)``                         identity failure: MAE per activation
  ``lengths_table(cells, labels=None)``            success per test length per model
  ``provenance(*cells)``                           commit, date, machine, wall time
  ``batch_seeds(cell, k)``                         batch k: minutes, solved (and when), diverged
  ``timing_table(table, ops=None, models=None, only=None)``  each batch of a table's cells: seeds,
                                                   command, commit, date, wall time, rate,
                                                   machine, solved and diverged
  ``solved_steps(cell, seeds=None, stat="span")``  the solvers' solved-at steps: first to last,
                                                   or their mean; ``seeds``: (first, last) only
  ``late_solvers(cell, seeds, before)``            seeds solving after every solver of ``before``
  ``live_seeds(*cells)``                           the seeds that did not diverge, "12, 31 and 32"
  ``verdict(text, *cells)``                        ``text`` when every cell is committed, else
                                                   "no committed data"
  (``nalu_jax.reproduce.verdicts``, the rubric's computed verdicts:)
  ``arith_tests(table, ...)``                      per-seed tests against the authors' seeds
  ``repeated_looks(table, cell)``                  those tests at each batch's seed count
  ``table_verdict(table, ...)``                    a whole table's verdict by its cells
  ``settled(text, *cells, budget=, contrast=)``    "not settled" from budget and contrast cells
  ``identity_verdict(cell)`` / ``identity_models`` the identity rule (10× the linear network)
  ``scaled_error(cell, which)``                    the NALU paper's scaled error of a cell
  ``cross_commit(cell)``                           a merged cell's recorded cross-commit check
  ``cross_commits(table, ...)``                    every such check of a table's cells
  ``not_covered_rows()``                           glance rows of experiments not implemented
  and ``render_nalu.functions``: ``sm_table``, ``budget_line``, ``length_claims``,
  ``scaled_table``, ``reference_misread`` (the NALU paper's experiments and the single-module
  tables beyond two inputs; see that module), and ``figures_render.functions``:
  ``figure_table``, ``figure_budget``, ``figure_verdict``, ``figure_claim``, ``figure_solved``,
  ``figure_best_steps``, ``cell_best_steps``, ``figure_diverged``, ``figure_errors``,
  ``figure_span``, ``figure_solvers``, ``seeds_against``, ``wall_minutes``, ``cell_minutes``,
  ``batch_rates`` (the ICLR 2020 dataset-parameter and λ̂ figures, and any table's wall times;
  see that module)
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys

from nalu_jax.reproduce import results as results_lib
from nalu_jax.reproduce.results import and_list
from nalu_jax.reproduce.seedtests import fraction_words, no_seed_solved
from nalu_jax.reproduce.verdicts import (
    BudgetFunctions,
    CrossCommitFunctions,
    IdentityFunctions,
    Missing,
    ScaledErrorFunctions,
    VerdictFunctions,
)

PLACEHOLDER = re.compile(r"\{\{(.+?)\}\}")
NO_DATA = "*no committed data*"


def _repo() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _f(v, digits=3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e6):
        return f"{int(v):,}"
    return f"{v:.{digits}g}"


def _pct(v) -> str:
    return "—" if v is None or not math.isfinite(v) else f"{100 * v:.0f}%"


class Renderer(
    VerdictFunctions, ScaledErrorFunctions, IdentityFunctions, CrossCommitFunctions, BudgetFunctions
):
    """The template's functions over one results root."""

    def __init__(self, root: str):
        self.root = root

    # -------------------------------------------------------------------------- reading
    def _dir(self, cell: str) -> str:
        path = results_lib.resolve(os.path.join(self.root, cell))
        if not os.path.exists(os.path.join(path, "provenance.json")):
            raise Missing(cell)
        return path

    def summary(self, cell: str, setting=None) -> dict:
        s = results_lib.read_json(os.path.join(self._dir(cell), "summary.json"))
        if setting is not None:
            for part in s.get("settings", []):
                values = part.get("setting_values", {})
                if part.get("setting") == setting or setting in values.values():
                    return part
            raise Missing(f"{cell} setting {setting}")
        return s

    def batches(self, cell: str) -> list[dict]:
        return results_lib.read_json(os.path.join(self._dir(cell), "provenance.json"))["batches"]

    # ------------------------------------------------------------------------ functions
    def success(self, cell, setting=None) -> str:
        s = self.summary(cell, setting)
        lo, hi = s["success_interval"]
        return (
            f"{s['solved']}/{s['num_seeds']} ({_pct(s['success_rate'])}) [{_pct(lo)}, {_pct(hi)}]"
        )

    def solved(self, cell, setting=None) -> str:
        return str(self.summary(cell, setting)["solved"])

    def solved_in_all(self, cell) -> str:
        """Seeds solved over all of a sweep cell's settings, e.g. ``211/225 (9 ranges)``."""
        parts = self.summary(cell).get("settings")
        if not parts:
            raise Missing(f"{cell} settings")
        solved = sum(int(p["solved"]) for p in parts)
        seeds = sum(int(p["num_seeds"]) for p in parts)
        return f"{solved}/{seeds} ({len(parts)} ranges)"

    def seeds(self, cell, setting=None) -> str:
        return str(self.summary(cell, setting)["num_seeds"])

    def stat(self, cell, key, setting=None, digits=3) -> str:
        v = self.summary(cell, setting)
        for part in key.split("."):
            v = v[int(part)] if isinstance(v, list) else v[part]
        return _f(v, digits)

    def verdict(self, text, *cells) -> str:
        for c in cells:
            self._dir(c)
        return text

    def _same_as(self, cell: str) -> str | None:
        """The cell (relative to the root) whose data alias ``cell`` shows, or None."""
        target = results_lib.alias_target(os.path.join(self.root, cell))
        return os.path.relpath(target, self.root) if target else None

    def provenance(self, *cells) -> str:
        parts = []
        for c in cells:
            same = self._same_as(c)
            if same:
                parts.append(f"`{c}`: the same config and seeds as `{same}`, shown from it")
                continue
            for b in self.batches(c):
                where = _machine(b, paren=False)
                parts.append(
                    f"`{c}`: seeds {results_lib.seed_span(b)}, "
                    f"commit {b['commit'][:7]}{' (modified)' if b.get('dirty') else ''}, "
                    f"{b['date'][:10]}, {where}, {_wall(b)}"
                )
        return "; ".join(parts)

    def _rows_of(self, cell, seeds=None) -> list[dict]:
        """``cell``'s ``seeds.csv`` rows; ``seeds``: only those of seeds ``(first, last)``."""
        rows = results_lib.read_csv(os.path.join(self._dir(cell), "seeds.csv"))
        if seeds is None:
            return rows
        first, last = seeds
        picked = [r for r in rows if first <= int(r["seed"]) <= last]
        if not picked:
            raise ValueError(f"seeds {first}–{last}: {cell} holds none of them")
        return picked

    def solved_steps(self, cell, seeds=None, stat="span") -> str:
        """The solved-at steps of ``cell``'s solved seeds (``seeds``: of seeds ``(first,
        last)`` only): ``stat="span"``, "2,145,000 to 4,844,000" (one solver: "530,000");
        ``"mean"``, their mean to three digits, "181,000"; "no seed solved" where none did."""
        if stat not in ("span", "mean"):
            raise ValueError(f"solved_steps stat: {stat!r} is neither span nor mean")
        steps = _solved_at(self._rows_of(cell, seeds))
        if not steps:
            return "no seed solved"
        if stat == "mean":
            return f"{float(f'{sum(steps) / len(steps):.3g}'):,.0f}"
        return _step_span(steps)

    def _batch_rows(self, cell, batch) -> list[dict]:
        """The ``seeds.csv`` rows of one provenance batch's seeds."""
        first = int(batch["first_seed"])
        return self._rows_of(cell, (first, first + int(batch["num_seeds"]) - 1))

    def _batch_outcome(self, cell, batch) -> str:
        """What one batch's seeds did: "74 of 80 solved", "0 of 16 solved, 15 diverged";
        "—" for a cell without per-seed rows."""
        if not os.path.exists(os.path.join(self._dir(cell), "seeds.csv")):
            return "—"
        rows = self._batch_rows(cell, batch)
        gone = sum(1 for r in rows if int(r.get("diverged") or 0))
        return f"{len(_solved_at(rows))} of {len(rows)} solved" + (
            f", {gone} diverged" if gone else ""
        )

    def batch_seeds(self, cell, k) -> str:
        """Batch ``k`` of ``cell``'s provenance (negative: from the last) and what its seeds
        did: "52 min: 9 of 60 solved, at 2,149,000 to 4,927,000 steps; seed 77 diverged (at
        1,973,247 steps)", or "…; none diverged"."""
        b = self.batches(cell)[k]
        rows = self._batch_rows(cell, b)
        steps = _solved_at(rows)
        at = f", at {_step_span(steps)} steps" if steps else ""
        gone = [r for r in rows if int(r.get("diverged") or 0)]
        if not gone:
            diverged = "none diverged"
        else:
            seeds = ", ".join(r["seed"] for r in gone)
            when = ", ".join(f"{int(r['diverged_at']):,}" for r in gone)
            diverged = (f"seed{'s' if len(gone) > 1 else ''} {seeds} diverged (at {when} "
                        "steps)")  # fmt: skip
        wall = b.get("wall_time_s")
        minutes = f"{wall / 60:.0f} min" if wall else "wall time not recorded"
        return f"{minutes}: {len(steps)} of {len(rows)} solved{at}; {diverged}"

    def live_seeds(self, *cells) -> str:
        """The seeds that trained to the end without diverging, "12, 31 and 32" ("none" where
        every seed diverged). Of several cells, read on the seeds every one holds: "12, 31 and
        32 in each" where they agree there, else each cell's ("÷: 12; +: 12 and 31": a cell by
        its op where that names it alone, else by its path). Where the cells hold different
        seeds, the shared ones are named and each cell's live seeds past them follow: "12 in
        each (of seeds 0–35, which every cell holds); −, seeds 36–51: 40"."""
        from nalu_jax.reproduce.specs import OP_LABELS

        rows = {cell: self._rows_of(cell) for cell in cells}
        held = {cell: {int(r["seed"]) for r in rs} for cell, rs in rows.items()}
        common = set.intersection(*held.values())
        labels = {c: OP_LABELS.get(os.path.basename(c).split("-")[0], c) for c in cells}
        if len(set(labels.values())) < len(cells):
            labels = {c: c for c in cells}

        def live(cell, among):
            seeds = [r["seed"] for r in rows[cell]
                     if int(r["seed"]) in among and not int(r.get("diverged") or 0)]  # fmt: skip
            return and_list(seeds) if seeds else "none"

        shared = {cell: live(cell, common) for cell in cells}
        if len(set(shared.values())) == 1:
            text = next(iter(shared.values())) + (" in each" if len(cells) > 1 else "")
        else:
            text = "; ".join(f"{labels[c]}: {seeds}" for c, seeds in shared.items())
        if all(h == common for h in held.values()):
            return text
        text += f" (of {_seed_span(common)}, which every cell holds)"
        for cell in cells:
            if extra := held[cell] - common:
                text += f"; {labels[cell]}, {_seed_span(extra)}: {live(cell, extra)}"
        return text

    def late_solvers(self, cell, seeds, before) -> str:
        """The seeds of ``seeds`` ``(first, last)`` in ``cell`` that solved after every solver
        of the seeds ``before`` ``(first, last)``: "2 seeds, at 2,918,000 and 3,487,000 steps
        (the last of seeds 0–39 at 508,000)"; "none (…)"."""
        last = max(_solved_at(self._rows_of(cell, before)), default=0)
        late = [t for t in _solved_at(self._rows_of(cell, seeds)) if t > last]
        ref = f"seeds {before[0]}–{before[1]}" if before[1] > before[0] else f"seed {before[0]}"
        ref = f"the last of {ref} at {last:,}" if last else f"none of {ref} solved"
        if not late:
            return f"none ({ref})"
        at = and_list([f"{t:,}" for t in late])
        return (f"{len(late)} seed{'s' if len(late) > 1 else ''}, at {at} steps "
                f"({ref})")  # fmt: skip

    # ------------------------------------------------------------------- published tables
    @staticmethod
    def _cells(spec, ops=None, models=None, only=None) -> list:
        """The table's cells in its order, restricted to ``ops``/``models``, or to the cell
        keys ``only`` (e.g. ``"mul-nmu"``)."""
        from nalu_jax.reproduce import specs

        cells = specs.cells(spec, models, ops)
        return cells if only is None else [c for c in cells if c.key in set(only)]

    def _rows(self, table, ops=None, models=None, only=None):
        """The table's cells (``_cells``' restriction), each with its committed figures and
        the published ones."""
        from nalu_jax.reproduce import specs, tables

        spec = specs.table(table)
        pub = tables.published(spec)
        rows = tables.collect(
            spec,
            self.root,
            locate=lambda c: results_lib.resolve(os.path.join(self.root, table, c.key)),
        )
        keyed = {(r["op"], r["model"], r.get("range", "")): r for r in rows}
        out = []
        for cell in self._cells(spec, ops, models, only):
            r = keyed.get((cell.op, cell.variant.key, ""))
            if r is None:
                r = {"op": cell.op, "model": cell.variant.key, "paper_name": cell.variant.label,
                     "status": cell.variant.unavailable or "missing"}  # fmt: skip
                p = pub.get((cell.op, cell.variant.key))
                if p is not None:  # the paper's figures, shown beside our missing ones
                    r.update({f"published_{k}": p[k] for k in tables.STATS})
            out.append(r)
        return spec, out

    @staticmethod
    def cell_verdict(spec, r) -> str:
        """The rubric applied to one table cell (see the document's "How to read")."""
        if r["status"] != "done":
            return "no committed data" if r["status"] == "missing" else "not runnable"
        if r.get("published_success_rate") is None or not math.isfinite(
            r.get("published_success_rate", math.nan)
        ):
            return "no published figure"
        fraction = int(r["num_steps"]) / spec.num_steps
        unsettled = no_seed_solved(int(r["solved"]), fraction)
        if unsettled is not None:
            return unsettled
        succ = r["success_overlap"]
        others = {"solved-at mean": r["solved_at_overlap"],
                  "sparsity error": r["sparsity_error_overlap"]}  # fmt: skip
        if succ == "yes":
            apart = [name for name, o in others.items() if o == "no"]
            word = f"partly: {' and '.join(apart)} apart" if apart else "reproduced"
        elif r["success_rate"] < r["published_success_rate"] and fraction < 1:
            return f"not settled at {_budget(fraction)} of the budget"
        else:
            word = "not reproduced"
        return word if fraction >= 1 else f"{word} at {_budget(fraction)} of the budget"

    def arith_table(self, table, ops=None, models=None, only=None) -> str:
        from nalu_jax.reproduce import tables
        from nalu_jax.reproduce.specs import OP_LABELS
        from nalu_jax.reproduce.tables import _iv, like_published_cell

        spec, rows = self._rows(table, ops, models, only)
        # a column for our sparsity error under the paper's estimator, where that differs
        like = any(p["sparsity_error_estimator"] == "beta" for p in tables.published(spec).values())
        head = ["op", "model", "seeds × steps", "success [95%]", "paper", "solved at median",
                "paper", "solved at mean [95%]", "paper", "sparsity error [95%]",
                "the paper's estimator", "paper", "verdict"]  # fmt: skip
        if not like:
            head.remove("the paper's estimator")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            op = OP_LABELS.get(r["op"], r["op"])
            if r["status"] != "done":
                paper = [_iv(r, "success", "published_", pct=True),
                         _f(r.get("published_solved_at_median")), _iv(r, "solved_at", "published_"),
                         _iv(r, "sparsity_error", "published_")]  # fmt: skip
                cells = [c for p in paper for c in ("—", p)]
                if like:
                    cells.insert(len(cells) - 1, "—")
                lines.append(
                    f"| {op} | {r['paper_name']} | — | "
                    + " | ".join(cells)
                    + f" | {self.cell_verdict(spec, r)} |"
                )
                continue
            lines.append(
                "| " + " | ".join([
                    op, r["paper_name"], f"{int(r['num_seeds'])} × {_f(int(r['num_steps']))}",
                    _iv(r, "success", pct=True), _iv(r, "success", "published_", pct=True),
                    _f(r["solved_at_median"]), _f(r.get("published_solved_at_median")),
                    _iv(r, "solved_at"), _iv(r, "solved_at", "published_"),
                    _iv(r, "sparsity_error"), *([like_published_cell(r)] if like else []),
                    _iv(r, "sparsity_error", "published_"), self.final_verdict(table, spec, r),
                ]) + " |"
            )  # fmt: skip
        return "\n".join(lines)

    def arith_counts(self, table, ops=None, models=None, only=None) -> str:
        spec, rows = self._rows(table, ops, models, only)
        # "partly: …" counts as "partly" (the table names each cell's part)
        verdicts = [self.final_verdict(table, spec, r).split(":")[0].split(" (")[0] for r in rows]
        verdicts = [v for v in verdicts if v != "not runnable"]
        counts: dict[str, int] = {}
        for v in verdicts:
            counts[v] = counts.get(v, 0) + 1
        if set(counts) == {"no committed data"}:
            raise Missing(table)
        return "; ".join(f"{n} of {len(verdicts)} cells {v}" for v, n in counts.items())

    def arith_seeds(self, table, ops=None, models=None, only=None) -> str:
        """The committed cells grouped by seed count, most first: "100 seeds: × NMU, + NAU;
        20 seeds: × NALU" (cells without committed data are left out)."""
        from nalu_jax.reproduce.specs import OP_LABELS

        _, rows = self._rows(table, ops, models, only)
        groups: dict[int, list[str]] = {}
        for r in rows:
            if r["status"] == "done":
                label = f"{OP_LABELS.get(r['op'], r['op'])} {r['paper_name']}"
                groups.setdefault(int(r["num_seeds"]), []).append(label)
        if not groups:
            raise Missing(table)
        return "; ".join(f"{n} seeds: {', '.join(groups[n])}" for n in sorted(groups, reverse=True))

    def arith_budgets(self, table, ops=None, models=None, only=None) -> str:
        """The committed cells counted by budget, most steps then most seeds first:
        "20 × 5,000,000: 18 cells; 10 × 20,000: 6 cells" (seeds × steps)."""
        _, rows = self._rows(table, ops, models, only)
        counts: dict[tuple[int, int], int] = {}
        for r in rows:
            if r["status"] == "done":
                key = (int(r["num_steps"]), int(r["num_seeds"]))
                counts[key] = counts.get(key, 0) + 1
        if not counts:
            raise Missing(table)
        return "; ".join(
            f"{seeds} × {steps:,}: {n} cell{'s' if n > 1 else ''}"
            for (steps, seeds), n in sorted(counts.items(), reverse=True)
        )

    def timing_table(self, table, ops=None, models=None, only=None) -> str:
        """Each committed batch of the table's cells (restricted to ``ops``/``models``, or to
        the cell keys ``only``) with its seeds, command, commit, date, wall time, rate, machine
        and what its seeds did."""
        from nalu_jax.reproduce import specs
        from nalu_jax.reproduce.specs import OP_LABELS

        spec = specs.table(table)
        lines = [
            "| op | model | seeds | command | commit | date | wall time | seed-steps/s | machine "
            "| its seeds |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for cell in self._cells(spec, ops, models, only):
            path = f"{table}/{cell.key}"
            try:
                batches = self.batches(path)
            except Missing:
                continue
            same = self._same_as(path)
            if same:
                lines.append(f"| {OP_LABELS.get(cell.op, cell.op)} | {cell.variant.label} | "
                             f"the same run as `{same}` | | | | | | | |")  # fmt: skip
                continue
            commits = {b["commit"][:7] for b in batches}
            merged = (
                f" (merged: {len(batches)} batches at {len(commits)} commits)"
                if len(commits) > 1
                else (f" (merged: {len(batches)} batches)" if len(batches) > 1 else "")
            )
            for b in batches:
                where = _machine(b)
                lines.append(
                    f"| {OP_LABELS.get(cell.op, cell.op)} | {cell.variant.label}{merged} | "
                    f"{results_lib.seed_span(b)} | {_command(b, table)} | "
                    f"{b['commit'][:7]}{' (modified)' if b.get('dirty') else ''} | "
                    f"{b['date'][:10]} | {_wall(b)} | {_rate(b)} | {where} | "
                    f"{self._batch_outcome(path, b)} |"
                )
        if len(lines) == 2:
            raise Missing(table)
        return "\n".join(lines)

    def primer_table(self, ops=("mul", "add")) -> str:
        from nalu_jax.reproduce import specs
        from nalu_jax.reproduce.specs import OP_LABELS

        spec = specs.table("primer-single-module")
        ranges = range(1, 10)
        lines = ["| op | model | " + " | ".join(f"range {k}" for k in ranges) + " |",
                 "|" + "---|" * 11]  # fmt: skip
        found = False
        for cell in specs.cells(spec, None, list(ops)):
            try:
                s = self.summary(f"primer-single-module/{cell.key}")
            except Missing:
                lines.append(f"| {OP_LABELS[cell.op]} | {cell.variant.label} | "
                             + " | ".join(["—"] * 9) + " |")  # fmt: skip
                continue
            found = True
            got = {p["setting_values"]["range_index"]: p for p in s["settings"]}
            lines.append(
                f"| {OP_LABELS[cell.op]} | {cell.variant.label} | "
                + " | ".join(f"{got[k]['solved']}/{got[k]['num_seeds']}" if k in got else "—"
                             for k in ranges) + " |"
            )  # fmt: skip
        if not found:
            raise Missing("primer-single-module")
        return "\n".join(lines)

    def identity_table(self, cell) -> str:
        """MAE inside and outside the training range per activation, mean [95% CI]."""
        s = self.summary(cell)

        def iv(d):
            lo, hi = d["interval"]
            return f"{_f(d['mean'])} [{_f(max(0.0, lo))}, {_f(hi)}]"  # an MAE is ≥ 0

        lines = ["| activation | MAE inside the training range | MAE outside | diverged |",
                 "|---|---|---|---|"]  # fmt: skip
        for name, a in s["activations"].items():
            lines.append(f"| {name} | {iv(a['mae_inside'])} | {iv(a['mae_outside'])} | "
                         f"{a['diverged']} |")  # fmt: skip
        return "\n".join(lines)

    def successes(self, group, models, labels=None, setting=None) -> str:
        """ "NAC₊ 0/16 [0%, 19%]; NALU …" for ``group/MODEL`` cells; "—" for a missing one."""
        labels = labels or models
        parts, found = [], False
        for m, label in zip(models, labels, strict=True):
            try:
                s = self.summary(f"{group}/{m}", setting)
                if "splits" in s:  # number translation: the test split
                    s = next(p for p in s["splits"] if p["split"] == "test") | {
                        "num_seeds": s["num_seeds"]
                    }
                lo, hi = s["success_interval"]
                parts.append(
                    f"{label} {s['solved']}/{s['num_seeds']} [{_pct(lo)}, {_pct(hi)}]".strip()
                )
                found = True
            except Missing:
                parts.append(f"{label} —")
        if not found:
            raise Missing(group)
        return "; ".join(parts)

    def _gridworld_t(self, cell, agent, t) -> dict:
        s = self.summary(cell)
        a = next((a for a in s["agents"] if a["agent"] == agent), None)
        row = None if a is None else next((r for r in a["per_t"] if r["t"] == t), None)
        if row is None:
            raise Missing(f"{cell} agent {agent} T={t}")
        return row

    def success_at_t(self, cell, agent, t) -> str:
        """Grid world: an agent's mean greedy success at episode length ``t``, "93%"."""
        return _pct(self._gridworld_t(cell, agent, t)["success_rate"])

    def gridworld_table(self, cell, times=None) -> str:
        """Grid world: per T, each agent's mean success [t interval over seeds, clipped to
        [0, 1]] and the seeds mastering T; the random policy's success beside them."""
        s = self.summary(cell)
        agents = s["agents"]
        times = list(times or s["test_times"])
        lo, hi = s["train_range"]
        head = ["T"] + [f"{a['label']}: success [95%, over seeds]" for a in agents]
        head += [f"{a['label']}: seeds ≥ {s['master_rate']:g}" for a in agents] + ["random policy"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        random = dict(zip(s["test_times"], s.get("random_policy_success", []), strict=False))
        for t in times:
            rows = [self._gridworld_t(cell, a["agent"], t) for a in agents]
            cells = [f"{t} (train)" if lo <= t <= hi else str(t)]
            # a rate's t interval clipped to [0, 1]
            cells += [f"{_pct(r['success_rate'])} [{_pct(max(0.0, r['seed_interval'][0]))}, "
                      f"{_pct(min(1.0, r['seed_interval'][1]))}]" for r in rows]  # fmt: skip
            mastered = zip(rows, agents, strict=True)
            cells += [f"{r['seeds_mastered']}/{a['num_seeds']}" for r, a in mastered]
            cells.append(_pct(random[t]) if t in random else "—")
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def at_length(self, cell, length) -> str:
        """Sequential MNIST: "8/10 [49%, 94%]" at one test length."""
        s = self.summary(cell)
        g = next((g for g in s["per_length"] if g["length"] == length), None)
        if g is None or "success_interval" not in g:
            return "—"
        lo, hi = g["success_interval"]
        return f"{g['solved']}/{s['num_seeds']} [{_pct(lo)}, {_pct(hi)}]"

    def lengths_table(self, cells, labels=None, key="solved") -> str:
        """Success per test length: one column per cell, one row per length (from each cell's
        ``summary.json`` ``per_length`` groups; sequential MNIST)."""
        labels = labels or [c.rsplit("/", 1)[-1] for c in cells]
        per = []
        for c in cells:
            try:
                per.append(self.summary(c))
            except Missing:
                per.append(None)
        if all(p is None for p in per):
            raise Missing(", ".join(cells))
        lengths = []
        for p in per:
            for g in (p or {}).get("per_length", []):
                if g["length"] not in lengths:
                    lengths.append(g["length"])
        lines = ["| length | " + " | ".join(labels) + " |", "|" + "---|" * (len(labels) + 1)]
        for n in sorted(lengths):
            row = [str(n)]
            for p in per:
                g = next((g for g in (p or {}).get("per_length", []) if g["length"] == n), None)
                if p is None:
                    row.append(NO_DATA)
                elif g is None or "success_interval" not in g:
                    row.append("—")
                else:
                    lo, hi = g["success_interval"]
                    row.append(f"{g['solved']}/{p['num_seeds']} [{_pct(lo)}, {_pct(hi)}]")
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)

    # ------------------------------------------------------------------------- template
    def study(self, path: str) -> _Study:
        """The renderer of a study's cells: ``results/PATH`` holds tables as ``results/`` does
        (a launcher's ``--results=results/PATH``), e.g. the same cells under another config;
        ``{{ study("studies/NAME").arith_tests(...) }}``. What it lacks is named under PATH."""
        return _Study(Renderer(os.path.join(self.root, path)), path)

    def namespace(self) -> dict:
        names = ("success", "solved", "seeds", "stat", "verdict", "provenance", "arith_table",
                 "arith_counts", "arith_seeds", "arith_budgets", "timing_table", "primer_table",
                 "identity_table", "lengths_table", "successes", "at_length", "solved_in_all", "success_at_t",
                 "gridworld_table", "arith_tests", "repeated_looks", "published_solved_at_means",
                 "published_medians", "table_verdict", "not_covered_rows",
                 "scaled_error", "identity_models", "identity_verdict",
                 "cross_commit", "cross_commits", "settled", "study", "solved_steps", "batch_seeds",
                 "late_solvers", "live_seeds")  # fmt: skip
        from nalu_jax.reproduce import figures_render, render_nalu, specs

        return {
            **{n: getattr(self, n) for n in names},
            "TABLE1": list(specs.TABLE1_CELLS),  # cell keys for only=
            "APPC_OTHERS": list(specs.appendix_c_others()),
            **figures_render.functions(self),
            **render_nalu.functions(self, Missing, NO_DATA),
        }

    def render(self, template: str) -> str:
        ns = self.namespace()

        def one(match):
            try:
                return str(eval(match.group(1).strip(), {"__builtins__": {}}, ns))  # noqa: S307
            except Missing as e:
                return f"{NO_DATA} (`results/{e.args[0]}`)"

        return PLACEHOLDER.sub(one, template)


class _Study:
    """A ``Renderer`` of ``results/PATH`` whose ``Missing`` names the cell under PATH."""

    def __init__(self, renderer: Renderer, path: str):
        self._renderer, self._path = renderer, path

    def __getattr__(self, name):  # the template's functions, then the renderer's attributes
        functions = self._renderer.namespace()
        value = functions[name] if name in functions else getattr(self._renderer, name)
        if not callable(value):
            return value

        def call(*args, **kwargs):
            try:
                return value(*args, **kwargs)
            except Missing as e:
                raise Missing(f"{self._path}/{e.args[0]}") from None

        return call


def _seed_span(seeds) -> str:
    """ "seeds 36–51" (consecutive), "seed 7", "seeds 1, 4 and 9"; "no seed" where empty."""
    seeds = sorted(seeds)
    if not seeds:
        return "no seed"
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds[-1] - seeds[0] == len(seeds) - 1:
        return f"seeds {seeds[0]}–{seeds[-1]}"
    return "seeds " + and_list([str(x) for x in seeds])


def _solved_at(rows) -> list[int]:
    """The solved seeds' solved-at steps of ``seeds.csv`` rows, in order."""
    return sorted(int(float(r["solved_at"])) for r in rows if int(r["solved"]))


def _step_span(steps: list[int]) -> str:
    """Sorted steps first to last, "2,145,000 to 4,844,000"; one step: "530,000"."""
    return f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,} to {steps[-1]:,}"


def _wall(batch: dict) -> str:
    """A batch's wall time, or "wall time not recorded" (a zero or missing record)."""
    w = batch.get("wall_time_s")
    return f"{w / 60:.1f} min" if w else "wall time not recorded"


def _command(batch: dict, table: str) -> str:
    """A batch's recorded command as code, less the launcher and table its section names
    (``python -m launch.reproduce --table=TABLE``); "—" where none was recorded."""
    command = batch.get("command")
    if not command:
        return "—"
    return f"`{command.removeprefix(f'python -m launch.reproduce --table={table} ')}`"


def _rate(batch: dict) -> str:
    """A batch's seed-steps/s, or why it has none worth comparing: training stopped early
    because every seed had diverged (``engine.loop``), or no rate was recorded."""
    if batch.get("stopped_at_step") is not None:
        return f"— (all diverged by step {batch['stopped_at_step']:,}; not trained after)"
    rate = batch.get("seed_steps_per_s")
    return f"{round(rate):,}" if rate else "—"


def _machine(batch: dict, paren: bool = True) -> str:
    """A provenance batch's machine: the CPU and its cores, or the accelerator's kind; then
    its matmul precision when below full float32 (a batch recorded before the field existed
    ran at full precision)."""
    where = results_lib.describe_machine(batch["machine"], paren=paren)
    precision = batch.get("matmul_precision", "highest")
    if precision not in ("highest", "float32"):
        where += f", matmul_precision {precision!r}"
    return where


def _budget(fraction: float) -> str:
    return "the full" if fraction >= 1 else fraction_words(fraction)


def render(template_path: str, root: str) -> str:
    with open(template_path) as f:
        return Renderer(root).render(f.read())


def main(argv=None) -> int:
    repo = _repo()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--template", default=os.path.join(repo, "docs", "reproductions.template.md"))
    p.add_argument("--results", default=os.path.join(repo, "results"))
    p.add_argument("--out", default=os.path.join(repo, "docs", "reproductions.md"))
    p.add_argument("--check", action="store_true", help="exit 1 if --out differs")
    args = p.parse_args(argv)
    # a mistyped path would otherwise render every cell as "no committed data" over the document
    paths = [("--results", args.results, "directory"), ("--template", args.template, "file")]
    paths += [("--out", args.out, "file")] if args.check else []
    for flag, path, kind in paths:
        if not (os.path.isdir if kind == "directory" else os.path.isfile)(path):
            print(f"{flag}: {path} is not a {kind}.", file=sys.stderr)
            return 2
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):  # written without --check
        print(f"--out: {args.out} lies in no existing directory.", file=sys.stderr)
        return 2
    text = render(args.template, args.results)
    if args.check:
        with open(args.out) as f:
            if f.read() != text:
                print(f"{args.out} differs from what {args.results} renders; run "
                      "python -m nalu_jax.reproduce.render", file=sys.stderr)  # fmt: skip
                return 1
        return 0
    from nalu_jax.reporting.report import atomic_write

    atomic_write(args.out, text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
