"""Template functions for the NALU paper's experiments and the Primer's redundant-input runs.

Kept apart from ``render.py``'s published-table machinery: each function takes the
``render.Renderer`` (``r``) whose results root it reads (a cell it lacks raises the renderer's
"no committed data" exception), and ``functions(r, missing)`` binds them for the template
namespace.

  ``sm_table(table, ops=None)``                    single-module success per range of any
                                                   single-module table (``primer_table``'s
                                                   layout, with the cell's inputs and steps)
  ``budget_line(paper_steps, *cells)``             seeds × steps, seed-steps, fraction of the
                                                   paper's budget, wall time and machine per cell
  ``length_claims(group, extrapolate, fail, length, paper_steps)``
                                                   the rubric's verdict on "these models
                                                   extrapolate to ``length``, those do not"
"""

from __future__ import annotations

import os

from nalu_jax.reproduce import results as results_lib
from nalu_jax.reproduce.seedtests import fraction_words

#: sequential MNIST: stable-nalu trains 10⁵ steps (the ICLR 2020 appendix's runs; the NALU
#: paper, §4.2, gives no budget; docs/protocols.md)
SEQUENTIAL_MNIST_PAPER_STEPS = 100_000
#: the ICLR 2020 product's budget: 1,000 epochs (stable-nalu lfs_batch_jobs/
#: sequential_mnist_prod_long.sh, ``--max-epochs 1000``) of MNIST's 60,000 training images in
#: sequences of 2, batches of 64: about 4.7·10⁵ steps
SEQUENTIAL_MNIST_PRODUCT_PAPER_STEPS = 470_000


def _fraction(fraction: float) -> str:
    return "the full budget" if fraction >= 1 else fraction_words(fraction)


def _config(r, cell) -> dict:
    return results_lib.read_json(os.path.join(r._dir(cell), "config.json"))


def sm_table(r, missing, table, ops=None) -> str:
    """Seeds solved per range pair for each committed cell of single-module table ``table``:
    one row per cell, with its input size and iteration budget (they differ per variant)."""
    from nalu_jax.reproduce import specs
    from nalu_jax.reproduce.specs import OP_LABELS

    spec = specs.table(table)
    ranges = range(1, 10)
    head = ["op", "model", "inputs", "steps", *(f"range {k}" for k in ranges)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    found = False
    for cell in specs.cells(spec, None, list(ops) if ops else None):
        label = f"| {OP_LABELS[cell.op]} | {cell.variant.label} |"
        try:
            s = r.summary(f"{table}/{cell.key}")
            config = _config(r, f"{table}/{cell.key}")
        except missing:
            lines.append(label + " — | — | " + " | ".join(["—"] * 9) + " |")
            continue
        found = True
        got = {p["setting_values"]["range_index"]: p for p in s["settings"]}
        counts = (f"{got[k]['solved']}/{got[k]['num_seeds']}" if k in got else "—" for k in ranges)
        lines.append(
            f"{label} {config['task']['input_size']} | {int(config['num_steps']):,} | "
            + " | ".join(counts)
            + " |"
        )
    if not found:
        raise missing(table)
    return "\n".join(lines)


def budget_line(r, paper_steps, *cells, whose: str = "the paper's", missing=()) -> str:
    """Per cell: seeds × steps, seed-steps, the fraction of the paper's ``paper_steps`` (per
    seed; the paper's seed count is not given, so seeds are not part of the fraction), wall
    time summed over batches and the machine. ``whose``: whose budget ``paper_steps`` is
    (e.g. "stable-nalu's", where the paper gives none). A cell without committed data (the
    renderer's ``missing`` exception) says so; when none has any, the exception is raised."""
    parts, absent = [], []
    for c in cells:
        try:
            batches = r.batches(c)
        except missing as e:
            absent.append(e)
            parts.append(f"`{c}`: no committed data")
            continue
        seeds = sum(int(b["num_seeds"]) for b in batches)
        steps = int(batches[-1]["num_steps"])
        wall = sum(float(b["wall_time_s"]) for b in batches)
        where = results_lib.describe_machine(batches[-1]["machine"])
        parts.append(
            f"`{c}`: {seeds} seeds × {steps:,} steps = {seeds * steps:,} seed-steps, "
            f"{_fraction(steps / paper_steps)} of {whose} steps, "
            f"{wall / 60:.1f} min on {where}"
        )
    if len(absent) == len(cells) and absent:
        raise absent[0]
    return "; ".join(parts)


def _solved_at(r, cell, length):
    s = r.summary(cell)
    for g in s.get("per_length", []):
        if int(g["length"]) == int(length):
            return int(g["solved"]), int(s["num_seeds"]), int(s["num_steps"])
    raise ValueError(f"{cell} has no test length {length}")


def length_claims(r, group, extrapolate, fail, length, paper_steps, labels=None,
                  whose: str = "the paper's") -> str:  # fmt: skip
    """The rubric on a claim "each of ``extrapolate`` extrapolates to ``length``; each of
    ``fail`` does not": a model extrapolates when at least one seed is solved there (its
    success's Wilson interval excludes 0), fails when none is. A part that does not hold at a
    fraction of the paper's budget is "not settled at this budget"; the verdict is
    "reproduced" when every part holds, "not settled" when none holds and the budget is short,
    "partly" (naming the parts) otherwise. ``whose``: as for ``budget_line``. A model with a
    "/" is a cell of another group, named from the root (e.g. a variant run apart)."""
    labels = dict(labels or {})
    held, short, wrong = [], [], []
    fraction = 1.0
    for model, wants in [(m, True) for m in extrapolate] + [(m, False) for m in fail]:
        solved, seeds, steps = _solved_at(r, model if "/" in model else f"{group}/{model}", length)
        fraction = min(fraction, steps / paper_steps)
        name = labels.get(model, model)
        part = f"{name} {'extrapolates' if wants else 'fails'} ({solved}/{seeds} at {length:,})"
        if (solved > 0) == wants:
            held.append(part)
        elif wants and steps < paper_steps:
            short.append(part.replace("extrapolates", "does not extrapolate yet"))
        else:
            wrong.append(part.replace("extrapolates", "does not extrapolate").replace(
                "fails", "does not fail"))  # fmt: skip
    at = "" if fraction >= 1 else f" at {_fraction(fraction)} of {whose} steps"
    if not short and not wrong:
        return f"**reproduced{at}**: " + "; ".join(held)
    if not held and not wrong:
        return f"**not settled at this budget** ({_fraction(fraction)}): " + "; ".join(short)
    if not held and not short and fraction >= 1:
        return "**not reproduced**: " + "; ".join(wrong)
    parts = [f"holds: {'; '.join(held)}"] if held else []
    parts += [f"not settled at this budget: {'; '.join(short)}"] if short else []
    parts += [f"does not hold{at}: {'; '.join(wrong)}"] if wrong else []
    return "**partly** — " + " — ".join(parts)


def scaled_table(r, missing, no_data, group, ops, models) -> str:
    """The body rows of a static table of the NALU paper's scaled error: per op (``(key,
    symbol)``) and model (``(key, label)``) the cell ``group/OP-MODEL``'s seeds × steps, our
    success, and the scaled error on the test and validation sets; a cell without committed
    data says so in its row (``no_data``, the renderer's words), and the table is missing when
    none has any."""
    lines, found = [], False
    for op, sym in ops:
        for model, label in models:
            cell = f"{group}/{op}-{model}"
            try:
                fields = [
                    f"{r.stat(cell, 'num_seeds')} × {r.stat(cell, 'num_steps')}",
                    r.successes(group, [f"{op}-{model}"], [""]),
                    r.scaled_error(cell),
                    r.scaled_error(cell, "interpolation"),
                ]
                found = True
            except missing:
                fields = [f"{no_data} (`results/{cell}`)"] + ["—"] * 3
            lines.append(f"| {sym} | {label} | " + " | ".join(fields) + " |")
    if not found:
        raise missing(group)
    return "\n".join(lines)


def reference_misread(r, cell) -> str:
    """ "3 of 10": the seeds of a sequential-MNIST cell's reference population whose CNN reads
    no digit right (image accuracy 0 in ``CELL/reference/seeds.csv``; e.g. it learnt −digit,
    which flips the product's sign at every odd length)."""
    rows = results_lib.read_csv(os.path.join(r._dir(cell), "reference", "seeds.csv"))
    return f"{sum(float(x['image_accuracy']) == 0 for x in rows)} of {len(rows)}"


def functions(r, missing, no_data) -> dict:
    """This module's template functions bound to renderer ``r``; ``missing`` is the exception
    that renders as ``no_data`` (``render.Missing`` and ``render.NO_DATA``, passed in: render
    imports us)."""
    return {
        "sm_table": lambda *a, **k: sm_table(r, missing, *a, **k),
        "budget_line": lambda *a, **k: budget_line(r, *a, missing=missing, **k),
        "length_claims": lambda *a, **k: length_claims(r, *a, **k),
        "reference_misread": lambda cell: reference_misread(r, cell),
        "scaled_table": lambda *a: scaled_table(r, missing, no_data, *a),
        "SEQUENTIAL_MNIST_PAPER_STEPS": SEQUENTIAL_MNIST_PAPER_STEPS,
        "SEQUENTIAL_MNIST_PRODUCT_PAPER_STEPS": SEQUENTIAL_MNIST_PRODUCT_PAPER_STEPS,
    }
