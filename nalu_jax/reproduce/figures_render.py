"""The template functions of the ICLR 2020 figures (``nalu_jax.reproduce.figures_iclr``): each
figure as a table of success per point and model, its committed budget, and its verdict.

  ``figure_table(name, op="mul")``   success per point (rows) and model (columns): "3/10 [11%, 60%]";
                                     ``measures=True`` adds solved-at and sparsity error,
                                     ``models="paper_steps"`` keeps the columns run at the
                                     paper's iterations
  ``figure_budget(name)``            committed seed-steps, the fraction of the paper's, wall time
                                     and machine
  ``figure_verdict(name)``           the rubric applied to the paper's claim (``CLAIMS``)
  ``figure_solved(name)``            seeds solved over every committed point: "3 of 360 seeds"
  ``figure_best_steps(name)``        the solved seeds' best steps against R_sparse's ramp
  ``cell_best_steps(cell)``          the same for one results cell of one setting
  ``figure_diverged(name, model)``   one model's diverged runs per point, with the step each
                                     diverged at: "4 of 35 runs, 3 on U[0,1] (at 729, …)"
  ``figure_errors(name, model, point)``  one point's interpolation and extrapolation errors at
                                     the best validation step, against the success threshold
  ``figure_span(name, model, what)``  one model's solved or diverged seeds, or median
                                     solved-at step, over some points: "1 to 3 of 10"
  ``figure_solvers(name, model)``    one model's solved seeds per point and their solved-at
  ``seeds_against(a, b)``            two runs' per-seed rows on their common seeds:
                                     identical, the same solvers, or which seeds differ
  ``wall_minutes(*cells)``           each cell's wall time: "33, 35, 30 and 33 min"
  ``cell_minutes(table, *cells)``    one batch's wall time over a table's cells: "5–7 min"
  ``batch_rates(cell)``              each committed batch's seed-steps per second (and
                                     ``minutes=True``: its wall time)

A figure's cell is ``results/<name>/<op>-<model>`` (its points are one program's sweep settings)
or ``results/<name>/<op>-<model>-<point>`` (one program per point).
"""

from __future__ import annotations

import math
import os
from collections import Counter

from nalu_jax.config import as_tuples
from nalu_jax.reproduce import results as results_lib
from nalu_jax.reproduce.figures_iclr import CLAIMS
from nalu_jax.reproduce.results import and_list
from nalu_jax.reproduce.specs import OP_LABELS


def _pct(v) -> str:
    return f"{100 * v:.0f}%"


def _percent(v) -> str:
    """A share in percent to two significant digits: "0.39%", "40%", and "100%", not "1e+02%"."""
    text = f"{v:.2g}"
    return f"{v:.0f}%" if "e" in text else f"{text}%"


def _measure(v) -> str:
    """A solved seeds' statistic, "—" where no seed solved."""
    return "—" if v is None or not math.isfinite(float(v)) else f"{float(v):.3g}"


def _usual(values):
    """The most common of ``values`` (ties: the smallest); None when there are none."""
    counts = Counter(values)
    return min(counts, key=lambda v: (-counts[v], v)) if counts else None


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _steps(n: int) -> str:
    """``2·10⁶`` for 2,000,000, ``1.5·10⁷`` for 15,000,000, ``25,000`` where no power of ten
    is shorter."""
    exp = len(str(n)) - len(str(n).rstrip("0"))
    if exp < 4:
        return f"{n:,}"
    digits = str(n // 10**exp)  # the mantissa's digits, one before the point
    exp += len(digits) - 1
    sup = str(exp).translate(_SUPERSCRIPT)
    mant = digits if len(digits) == 1 else f"{digits[0]}.{digits[1:]}"
    return f"10{sup}" if mant == "1" else f"{mant}·10{sup}"


def _sci(v: float) -> str:
    """Two significant digits, a power of ten where the number is below 0.01 or from 10⁴:
    "1.7·10⁻⁵", "0.92", "730", "5.8·10⁵"."""
    r = float(f"{v:.2g}")
    if r == 0 or 0.01 <= abs(r) < 1e4:
        return f"{r:g}"
    mant, exp = f"{r:.1e}".split("e")
    sup = str(int(exp)).translate(_SUPERSCRIPT)
    return f"{mant}·10{sup}"


def _number(text: str) -> float:
    """A ``seeds.csv`` field as a number: an empty field (how it writes NaN) is NaN."""
    return float(text) if text.strip() else math.nan


def _solved_best_steps(seeds_dir: str) -> list[int]:
    """The best validation steps of the solved seeds in ``seeds_dir``'s ``seeds.csv``."""
    rows = results_lib.read_csv(os.path.join(seeds_dir, "seeds.csv"))
    return [int(r["best_step"]) for r in rows if int(r["solved"])]


def _against_ramp(steps, start: float, end: float) -> tuple[int, int, int]:
    """How many of ``steps`` fall at or before R_sparse's ramp ``start``, inside it, and at
    or after its ``end``."""
    before = sum(t <= start for t in steps)
    after = sum(t >= end for t in steps)
    return before, len(steps) - before - after, after


def _point_label(axis, value) -> str:
    if axis.name == "range":
        inter, extra = value
        show = lambda r: (" ∪ ".join(map(show, r)) if isinstance(r[0], tuple)  # noqa: E731
                          else f"U[{r[0]:g},{r[1]:g}]")  # fmt: skip
        return f"{show(inter)} → {show(extra)}"
    return f"{value:g}"


class FigureFunctions:
    """The figure functions over a ``Renderer`` (its ``summary``/``batches`` read ``results/``)."""

    def __init__(self, renderer):
        import sys

        self.r = renderer
        # the renderer's own module, not an import of it: under ``python -m
        # nalu_jax.reproduce.render`` that is ``__main__``, whose Missing another import's
        # class would not catch (and render imports this module: no cycle)
        module = sys.modules[type(renderer).__module__]
        self.Missing, self._budget = module.Missing, module._budget

    def _point_summary(self, spec, cell_key: str, i: int) -> dict:
        """The summary of point ``i`` of ``cell_key`` (OP-MODEL) in figure ``spec``."""
        return self._point(spec, cell_key, i)[0]

    def _point(self, spec, cell_key: str, i: int) -> tuple[dict, str, str]:
        """Point ``i`` of ``cell_key`` (OP-MODEL) in figure ``spec``: its summary, its cell's
        directory and that of its ``seeds.csv`` (a sweep's ``settings/NNN``, in the summary's
        order; else the cell's)."""
        Missing = self.Missing

        axis = spec.axis
        if not axis.sweep:
            path = f"{spec.name}/{cell_key}-{axis.keys[i]}"
            cell = self.r._dir(path)
            return self.r.summary(path), cell, cell
        want = axis.points[i]
        path = f"{spec.name}/{cell_key}"
        for h, part in enumerate(self.r.summary(path).get("settings", [])):
            values = part.get("setting_values", {})
            got = (
                (as_tuples(values.get("interpolation_range")),
                 as_tuples(values.get("extrapolation_range")))
                if axis.sweep == "range_pair" else values.get(axis.sweep)
            )  # fmt: skip
            if got == as_tuples(want):
                cell = self.r._dir(path)
                return part, cell, os.path.join(cell, "settings", f"{h:03d}")
        raise Missing(f"{spec.name}/{cell_key} point {_point_label(axis, want)}")

    def _cells(self, spec, op):
        return [v for v in spec.variants
                if spec.models_by_op is None or v.key in spec.models_by_op[op]]  # fmt: skip

    def _grid(self, spec, head, columns, text) -> str:
        """Figure ``spec``'s markdown table: ``head``, then a row per point of its axis with,
        per column ``(op, variant)``, ``text(op, variant, i, summary, cell dir, seeds dir)``
        of point ``i`` ("—" where it is not committed); ``Missing`` where no point is."""
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        found = False
        for i, value in enumerate(spec.axis.points):
            row = [_point_label(spec.axis, value)]
            for op, v in columns:
                try:
                    point = self._point(spec, f"{op}-{v.key}", i)
                except self.Missing:
                    row.append("—")
                    continue
                found = True
                row.append(text(op, v, i, *point))
            lines.append("| " + " | ".join(row) + " |")
        if not found:
            raise self.Missing(spec.name)
        return "\n".join(lines)

    def figure_table(self, name, op="mul", measures=False, models=None) -> str:
        """Figure ``name``'s points (rows) × models (columns) on ``op``: seeds solved and their
        Wilson interval; ``measures``: each also with the solved seeds' median solved-at step
        and mean sparsity error (the figure's other two panels); ``models``: only these model
        keys' columns (e.g. those run at a larger budget than the figure's others), or
        ``"paper_steps"``: the models with a committed cell on ``op`` that ran the paper's
        iterations (read from ``results/``, so a column run later joins by itself)."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        variants = self._cells(spec, op)
        if isinstance(models, str) and models != "paper_steps":
            raise ValueError(f'figure_table models: {models!r} is neither a list of model keys '
                             'nor "paper_steps"')  # fmt: skip
        if models == "paper_steps":
            models = {c.variant.key for path, c, _ in self._committed(spec)
                      if c.op == op and self._num_steps(path) == self._paper_steps(spec, c)}  # fmt: skip
        if models is not None:
            unknown = sorted(set(models) - {v.key for v in variants})
            if unknown:
                raise ValueError(f"figure_table models: {', '.join(unknown)} not among "
                                 f"{name}'s {', '.join(v.key for v in variants)}")  # fmt: skip
            variants = [v for v in variants if v.key in models]
        # a cell run at another budget than most of the figure's says its steps: at each point
        # where the points are cells of their own, in its column's head where a model's points
        # are one program (one cell)
        fractions = {} if spec.axis.sweep else self._fractions(spec)
        usual = _usual(fractions.values())
        cell_steps = self._steps_by_cell(spec) if spec.axis.sweep else {}
        usual_steps = _usual(cell_steps.values())

        def column(v):
            n = cell_steps.get(f"{spec.name}/{op}-{v.key}", usual_steps)
            return v.label + ("" if n == usual_steps else f" ({_steps(n)} steps)")

        def text(op, v, i, s, _cell, _seeds):
            lo, hi = s["success_interval"]
            out = f"{s['solved']}/{s['num_seeds']} [{_pct(lo)}, {_pct(hi)}]"
            path = f"{spec.name}/{op}-{v.key}-{spec.axis.keys[i]}" if fractions else ""
            if fractions.get(path, usual) != usual:
                out += f" ({_steps(s['num_steps'])} steps)"
            if measures:
                out += (f"; solved at {_measure(s.get('solved_at_median'))}, sparsity "
                        f"error {_measure(s.get('sparsity_error_mean'))}")  # fmt: skip
            return out

        head = [f"{spec.axis.label} ({OP_LABELS.get(op, op)})"] + [column(v) for v in variants]
        return self._grid(spec, head, [(op, v) for v in variants], text)

    def figure_best_steps(self, name, ops=None) -> str:
        """Where the solved seeds' best validation steps (the step their sparsity error is read
        at) fall against R_sparse's ramp, per point (rows) and cell (columns, of ``ops``, every
        op by default): "b / i / a" seeds at or before the ramp's start, inside it, at or after
        its end."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        columns = [(op, v) for op in ops or spec.ops for v in self._cells(spec, op)]

        def text(_op, _v, _i, s, cell, seeds):
            start, end = self._ramp(cell, s.get("setting_values", {}))
            before, inside, after = _against_ramp(_solved_best_steps(seeds), start, end)
            return f"{before} / {inside} / {after}"

        head = [spec.axis.label] + [f"{OP_LABELS.get(op, op)} {v.label}" for op, v in columns]
        return self._grid(spec, head, columns, text)

    def cell_best_steps(self, cell, published=False) -> str:
        """Where the solved seeds' best validation steps (the step their sparsity error is read
        at) of one-setting results cell ``cell`` fall against its R_sparse ramp: "3 at or
        before its start (10⁶), 35 inside, 2 at or after its end (2·10⁶)"; ``published``: the
        authors' seeds of the same table cell (``results/iclr2020-arithmetic/OP-MODEL``, from
        ``seedtests.published_seeds``) against the same ramp."""
        from nalu_jax.reproduce import seedtests

        path = self.r._dir(cell)
        start, end = self._ramp(path, {})
        if published:
            op, model = os.path.basename(os.path.normpath(cell)).split("-", 1)
            pub = seedtests.published_seeds().get((op, model))
            if pub is None or "best_step" not in pub:
                raise ValueError(f"cell_best_steps: no published best steps for {op}-{model}")
            steps = [int(t) for t, ok in zip(pub["best_step"], pub["solved"], strict=True) if ok]
        else:
            steps = _solved_best_steps(path)
        before, inside, after = _against_ramp(steps, start, end)
        return (f"{before} at or before its start ({_steps(int(start))}), {inside} inside, "
                f"{after} at or after its end ({_steps(int(end))})")  # fmt: skip

    def _ramp(self, cell, values) -> tuple[float, float]:
        """R_sparse's ramp (first and last iteration) of committed cell directory ``cell`` at
        setting ``values``: the setting's, else the cell config's ``train.reg_start`` /
        ``reg_end``, else its model's (``nalu_jax.models``)."""
        from nalu_jax.models import MODELS

        config = results_lib.read_json(os.path.join(cell, "config.json"))
        model = MODELS.get(config["model"]["name"])

        def one(key):
            for v in (values.get(key), config["train"].get(key), getattr(model, key, None)):
                if v is not None:
                    return float(v)
            raise self.Missing(f"{cell}: {key}")

        return one("reg_start"), one("reg_end")

    def _fractions(self, spec) -> dict:
        """``{cell path: fraction of the paper's seed-steps}`` of the committed cells (rounded,
        so that equal budgets compare equal); none committed: empty."""
        try:
            committed = self._committed(spec)
        except self.Missing:
            return {}
        return {p: round(self._cell_fraction(spec, p, c), 12) for p, c, _ in committed}

    def _steps_by_cell(self, spec) -> dict:
        """``{cell path: steps it ran}`` of the committed cells; none committed: empty."""
        try:
            committed = self._committed(spec)
        except self.Missing:
            return {}
        return {p: self._num_steps(p) for p, _, _ in committed}

    def _committed(self, spec):
        """``[(cell path, point index or None, provenance batches)]`` of the committed cells."""
        from nalu_jax.reproduce import specs

        Missing = self.Missing
        out = []
        for cell in specs.cells(spec):
            path = f"{spec.name}/{cell.key}"
            try:
                out.append((path, cell, self.r.batches(path)))
            except Missing:
                continue
        if not out:
            raise Missing(spec.name)
        return out

    @staticmethod
    def _paper_steps(spec, cell) -> int:
        """The paper's iterations for ``cell`` (its point's where the axis sets them)."""
        if spec.axis.steps:
            return spec.axis.steps[spec.axis.keys.index(cell.point)]
        return spec.num_steps

    def _cell_fraction(self, spec, path, cell) -> float:
        """The fraction of the paper's seed-steps committed cell ``path`` ran."""
        s = self.r.summary(path)
        seeds = int(s.get("num_seeds") or s["settings"][0]["num_seeds"])
        return seeds * self._num_steps(path) / (spec.num_seeds * self._paper_steps(spec, cell))

    def _num_steps(self, path) -> int:
        """The steps committed cell ``path`` ran (a sweep cell: its settings')."""
        s = self.r.summary(path)
        return int(s.get("num_steps") or s["settings"][0]["num_steps"])

    def fraction(self, name, reads=None) -> float:
        """The smallest fraction of the paper's seed-steps any committed cell ran (per point
        where the points' budgets differ); ``reads``: only the cells of these ``(model, point
        index)`` pairs (a figure whose points are one program: every point of the model)."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        keys = spec.axis.keys
        fractions = [
            self._cell_fraction(spec, path, cell)
            for path, cell, _ in self._committed(spec)
            if reads is None
            or any(cell.variant.key == m and (spec.axis.sweep or cell.point == keys[i])
                   for m, i in reads)
        ]  # fmt: skip
        return min(fractions) if fractions else self.fraction(name)

    def figure_budget(self, name) -> str:
        from nalu_jax.reproduce import specs
        from nalu_jax.reproduce.cells import num_runs
        from nalu_jax.reproduce.specs import cell_config

        spec = specs.table(name)
        done, full, wall = 0, 0, {}  # wall: seconds per machine
        committed = self._committed(spec)
        for _, _cell, batches in committed:
            for b in batches:
                runs = b["num_seeds"] * (len(spec.axis.points) if spec.axis.sweep else 1)
                done += runs * b["num_steps"]
            results_lib.wall_by_machine(batches, wall)
        for cell in specs.cells(spec):
            c = cell_config(spec, cell)
            full += num_runs(c) * int(c.num_steps)
        times = results_lib.minutes_on(dict(sorted(wall.items())))
        return (f"{len(committed)} of {len(specs.cells(spec))} cells, {done:.3g} seed-steps of "
                f"the paper's {full:.3g} ({_percent(100 * done / full)}), {times}")  # fmt: skip

    def figure_verdict(self, name) -> str:
        """The rubric on the paper's claim (``CLAIMS``): "reproduced" when our seeds satisfy it
        (a "more often" by Fisher's exact test) with every cell committed ("not settled" while
        some are missing), at the paper's budget where the claim has a part saying a model
        fails (below it, failing settles nothing); short of the claim, "not settled at F of the
        budget" below the paper's budget and "not reproduced" at it; "measured" where the
        paper states no claim to check. F is the smallest fraction of the cells the claim
        reads (e.g. the hidden-size claim: hidden size 10 only). The counts (and test) the
        verdict rests on follow it."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        if name not in CLAIMS:
            self.fraction(name)  # no committed cell: Missing
            return "measured (the paper's text states no claim of this figure to check)"
        reads = []

        def seeds(model, i):
            i = i % len(spec.axis.points)
            reads.append((model, i))
            s = self._point_summary(spec, f"mul-{model}", i)
            return int(s["solved"]), int(s["num_seeds"])

        def have(model):
            return any(c.variant.key == model for _, c, _ in self._committed(spec))

        _claim, check, failure = CLAIMS[name]
        held, evidence = check(seeds, have)
        # the budget the verdict speaks of is that of the cells the claim read
        fraction = self.fraction(name, reads)
        at = (
            ""
            if fraction >= 1
            else f" at {self._budget(fraction)} of the paper's seed-steps in its least-run cell"
        )
        done, total = len(self._committed(spec)), len(specs.cells(spec))
        part = f" ({done} of {total} cells committed)" if done < total else ""
        if held and done < total:  # the rubric: a missing part of the comparison settles nothing
            return f"not settled{at}: the claim holds on the committed cells{part}; {evidence}"
        if held and failure and fraction < 1:  # the rubric: failing with less settles nothing
            return (f"not settled{at}: the claim holds on these cells, but {failure} is a "
                    f"failure, which only the paper's budget can show; {evidence}")  # fmt: skip
        if held:
            return f"reproduced{at}: {evidence}"
        word = f"not settled{at}" if fraction < 1 else "not reproduced"
        return f"{word}{part}: {evidence}"

    def figure_solved(self, name) -> str:
        """Seeds solved over every committed point of figure ``name``: "3 of 360 seeds"."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        solved = seeds = 0
        for path, _cell, _ in self._committed(spec):
            s = self.r.summary(path)
            for part in s.get("settings") or [s]:
                solved, seeds = solved + int(part["solved"]), seeds + int(part["num_seeds"])
        return f"{solved} of {seeds} seeds"

    def _model_points(self, spec, model, op):
        """``[(point index, summary, seeds.csv rows)]`` of ``op``-``model``'s committed points
        in figure ``spec``; ``Missing`` where none is."""
        out = []
        for i in range(len(spec.axis.points)):
            try:
                summary, _cell, seeds = self._point(spec, f"{op}-{model}", i)
            except self.Missing:
                continue
            out.append((i, summary, results_lib.read_csv(os.path.join(seeds, "seeds.csv"))))
        if not out:
            raise self.Missing(f"{spec.name}/{op}-{model}")
        return out

    @staticmethod
    def _where(spec, i) -> str:
        """Point ``i`` of figure ``spec`` in a sentence: "on U[0,1]" (its interpolation range),
        "at overlap ratio 0.5"."""
        label = _point_label(spec.axis, spec.axis.points[i])
        if spec.axis.name == "range":
            return "on " + label.split(" → ")[0]
        return f"at {spec.axis.label} {label}"

    def figure_diverged(self, name, model, op="mul", detail=True) -> str:
        """``op``-``model``'s runs in figure ``name`` that diverged (the rubric counts them as
        unsolved), per point with the step each diverged at: "4 of 35 runs, 3 on U[0,1] (at
        38,604, 44,801 and 355,793 steps) and 1 on U[10,20] (at 729 steps)"; "none of 35
        runs"; ``detail=False``: the count and the last step, "89 of 90 runs, all by step
        180"."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        points = self._model_points(spec, model, op)
        runs = sum(len(rows) for _, _, rows in points)
        total, parts, steps_all = 0, [], []
        for i, _summary, rows in points:
            steps = sorted(int(r.get("diverged_at") or -1) for r in rows
                           if int(r.get("diverged") or 0))  # fmt: skip
            if not steps:
                continue
            total, steps_all = total + len(steps), steps_all + steps
            at = and_list([f"{t:,}" for t in steps]) + " steps" if min(steps) >= 0 else (
                "steps not all recorded")  # fmt: skip
            parts.append(f"{len(steps)} {self._where(spec, i)} (at {at})")
        if not total:
            return f"none of {runs} runs"
        if not detail:
            by = (f"all by step {max(steps_all):,}" if min(steps_all) >= 0
                  else "steps not all recorded")  # fmt: skip
            return f"{total} of {runs} runs, {by}"
        return f"{total} of {runs} runs, {and_list(parts)}"

    def figure_errors(self, name, model, point=None, op="mul", unsolved=False) -> str:
        """Point ``point`` (its index, its label "0.5", or the start of its label
        "U[0.1,0.2]"; None: every committed point) of ``op``-``model`` in figure ``name``: its
        seeds' interpolation and extrapolation errors (MSE) at their best validation step,
        and how many interpolation errors are below the point's success threshold, over the
        seeds that did not diverge (``unsolved``: and did not solve): "its 5 seeds:
        interpolation errors 1.7·10⁻⁵ to 6.4·10⁻⁴ (5 below the success threshold 9.2·10⁻⁴),
        extrapolation errors 5.8·10⁵ to 5.9·10⁵"."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        if point is None:
            points = [(s, rows) for _, s, rows in self._model_points(spec, model, op)]
        else:
            i = self._point_index(spec, point, "figure_errors")
            summary, _cell, seeds = self._point(spec, f"{op}-{model}", i)  # Missing: not committed
            points = [(summary, results_lib.read_csv(os.path.join(seeds, "seeds.csv")))]
        rows = [(float(s["threshold"]), r) for s, part in points for r in part
                if not unsolved or not int(r["solved"])]  # fmt: skip
        what = "seed" if point is not None else "run"
        what_all = f"{what}s" + (" that did not solve" if unsolved else "")
        kept = [(t, r) for t, r in rows if not int(r.get("diverged") or 0)]
        if not kept:
            return f"all {len(rows)} of its {what_all} diverged" if rows else f"no {what_all}"

        def span(key):  # seeds.csv writes a NaN error as an empty field
            values = sorted(v for v in (_number(r[key]) for _, r in kept) if math.isfinite(v))
            if not values:
                return "not finite"
            lo, hi = _sci(values[0]), _sci(values[-1])
            return lo if lo == hi else f"{lo} to {hi}"

        thresholds = sorted({t for t, _ in kept})
        below = sum(_number(r["interpolation_mse"]) < t for t, r in kept)
        against = (f"the success threshold {_sci(thresholds[0])}" if len(thresholds) == 1
                   else "their points' success thresholds")  # fmt: skip
        who = f"its {len(kept)} {what}{'s' if len(kept) > 1 else ''}"
        if unsolved:
            who += " that did not solve"
        if len(kept) < len(rows):
            who += f"{' or' if unsolved else ' that did not'} diverge (of {len(rows)})"
        return (
            f"{who}: interpolation errors {span('interpolation_mse')} ({below} below "
            f"{against}), extrapolation errors {span('extrapolation_mse')}"
        )

    @staticmethod
    def _point_index(spec, point, what: str) -> int:
        """Point ``point`` of figure ``spec`` as an index: an index, a label ("0.5"), or the
        start of a single label ("U[0.1,0.2]"); else ``ValueError`` naming ``what``."""
        labels = [_point_label(spec.axis, v) for v in spec.axis.points]
        if isinstance(point, str):
            if point in labels:
                return labels.index(point)
            matches = [i for i, label in enumerate(labels) if label.startswith(point)]
            if len(matches) != 1:
                raise ValueError(f"{what} point: {point!r} names no single point of "
                                 f"{spec.name} ({'; '.join(labels)})")  # fmt: skip
            return matches[0]
        if not isinstance(point, int) or not 0 <= point < len(labels):
            raise ValueError(f"{what} point: {point!r} is not an index of {spec.name}'s "
                             f"{len(labels)} points")  # fmt: skip
        return point

    def figure_span(self, name, model, what="solved", points=None, op="mul") -> str:
        """What ``op``-``model``'s points in figure ``name`` show, over ``points`` (indices or
        labels as ``figure_errors``'; default every committed point): ``what="solved"`` or
        ``"diverged"``, the seeds per point, "10 of 10" where every point has as many, else
        "1 to 3 of 10"; ``what="solved_at_median"``, the points' median solved-at steps,
        "1.9·10⁶ to 2.7·10⁶" (a point where no seed solved has none: "no seed solved" where
        none has)."""
        from nalu_jax.reproduce import specs

        if what not in ("solved", "diverged", "solved_at_median"):
            raise ValueError(f"figure_span what: {what!r} is not solved, diverged or "
                             "solved_at_median")  # fmt: skip
        spec = specs.table(name)
        wanted = (None if points is None
                  else {self._point_index(spec, p, "figure_span") for p in points})  # fmt: skip
        picked = [(s, rows) for i, s, rows in self._model_points(spec, model, op)
                  if wanted is None or i in wanted]  # fmt: skip
        if wanted is not None and len(picked) < len(wanted):
            raise self.Missing(f"{name}/{op}-{model}: a point of {sorted(wanted)}")
        if what == "solved_at_median":
            values = sorted(float(s["solved_at_median"]) for s, _ in picked
                            if s.get("solved_at_median") is not None)  # fmt: skip
            if not values:
                return "no seed solved"
            lo, hi = _sci(values[0]), _sci(values[-1])
            return lo if lo == hi else f"{lo} to {hi}"
        counts = [
            (int(s["solved"]) if what == "solved"
             else sum(int(r.get("diverged") or 0) for r in rows), len(rows))
            for s, rows in picked
        ]  # fmt: skip
        sizes = {n for _, n in counts}
        if len(sizes) > 1:
            return and_list([f"{k}/{n}" for k, n in counts])
        lo, hi = min(k for k, _ in counts), max(k for k, _ in counts)
        return f"{lo} of {sizes.pop()}" if lo == hi else f"{lo} to {hi} of {sizes.pop()}"

    def figure_solvers(self, name, model, op="mul") -> str:
        """``op``-``model``'s solved seeds in figure ``name`` per point, with the step each
        solved at: "seed 7 at subset ratio 0.05 (at 1,548,000 steps) and seed 7 at subset
        ratio 0.1 (at 1,804,000 steps)"; "none of 40 runs"."""
        from nalu_jax.reproduce import specs

        spec = specs.table(name)
        points = self._model_points(spec, model, op)
        parts = []
        for i, _summary, rows in points:
            solved = [r for r in rows if int(r["solved"])]
            if not solved:
                continue
            seeds = and_list([r["seed"] for r in solved])
            at = and_list([f"{int(float(r['solved_at'])):,}" for r in solved])
            parts.append(f"seed{'s' if len(solved) > 1 else ''} {seeds} {self._where(spec, i)} "
                         f"(at {at} steps)")  # fmt: skip
        if not parts:
            return f"none of {sum(len(rows) for _, _, rows in points)} runs"
        return and_list(parts)

    def _seed_rows(self, where: str) -> dict:
        """``{seed: row}`` of ``where``: a results cell ("iclr2020-arithmetic/mul-nmu") or a
        point of a figure's cell ("iclr2020-subset/mul-nmu@0.25", a label as
        ``figure_errors``')."""
        from nalu_jax.reproduce import specs

        if "@" in where:
            path, point = where.split("@", 1)
            name, key = path.split("/", 1)
            spec = specs.table(name)
            _summary, _cell, seeds = self._point(
                spec, key, self._point_index(spec, point, "seeds_against")
            )
            rows = results_lib.read_csv(os.path.join(seeds, "seeds.csv"))
        else:
            rows = self.r._rows_of(where)
        return {int(r["seed"]): r for r in rows}

    def seeds_against(self, a, b, names=("the first", "the second")) -> str:
        """Two runs' per-seed rows (``a``, ``b``: a results cell or a figure's point, as
        ``_seed_rows``) on the seeds both hold: "identical per-seed rows (seeds 0–9)"; else
        whether the same seeds solve, the seeds solving in one only (``names``: how the text
        calls ``a`` and ``b``) and how far apart the common solvers' solved-at steps are:
        "the same 10 of 10 seeds solve (seeds 0–9), solved-at within 0.4%"."""
        rows_a, rows_b = self._seed_rows(a), self._seed_rows(b)
        common = sorted(set(rows_a) & set(rows_b))
        if not common:
            raise ValueError(f"seeds_against: {a} and {b} hold no seed in common")
        if len(common) == 1:
            seeds = f"seed {common[0]}"
        elif common == list(range(common[0], common[-1] + 1)):
            seeds = f"seeds {common[0]}–{common[-1]}"
        else:
            seeds = "seeds " + and_list([str(k) for k in common])
        if all(rows_a[k] == rows_b[k] for k in common):
            return f"identical per-seed rows ({seeds})"
        solved_a = {k for k in common if int(rows_a[k]["solved"])}
        solved_b = {k for k in common if int(rows_b[k]["solved"])}
        both = sorted(solved_a & solved_b)
        apart = [abs(float(rows_a[k]["solved_at"]) - float(rows_b[k]["solved_at"]))
                 / float(rows_b[k]["solved_at"]) for k in both]  # fmt: skip
        steps = ("at the same steps" if not apart or max(apart) == 0
                 else f"solved-at within {_percent(100 * max(apart))}")  # fmt: skip
        if solved_a == solved_b:
            if not both:
                return f"no seed solves in either ({seeds})"
            return f"the same {len(both)} of {len(common)} seeds solve ({seeds}), {steps}"

        def only(ks, rows, name):
            at = and_list([f"{int(float(rows[k]['solved_at'])):,}" for k in ks])
            which = and_list([str(k) for k in ks])
            return f"seed{'s' if len(ks) > 1 else ''} {which} only in {name} (at {at} steps)"

        parts = [only(sorted(ks), rows, name)
                 for ks, rows, name in ((solved_a - solved_b, rows_a, names[0]),
                                        (solved_b - solved_a, rows_b, names[1])) if ks]  # fmt: skip
        counts = (f"{len(solved_a)} of {len(common)} solve in each" if len(solved_a) == len(solved_b)
                  else f"{len(solved_a)} and {len(solved_b)} of {len(common)} solve")  # fmt: skip
        tail = f"; the seeds solving in both {steps}" if both else ""
        return f"{counts} ({seeds}), {and_list(parts)}{tail}"

    def wall_minutes(self, *cells) -> str:
        """Each results cell's wall time over its batches, in whole minutes: "33, 35, 30 and
        33 min"."""
        minutes = [f"{sum(b['wall_time_s'] for b in self.r.batches(c)) / 60:.0f}" for c in cells]
        return f"{and_list(minutes)} min"

    def cell_minutes(self, table, *cells, batch=0, seconds=False) -> str:
        """The wall time of batch ``batch`` (an index into each cell's provenance, 0 the first)
        of ``table``'s results ``cells`` ("op-model"), in whole minutes, as a span over the
        cells: "5–7 min", or "15 min" where every cell's rounds alike; ``seconds``: in whole
        seconds, "22–41 s"."""
        if not cells:
            raise ValueError("cell_minutes cells: name at least one op-model cell")
        minutes = []
        for c in cells:
            batches = self.r.batches(f"{table}/{c}")
            if not -len(batches) <= batch < len(batches):
                raise self.Missing(f"{table}/{c}: batch {batch} (it has {len(batches)})")
            minutes.append(batches[batch]["wall_time_s"] / (1 if seconds else 60))
        return _span(minutes, "s" if seconds else "min")

    def fastest_minutes(self, table, *cells, seeds=20) -> str:
        """The wall time of ``seeds`` seeds in each of ``table``'s results ``cells`` at its
        fastest committed batch (a batch of other size scaled to ``seeds`` seeds), as a span
        over the cells in whole minutes: "6–33 min". The fastest batch is the nearest to what
        the cell costs alone on its machine; slower ones shared it with other work."""
        if not cells:
            raise ValueError("fastest_minutes cells: name at least one op-model cell")
        if seeds <= 0:
            raise ValueError(f"fastest_minutes seeds: a positive count, not {seeds}")
        minutes = []
        for c in cells:
            batches = self.r.batches(f"{table}/{c}")
            if not batches:
                raise self.Missing(f"{table}/{c}: no batch")
            minutes.append(min(b["wall_time_s"] * seeds / b["num_seeds"] for b in batches) / 60)
        return _span(minutes, "min")

    def batch_rates(self, cell, minutes=False) -> str:
        """Each committed batch of results cell ``cell``: its seeds and the seed-steps per
        second it trained at, "seeds 0–4: 31,750 seed-steps/s; seeds 5–9: 28,700";
        ``minutes``: its wall time first, "seeds 0–4: 92 min, 31,750 seed-steps/s; …"."""
        parts = []
        for n, b in enumerate(self.r.batches(cell)):
            seeds = f"seeds {results_lib.seed_span(b)}"
            rate = b.get("seed_steps_per_s")
            unit = " seed-steps/s" if n == 0 else ""
            wall = f"{b['wall_time_s'] / 60:.0f} min, " if minutes else ""
            if b.get("stopped_at_step") is not None:
                speed = f"every seed diverged by step {b['stopped_at_step']:,}, not trained after"
            else:
                speed = f"{rate:,.0f}{unit}" if rate else "rate not recorded"
            parts.append(f"{seeds}: {wall}{speed}")
        return "; ".join(parts)

    def figure_claim(self, name) -> str:
        return CLAIMS[name][0] if name in CLAIMS else "none stated in the text"


def _span(values, unit) -> str:
    """``values`` as a span in whole ``unit``s, "5–7 min"; one value where all round alike."""
    lo, hi = f"{min(values):.0f}", f"{max(values):.0f}"
    return f"{lo} {unit}" if lo == hi else f"{lo}–{hi} {unit}"


def functions(renderer) -> dict:
    f = FigureFunctions(renderer)
    return {n: getattr(f, n) for n in ("figure_table", "figure_budget", "figure_verdict",
                                       "figure_claim", "figure_solved", "figure_best_steps",
                                       "figure_diverged", "figure_errors", "figure_span",
                                       "figure_solvers", "seeds_against", "wall_minutes",
                                       "cell_minutes", "fastest_minutes", "cell_best_steps",
                                       "batch_rates")}  # fmt: skip
