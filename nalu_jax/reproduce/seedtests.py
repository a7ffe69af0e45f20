"""Per-seed tests of a static-arithmetic cell against the authors' own runs.

The ICLR 2020 authors publish every seed of their static task (``published/iclr2020-static-
seeds.csv``, from stable-nalu's ``paper/results/sft-last.csv``), so a cell of ours need not be
judged by interval overlap alone: two populations of seeds are compared directly.

- success: Fisher's exact test on the 2×2 table (solved, unsolved) × (ours, theirs);
- solved-at and sparsity error: the Mann–Whitney U test (two-sided) on the solved seeds;
- all at ``LEVEL`` (5%, two-sided, each test on its own: no correction across cells).

Power is reported beside each test, so that "no difference found" is never read as "no
difference": the smallest success-rate difference Fisher's test detects with 80% power at the two
seed counts (normal approximation on the arcsine scale, Cohen's h), and whether the U test can
reach the level at all with so few solved seeds (its smallest attainable two-sided p-value, at
complete separation, is 2 / C(n₁ + n₂, n₁)).
"""

from __future__ import annotations

import csv
import functools
import math
from importlib import resources

import numpy as np

LEVEL = 0.05
POWER = 0.8
SEEDS_FILE = "iclr2020-static-seeds.csv"


def published_seeds(name: str = SEEDS_FILE) -> dict:
    """``{(op, model): {"seed": int[n], "solved": bool[n], "solved_at": float[n],
    "sparsity_error": float[n]}}`` from a published per-seed file (``#`` lines are its
    citation; empty fields are NaN), and ``"best_step": float[n]`` where the file has the
    column. The file is read once per process; the arrays are read-only and shared between
    calls, the dictionaries are each call's own."""
    return {key: dict(cell) for key, cell in _published_seeds(name).items()}


@functools.cache
def _published_seeds(name: str) -> dict:
    text = resources.files("nalu_jax.reproduce").joinpath("published", name).read_text()
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    rows: dict = {}
    for r in csv.DictReader(lines):
        rows.setdefault((r["op"], r["model"]), []).append(r)

    def num(v):
        return float(v) if v != "" else math.nan

    def frozen(values):
        a = np.array(values)
        a.setflags(write=False)
        return a

    return {
        key: {
            "seed": frozen([int(r["seed"]) for r in rs]),
            "solved": frozen([r["solved"] == "1" for r in rs]),
            "solved_at": frozen([num(r["solved_at"]) for r in rs]),
            "sparsity_error": frozen([num(r["sparsity_error"]) for r in rs]),
            **(
                {"best_step": frozen([num(r["best_step"]) for r in rs])}
                if "best_step" in rs[0]
                else {}
            ),
        }  # fmt: skip
        for key, rs in rows.items()
    }


def min_mwu_p(n1: int, n2: int) -> float:
    """The smallest two-sided p-value the exact U test can give with ``n1`` and ``n2`` values
    (complete separation): 2 / C(n1 + n2, n1), at most 1."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def detectable_difference(p0: float, n1: int, n2: int, power: float = POWER) -> float:
    """The smallest |p − p0| that a two-sided test at ``LEVEL`` detects with ``power`` between
    ``n1`` and ``n2`` seeds (Cohen's h: |2·asin√p − 2·asin√p0| ≥ (z_{1−α/2} + z_power)·
    √(1/n1 + 1/n2)); NaN when neither direction reaches a rate in [0, 1], or ``p0`` is not a
    rate or a seed count is not positive."""
    from scipy import stats

    if not (math.isfinite(p0) and 0 <= p0 <= 1 and n1 > 0 and n2 > 0):
        return math.nan
    h = (stats.norm.ppf(1 - LEVEL / 2) + stats.norm.ppf(power)) * math.sqrt(1 / n1 + 1 / n2)
    a0 = math.asin(math.sqrt(p0))
    found = [abs(math.sin(a) ** 2 - p0) for a in (a0 + h / 2, a0 - h / 2) if 0 <= a <= math.pi / 2]
    return min(found) if found else math.nan


def compare(ours: dict, theirs: dict) -> dict:
    """The three tests between two populations of seeds (each as :func:`published_seeds`
    gives one; ours from ``metrics.judgement_from_rows``). ``*_p`` is NaN where a test is
    undefined (no solved seed on a side); ``*_testable`` is False where it cannot reach
    ``LEVEL`` whatever the data."""
    from scipy import stats

    n1, n2 = len(ours["solved"]), len(theirs["solved"])
    k1, k2 = int(np.sum(ours["solved"])), int(np.sum(theirs["solved"]))
    out = {"n_ours": n1, "n_theirs": n2, "solved_ours": k1, "solved_theirs": k2}
    out["success_p"] = success_p((k1, n1), (k2, n2))
    out["success_detectable"] = detectable_difference(k2 / n2, n1, n2)
    for name in ("solved_at", "sparsity_error"):
        a = ours[name][ours["solved"]]
        b = theirs[name][theirs["solved"]]
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        out[f"{name}_n"] = (len(a), len(b))
        out[f"{name}_testable"] = min_mwu_p(len(a), len(b)) < LEVEL
        if len(a) and len(b):
            p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
            out[f"{name}_p"] = float(p)
        else:
            out[f"{name}_p"] = math.nan
    return out


def success_p(a: tuple[int, int], b: tuple[int, int], alternative: str = "two-sided") -> float:
    """Fisher's exact test's p of equal success rates between ``a`` and ``b``, each (solved,
    seeds); ``alternative`` as scipy's ("greater": ``a`` succeeds more often)."""
    from scipy import stats

    (k1, n1), (k2, n2) = a, b
    table = [[k1, n1 - k1], [k2, n2 - k2]]
    return float(stats.fisher_exact(table, alternative=alternative).pvalue)


def more_often(a: tuple[int, int], b: tuple[int, int]) -> tuple[bool, float]:
    """Whether ``a`` = (solved, seeds) succeeds more often than ``b``: Fisher's exact test,
    one-sided, rejects equal rates at ``LEVEL``. Returns (held, p-value)."""
    p = success_p(a, b, alternative="greater")
    return p < LEVEL, p


def differs(c: dict, name: str) -> bool:
    p = c[f"{name}_p"]
    return math.isfinite(p) and p < LEVEL


def fraction_words(fraction: float) -> str:
    """A budget fraction as a reader says it: "1/2500", "1/5", or "30%" (no unit fraction)."""
    inv = 1 / fraction
    return f"1/{inv:.0f}" if abs(inv - round(inv)) < 0.05 else f"{100 * fraction:.2g}%"


def no_seed_solved(solved: int, fraction: float) -> str | None:
    """The rubric's verdict on a cell in which no seed of ours solved in fewer iterations than
    the paper's (``fraction`` < 1): "not settled", whatever the paper's rate, since a failure
    settles only at the paper's budget; None for any other cell."""
    if fraction < 1 and solved == 0:
        return f"not settled at {fraction_words(fraction)} of the budget (no seed solved)"
    return None


def verdict(c: dict, fraction: float = 1.0) -> str:
    """The rubric by the tests: at a smaller budget than the paper's, no seed solved → "not
    settled" (a failure settles only at the paper's budget); success differs → "not
    reproduced" ("not settled" when ours is lower at a smaller budget); else solved-at or
    sparsity error differs → "partly" (at a smaller budget "not settled": a run cut short is
    solved later and regularised less); else "reproduced". A metric the U test cannot decide
    at these counts is named."""
    names = {"solved_at": "solved-at", "sparsity_error": "sparsity error"}
    at = "" if fraction >= 1 else f" at {fraction_words(fraction)} of the budget"
    unsettled = no_seed_solved(c["solved_ours"], fraction)
    if unsettled is not None:
        return unsettled
    if differs(c, "success"):
        lower = c["solved_ours"] / c["n_ours"] < c["solved_theirs"] / c["n_theirs"]
        if fraction < 1 and lower:
            return f"not settled{at}"
        word = "not reproduced"
    else:
        apart = [names[n] for n in names if differs(c, n)]
        verb = "differs" if len(apart) == 1 else "differ"
        if apart and fraction < 1:
            return f"not settled{at}: {' and '.join(apart)} {verb}"
        word = f"partly: {' and '.join(apart)} {verb}" if apart else "reproduced"
    blind = [
        names[n]
        for n in names
        if not c[f"{n}_testable"] and min(c[f"{n}_n"]) > 0 and not differs(c, n)
    ]
    if blind:
        n1, n2 = c["solved_at_n"]
        word += f" ({' and '.join(blind)} untestable: {n1} and {n2} solved seeds)"
    return word + at
