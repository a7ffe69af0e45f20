"""The rubric's verdicts for the rendered document: per-seed tests of a table's cells, the
whole table's verdict, and the published experiments not covered yet.

A mixin of :class:`nalu_jax.reproduce.render.Renderer` (it uses the renderer's ``_rows``,
``_dir`` and ``root``); every function here is a template function (``{{ … }}``).

A static-arithmetic cell is judged by the per-seed tests of :mod:`~nalu_jax.reproduce.seedtests`
where the authors' seeds of the same config are published, else by interval overlap
(``Renderer.cell_verdict``); both are shown. The whole table is "reproduced" when every cell is,
"not reproduced" when no cell is, and "partly" otherwise, naming the cells that are not.
"""

from __future__ import annotations

import math
import os

import numpy as np

from nalu_jax.reporting import metrics
from nalu_jax.reproduce import results as results_lib
from nalu_jax.reproduce import seedtests

#: the published experiments not implemented: (glance label, claim, the results cells that
#: would hold them, what is missing)
_UNTRANSCRIBED = "its protocol (data, model sizes, budget) is not in docs/protocols.md"
NOT_COVERED = (
    ("Program evaluation (NALU §4.4)", "an LSTM with a NALU evaluates simple programs beyond the "
     "training range",
     ("nalu-program-evaluation",), _UNTRANSCRIBED),
    ("MNIST parity (NALU §4.6)", "the parity task and its ablation of the NAC's constraints",
     ("mnist-parity",), _UNTRANSCRIBED),
)  # fmt: skip


class Missing(Exception):
    """A placeholder names a cell that ``results/`` does not hold."""


def _p(v) -> str:
    if v is None or not math.isfinite(v):
        return "—"
    return f"{v:.2g}" if v >= 0.001 else "< 0.001"


def _solved_median(seeds: dict, metric: str) -> float:
    """The median of ``metric`` over the solved seeds (non-NaN values; NaN if none)."""
    return metrics.median(np.asarray(seeds[metric])[np.asarray(seeds["solved"], bool)])


def _value(v: float, metric: str) -> str:
    """A step count in full, any other metric to two significant digits."""
    if not math.isfinite(v):
        return "—"
    return f"{v:,.0f}" if metric == "solved_at" else f"{v:.2g}"


def _paper_rate(r) -> tuple[float, int] | None:
    """The paper's success rate and seed count of row ``r``, or None where either is not
    given."""
    rate, n = r.get("published_success_rate"), r.get("published_num_seeds")
    if rate is None or n is None or not (math.isfinite(rate) and math.isfinite(n)):
        return None
    return float(rate), int(n)


def _detectable_against_paper(r) -> float:
    """The success difference Fisher's test would detect with 80% power between our seeds and
    the paper's seed count at the paper's rate (row ``r``; NaN where either is not given)."""
    paper = _paper_rate(r)
    if paper is None:
        return math.nan
    rate, n = paper
    return seedtests.detectable_difference(rate, int(r["num_seeds"]), n)


def _paper_count(r) -> tuple[int, int] | None:
    """The paper's (solved, seeds) of row ``r`` where its rate at its seed count is a whole
    number of seeds (a rate printed to whole percent over 100 seeds, or a multiple of 1/25
    over 25), else None: the count Fisher's test needs where the authors' seeds are not
    published."""
    paper = _paper_rate(r)
    if paper is None:
        return None
    solved = paper[0] * paper[1]
    k = round(solved)
    return (k, paper[1]) if abs(solved - k) < 1e-6 else None


class VerdictFunctions:
    """Template functions for verdicts (mixed into the renderer)."""

    def _our_seeds(self, table, cell):
        """Our committed seeds of ``cell`` (``seeds.csv`` rows), or None where it has none."""
        path = os.path.join(results_lib.resolve(os.path.join(self.root, table, cell)), "seeds.csv")
        return results_lib.read_csv(path) if os.path.exists(path) else None

    def _seeds(self, table, op, model):
        """Our committed seeds of cell ``op-model`` (``seeds.csv`` rows) and the authors'
        published seeds, or None where either is missing."""
        pub = seedtests.published_seeds().get((op, model))
        ours = None if pub is None else self._our_seeds(table, f"{op}-{model}")
        return None if ours is None else (ours, pub)

    def _tests(self, table, r):
        """The per-seed tests of row ``r`` against the authors' seeds, or None (unpublished)."""
        seeds = self._seeds(table, r["op"], r["model"]) if r["status"] == "done" else None
        if seeds is None:
            return None
        rows, pub = seeds
        return seedtests.compare(metrics.judgement_from_rows(rows), pub)

    def final_verdict(self, table, spec, r) -> str:
        """By the tests where the authors' seeds are published, else by interval overlap."""
        c = self._tests(table, r)
        if c is None:
            return self.cell_verdict(spec, r)
        return seedtests.verdict(c, int(r["num_steps"]) / spec.num_steps)

    def repeated_looks(self, table, cell, metric="solved_at") -> str:
        """A cell extended batch by batch, its tests read afresh at each committed seed count
        (the first N seeds, N at each batch's end, from ``provenance.json``): ``metric``'s U test
        p, the rubric's verdict and our solved seeds' median ``metric`` at each count, uncorrected
        for the repeated looks, then the authors' median."""
        seeds = self._seeds(table, *cell.split("-", 1))
        if seeds is None:
            return f"*{table}/{cell}: no committed data or no published seeds*"
        rows, pub = seeds
        looks = []
        batches = self.batches(f"{table}/{cell}")
        for n in sorted({int(b["first_seed"]) + int(b["num_seeds"]) for b in batches}):
            first = [r for r in rows if int(r["seed"]) < n]
            ours = metrics.judgement_from_rows(first)
            c = seedtests.compare(ours, pub)
            looks.append(f"{_p(c[f'{metric}_p'])} at {n} seeds ({seedtests.verdict(c)}; median "
                         f"{_value(_solved_median(ours, metric), metric)})")  # fmt: skip
        return (
            "; ".join(looks)
            + f"; the authors' median {_value(_solved_median(pub, metric), metric)}"
        )

    def published_solved_at_means(self, table, rel=0.01) -> str:
        """The paper's solved-at mean of each cell against the sample mean of the authors' own
        published seeds of that cell (every cell with at least two solved seeds): the cells
        where the two differ by more than ``rel``, each with the ratio and whether the paper's
        interval holds the sample mean, then how many cells agree. The paper's analysis fits a
        gamma distribution whose maximum-likelihood mean is the sample mean; a gap is where its
        fit stopped short of that maximum."""
        from nalu_jax.reproduce import specs, tables
        from nalu_jax.reproduce.specs import OP_LABELS

        spec = specs.table(table)
        seeds = seedtests.published_seeds()
        apart, same = [], 0
        for (op, model), p in tables.published(spec).items():
            s = seeds.get((op, model))
            if s is None or int(np.sum(s["solved"])) < 2:
                continue
            mean = float(np.mean(s["solved_at"][s["solved"]]))
            if abs(p["solved_at_mean"] / mean - 1) <= rel:
                same += 1
                continue
            inside = p["solved_at_lo"] <= mean <= p["solved_at_hi"]
            apart.append(
                f"{OP_LABELS.get(op, op)} {p['paper_name']} {p['solved_at_mean']:.3g} against "
                f"{mean:.3g} (×{p['solved_at_mean'] / mean:.2f}"
                + ("" if inside else "; outside the paper's interval")
                + ")"
            )
        if not apart and not same:
            raise Missing(table)
        return (
            f"in {len(apart)} of {len(apart) + same} cells the paper's mean differs from its "
            f"seeds' sample mean by more than {100 * rel:.0f}%: "
            + "; ".join(apart)
            + f"; in the other {same} it is within {100 * rel:.0f}% of it"
        )

    def published_medians(self, table, ops=None, models=None, only=None) -> str:
        """The paper's solved-at median of each committed cell against our solved seeds'
        median with its distribution-free 95% interval (``metrics.median_interval``): a
        comparison that needs no fitted distribution, shown beside the verdicts, not in them."""
        from nalu_jax.reproduce.specs import OP_LABELS

        _, rows = self._rows(table, ops, models, only)
        out, inside, compared = [], 0, 0
        for r in rows:
            theirs = r.get("published_solved_at_median", math.nan)
            if r["status"] != "done" or not math.isfinite(theirs):
                continue
            seeds = metrics.judgement_from_rows(self._our_seeds(table, r["cell"]))
            mid, lo, hi = metrics.median_interval(seeds["solved_at"][seeds["solved"]])
            name = f"{OP_LABELS.get(r['op'], r['op'])} {r['paper_name']}: the paper's {theirs:,.0f}"
            ours = _value(mid, "solved_at")
            if not (math.isfinite(lo) and math.isfinite(hi)):
                out.append(f"{name}, ours {ours} (too few solved seeds for an interval: "
                           f"{int(r['solved'])})")  # fmt: skip
                continue
            held = lo <= theirs <= hi
            compared, inside = compared + 1, inside + held
            out.append(f"{name}, ours {ours} [{lo:,.0f}, {hi:,.0f}] "
                       f"({'inside' if held else 'outside'})")  # fmt: skip
        if not out:
            raise Missing(table)
        return "; ".join(out) + f" ({inside} of {compared} inside)"

    def arith_tests(self, table, ops=None, models=None, only=None) -> str:
        """Per cell: the tests against the authors' seeds, their power, and the verdict."""
        from nalu_jax.reproduce.specs import OP_LABELS

        spec, rows = self._rows(table, ops, models, only)
        head = ["op", "model", "solved: ours / authors'", "Fisher p (success)",
                "detectable success difference (80% power)", "solved-at MWU p",
                "sparsity error MWU p", "verdict by the tests", "verdict by interval overlap"]  # fmt: skip
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        found = False
        for r in rows:
            if r["status"] != "done":
                continue
            found = True
            op = OP_LABELS.get(r["op"], r["op"])
            c = self._tests(table, r)
            overlap = self.cell_verdict(spec, r)
            if c is None:  # judged by interval overlap; Fisher's test and its power against
                # the paper's count, beside the verdict
                d, paper = _detectable_against_paper(r), _paper_count(r)
                power = fisher = "—"
                if math.isfinite(d):
                    power = f"≥ {100 * d:.0f} points (against the paper's rate)"
                if paper is not None:
                    p = seedtests.success_p((int(r["solved"]), int(r["num_seeds"])), paper)
                    fisher = f"{_p(p)} (against the paper's {paper[0]}/{paper[1]})"
                lines.append(f"| {op} | {r['paper_name']} | {r['solved']}/{r['num_seeds']} / the "
                             f"authors' seeds are not published | {fisher} | {power} | — | — | "
                             f"— | {overlap} |")  # fmt: skip
                continue

            def mwu(name, c=c):
                if not c[f"{name}_testable"] and math.isfinite(c[f"{name}_p"]):
                    a, b = c[f"{name}_n"]
                    return f"{_p(c[f'{name}_p'])} (cannot reach 5% at {a} and {b})"
                return _p(c[f"{name}_p"])

            d = c["success_detectable"]
            lines.append("| " + " | ".join([
                op, r["paper_name"],
                f"{c['solved_ours']}/{c['n_ours']} / {c['solved_theirs']}/{c['n_theirs']}",
                _p(c["success_p"]), "—" if not math.isfinite(d) else f"≥ {100 * d:.0f} points",
                mwu("solved_at"), mwu("sparsity_error"),
                self.final_verdict(table, spec, r), overlap,
            ]) + " |")  # fmt: skip
        if not found:
            raise Missing(table)
        return "\n".join(lines)

    def table_verdict(self, table, ops=None, models=None, only=None) -> str:
        """The whole table by the rubric: every cell reproduced → reproduced; none → not
        reproduced; else partly, naming the cells that are not, those of one verdict together
        (and "not settled" for a table with a cell not yet committed)."""
        from nalu_jax.reproduce.specs import OP_LABELS

        spec, rows = self._rows(table, ops, models, only)
        rows = [r for r in rows if r["status"] in ("done", "missing")]
        words = {}
        for r in rows:
            v = "no committed data" if r["status"] == "missing" else None
            words[f"{OP_LABELS.get(r['op'], r['op'])} {r['paper_name']}"] = v or (
                self.final_verdict(table, spec, r)
            )
        if all(v == "no committed data" for v in words.values()):
            raise Missing(table)
        good = [k for k, v in words.items() if v.startswith("reproduced")]
        rest = {k: v.split(" (")[0] for k, v in words.items() if k not in good}
        reduced = any("of the budget" in words[k] for k in good)
        if not rest:
            at = "; some at a fraction of the budget, as each cell says" if reduced else ""
            return f"**reproduced** (all {len(good)} cells{at})"
        unsettled = ("not settled", "no committed data")
        if all(v.startswith(unsettled) for v in rest.values()):
            word = "not settled"  # nothing contradicts the paper; some cells cannot tell yet
        else:
            word = "not reproduced" if not good else "partly"
        groups = {}  # cells of the same verdict named together, in table order
        for k, v in rest.items():
            groups.setdefault(v, []).append(k)
        named = "; ".join(
            f"{cells[0]}: {v}" if len(cells) == 1 else f"{v}: {', '.join(cells)}"
            for v, cells in groups.items()
        )
        return f"**{word}**: {len(good)} of {len(words)} cells reproduced; {named}"

    def not_covered_rows(self) -> str:
        """One glance row per published experiment not covered yet: "not implemented" until
        one of its results cells is committed."""
        lines = []
        for label, claim, cells, why in NOT_COVERED:
            have = [c for c in cells if os.path.isdir(os.path.join(self.root, c))]
            status = (
                f"not implemented: {why}"
                if not have
                else f"results committed (`results/{have[0]}`); not judged in this table"
            )
            lines.append(f"| {label} | {claim} | — | — | {status} |")
        return "\n".join(lines)


class ScaledErrorFunctions:
    """The NALU paper's scaled error of a recurrent or static cell (mixed into the renderer)."""

    def scaled_error(self, cell, which="extrapolation") -> str:
        """Median [min, max] over seeds of ``100 · MSE / MSE of the seed's untrained network``
        (``CELL/random_baseline.csv``, ``launch/random_baseline.py``): 0 exact, 100 random. A
        seed without a finite error counts as ∞; one whose untrained network has none is left
        out; a note after the interval says how many of each."""
        import numpy as np

        from nalu_jax.experiments.random_baseline import scaled_errors

        path = self._dir(cell)
        base_path = os.path.join(path, "random_baseline.csv")
        if not os.path.exists(base_path):
            raise Missing(f"{cell}/random_baseline.csv")
        seeds = {int(r["seed"]): r for r in results_lib.read_csv(os.path.join(path, "seeds.csv"))}
        base = results_lib.read_csv(base_path)
        if sorted(int(b["seed"]) for b in base) != sorted(seeds):
            # a cell extended after its baseline was written: the scaled error of a subset of
            # its seeds would pass for the cell's
            raise Missing(
                f"{cell}/random_baseline.csv for all {len(seeds)} seeds of seeds.csv (it holds "
                f"{len(base)}; run `python -m launch.random_baseline` on the cell again)"
            )
        key, col = (("extrapolation_mse", "test_mse") if which == "extrapolation"
                    else ("interpolation_mse", "valid_mse"))  # fmt: skip
        trained = np.array([float(seeds[int(b["seed"])][key] or "nan") for b in base])  # "": none
        random = np.array([float(b[col]) for b in base])
        # a seed whose untrained network has no finite error has no scaled error: left out, and
        # said; a trained seed with no finite error (diverged, or overflowing on the longer
        # sequences) is worse than any finite error: counted, as ∞
        judged = np.isfinite(random) & (random > 0)
        s = np.where(np.isfinite(trained), scaled_errors(trained, random), np.inf)[judged]
        if not len(s):
            return "—"

        def f(v):
            return "∞" if np.isinf(v) else (f"{v:.2g}" if v < 1e4 else f"{v:.1e}")

        text = f"{f(float(np.median(s)))} [{f(float(s.min()))}, {f(float(s.max()))}]"
        notes = []
        if n := int(np.isinf(s).sum()):
            notes.append(f"{n} of {len(s)} seeds with no finite error, counted as ∞")
        if n := int((~judged).sum()):
            notes.append(f"{n} seed{'s' if n > 1 else ''} left out: no finite error of the "
                         "untrained network")  # fmt: skip
        return text + (f" ({'; '.join(notes)})" if notes else "")


#: the identity task's networks that are not MLPs with a non-linear activation
IDENTITY_LINEAR = ("linear", "nac_add", "nau")
#: an MLP "fails outside the range" when its MAE there is at least this many times the linear
#: network's (the paper's own contrast, Fig. 1)
IDENTITY_FACTOR = 10


class IdentityFunctions:
    """The identity-failure verdict by its stated rule (mixed into the renderer)."""

    def _identity(self, cell):
        acts = self.summary(cell)["activations"]
        ref = acts["linear"]["mae_outside"]["mean"]
        nonlinear = [a for a in acts if a not in IDENTITY_LINEAR]
        fail = [a for a in nonlinear if acts[a]["mae_outside"]["mean"] >= IDENTITY_FACTOR * ref]
        hold = [a for a in nonlinear if a not in fail]
        lin_ok = [
            a
            for a in IDENTITY_LINEAR
            if a in acts and acts[a]["mae_outside"]["mean"] < IDENTITY_FACTOR * ref
        ]
        return acts, ref, nonlinear, fail, hold, lin_ok

    def identity_models(self, cell) -> str:
        """ "11 activations (10 non-linear and the linear network), NAC₊, NAU"."""
        acts, _, nonlinear, *_ = self._identity(cell)
        extra = [{"nac_add": "NAC₊", "nau": "NAU"}[a] for a in ("nac_add", "nau") if a in acts]
        return (
            f"{len(nonlinear) + 1} activations ({len(nonlinear)} non-linear and the linear "
            f"network), {', '.join(extra)}"
        )

    def identity_verdict(self, cell) -> str:
        """Reproduced when every non-linear MLP's MAE outside the range is ≥ 10× the linear
        network's and the linear network, NAC₊ and NAU stay below it; else partly, naming the
        exceptions (not settled: the paper gives no budget, so "not reproduced" is never said)."""
        acts, ref, nonlinear, fail, hold, lin_ok = self._identity(cell)
        lin_bad = [a for a in IDENTITY_LINEAR if a in acts and a not in lin_ok]
        head = (
            f"{len(fail)} of {len(nonlinear)} non-linear activations err outside the range by "
            f"≥ {IDENTITY_FACTOR}× the linear network's MAE there ({_f3(ref)})"
        )
        if not hold and not lin_bad:
            return f"**Reproduced.** {head}; the linear network, NAC₊ and NAU stay below it."
        exceptions = [
            f"{a} ({_f3(acts[a]['mae_outside']['mean'])}, "
            f"{acts[a]['mae_outside']['mean'] / ref:.1f}×)"
            for a in hold
        ]
        parts = [f"within {IDENTITY_FACTOR}×: {', '.join(exceptions)}"] if hold else []
        parts += [f"not below it: {', '.join(lin_bad)}"] if lin_bad else []
        return (
            f"**Partly.** {head}; {'; '.join(parts)}. The paper gives no budget, so the "
            "exceptions are not settled rather than not reproduced."
        )


def _f3(v) -> str:
    return f"{v:.2g}"


class CrossCommitFunctions:
    """A merged cell's cross-commit check, recorded beside its batches (mixed into the
    renderer): ``CELL/cross_commit.json`` = ``{"checks": [{"commits", "seeds", "steps",
    "compared", "identical", "date", "command"}]}``, with ``first_seed`` where the seeds
    compared are not the first (0 by default)."""

    def cross_commit(self, cell) -> str:
        """ "3693ec5 and 5b96e1d: identical (seeds 0–3 × 1,010,000 steps; seeds.csv, …)"."""
        path = os.path.join(self._dir(cell), "cross_commit.json")
        if not os.path.exists(path):
            raise Missing(f"{cell}/cross_commit.json")
        parts = []
        for c in results_lib.read_json(path)["checks"]:
            word = "identical" if c["identical"] else "DIFFERENT"
            first = c.get("first_seed", 0)
            parts.append(
                f"{' and '.join(k[:7] for k in c['commits'])}: {word} (seeds "
                f"{first}–{first + c['seeds'] - 1}"
                f" × {c['steps']:,} steps; {', '.join(c['compared'])}; {c['date'][:10]})"
            )
        return "; ".join(parts)

    def cross_commits(self, table, ops=None, models=None, only=None) -> str:
        """Every recorded cross-commit check of the table's cells (``_cells``' restriction),
        "÷ ReLU: c92ad41 and a0dec3d: identical (…); √z Gated NAU/NMU: …"."""
        from nalu_jax.reproduce import specs
        from nalu_jax.reproduce.specs import OP_LABELS

        parts = []
        for cell in self._cells(specs.table(table), ops, models, only):
            path = f"{table}/{cell.key}"
            if os.path.exists(os.path.join(self.root, path, "cross_commit.json")):
                label = f"{OP_LABELS.get(cell.op, cell.op)} {cell.variant.label}"
                parts.append(f"{label}: {self.cross_commit(path)}")
        if not parts:
            raise Missing(f"{table}: no cross_commit.json")
        return "; ".join(parts)


class BudgetFunctions:
    """The rubric's "not settled" for experiments judged in prose (mixed into the renderer):
    the word is computed from the paper's budget and the committed contrast cells."""

    def settled(self, text, *cells, budget=None, contrast=(), label="", verdict="") -> str:
        """``text`` under the rubric's word: "not settled" when a ``contrast`` cell is not
        committed, when the paper gives no ``budget`` (None), or when the cells ran fewer steps
        than it; else ``verdict`` (the caller's reading of the figures: "reproduced",
        "partly", "not reproduced")."""
        for c in cells:
            self._dir(c)
        missing = [c for c in contrast if not os.path.isdir(os.path.join(self.root, c))]
        if missing:
            reason = "not committed: " + ", ".join(f"`results/{c}`" for c in missing)
        elif budget is None:
            reason = "the paper gives no budget"
        else:
            steps = min(int(self.summary(c)["num_steps"]) for c in cells)
            reason = f"{steps / budget:.0%} of the paper's budget" if steps < budget else ""
        if reason:
            return f"**{label}not settled** ({reason}). {text}".strip()
        if not verdict:
            raise ValueError("settled(): a verdict is needed where the budget is met")
        return f"**{label}{verdict}.** {text}".strip()
