"""The rubric's computed verdicts (``nalu_jax.reproduce.verdicts``): "not settled" from the
budget and the contrast cells, the identity rule, a whole table's verdict, the scaled error and
a cross-commit check as rendered, and a cell's tests at each batch's seed count."""

import csv
import json
import math
import re
from importlib import resources

import numpy as np
import pytest
from scipy import stats

from nalu_jax.reproduce import render, seedtests


def _cell(root, path, summary, files=None):
    d = root / path
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "provenance.json").write_text(json.dumps({"batches": []}))
    for name, text in (files or {}).items():
        (d / name).write_text(text)
    return d


def test_settled_names_what_is_missing(tmp_path):
    _cell(tmp_path, "g/a", {"num_steps": 4000})
    r = render.Renderer(str(tmp_path))
    assert r.settled("x.", "g/a") == "**not settled** (the paper gives no budget). x."
    assert r.settled("x.", "g/a", contrast=["g/b"]) == (
        "**not settled** (not committed: `results/g/b`). x."
    )
    assert r.settled("x.", "g/a", budget=100_000) == (
        "**not settled** (4% of the paper's budget). x."
    )
    assert r.settled("x.", "g/a", budget=4000, verdict="Reproduced") == "**Reproduced.** x."
    with pytest.raises(render.Missing):
        r.settled("x.", "g/missing")


def _identity(prelu_outside):
    act = lambda inside, outside: {"mae_inside": {"mean": inside, "interval": [0, 1]},  # noqa: E731
                                   "mae_outside": {"mean": outside, "interval": [0, 1]},
                                   "diverged": 0}  # fmt: skip
    return {"activations": {"tanh": act(0.003, 6.5), "prelu": act(0.001, prelu_outside),
                            "linear": act(0.001, 0.003), "nac_add": act(1e-5, 7e-5),
                            "nau": act(5e-4, 0.0025)}}  # fmt: skip


@pytest.mark.parametrize(
    "prelu, word, named",
    [(0.1, "**Reproduced.** 2 of 2", None), (0.027, "**Partly.** 1 of 2", "prelu (0.027, 9.0×)")],
)
def test_identity_rule_is_ten_times_the_linear_network(tmp_path, prelu, word, named):
    _cell(tmp_path, "identity/default", _identity(prelu))
    r = render.Renderer(str(tmp_path))
    v = r.identity_verdict("identity/default")
    assert v.startswith(word)
    assert (named in v) if named else ("within" not in v)
    assert r.identity_models("identity/default") == (
        "3 activations (2 non-linear and the linear network), NAC₊, NAU"
    )


def test_scaled_error_is_each_seed_against_its_random_network(tmp_path):
    seeds = "seed,extrapolation_mse,interpolation_mse\n0,1.0,0.5\n1,4.0,0.5\n2,,0.5\n"
    base = "seed,valid_mse,test_mse\n0,1.0,100.0\n1,1.0,10.0\n2,1.0,50.0\n"
    _cell(tmp_path, "rec/nau", {}, {"seeds.csv": seeds, "random_baseline.csv": base})
    r = render.Renderer(str(tmp_path))
    # 100·1/100 = 1, 100·4/10 = 40; seed 2 diverged (no MSE): worse than any, counted as ∞
    assert (
        r.scaled_error("rec/nau") == "40 [1, ∞] (1 of 3 seeds with no finite error, counted as ∞)"
    )
    assert r.scaled_error("rec/nau", "interpolation") == "50 [50, 50]"
    # seed 1's untrained network overflows (no finite error): its scaled error is undefined
    base = "seed,valid_mse,test_mse\n0,1.0,100.0\n1,1.0,inf\n2,1.0,nan\n"
    _cell(tmp_path, "rec/nmu", {}, {"seeds.csv": seeds, "random_baseline.csv": base})
    assert (
        r.scaled_error("rec/nmu")
        == "1 [1, 1] (2 seeds left out: no finite error of the untrained network)"
    )
    base = "seed,valid_mse,test_mse\n0,1.0,nan\n1,1.0,nan\n2,1.0,nan\n"
    _cell(tmp_path, "rec/nac", {}, {"seeds.csv": seeds, "random_baseline.csv": base})
    assert r.scaled_error("rec/nac") == "—"


def test_scaled_error_refuses_a_baseline_of_fewer_seeds_than_the_cell(tmp_path):
    # a cell extended to 3 seeds after its baseline was written for 2: the scaled error of
    # seeds 0 and 1 alone would pass for the cell's
    seeds = "seed,extrapolation_mse,interpolation_mse\n0,1.0,0.5\n1,4.0,0.5\n2,9.0,0.5\n"
    base = "seed,valid_mse,test_mse\n0,1.0,100.0\n1,1.0,10.0\n"
    _cell(tmp_path, "rec/nau", {}, {"seeds.csv": seeds, "random_baseline.csv": base})
    with pytest.raises(render.Missing, match="all 3 seeds of seeds.csv \\(it holds 2;"):
        render.Renderer(str(tmp_path)).scaled_error("rec/nau")


def test_cross_commit_check_is_rendered_from_the_cell(tmp_path):
    check = {"checks": [{"commits": ["3693ec5aaa", "5b96e1dbbb"], "seeds": 4,
                         "steps": 1_010_000, "compared": ["seeds.csv", "metrics.jsonl"],
                         "identical": True, "date": "2026-11-25T15:00:00Z"},
                        {"commits": ["6a4f142ccc", "a0dec3dddd"], "seeds": 2, "first_seed": 12,
                         "steps": 30_000, "compared": ["seeds.csv"], "identical": False,
                         "date": "2026-12-05T18:00:00Z"}]}  # fmt: skip
    _cell(tmp_path, "t/mul-nmu", {}, {"cross_commit.json": json.dumps(check)})
    assert render.Renderer(str(tmp_path)).cross_commit("t/mul-nmu") == (
        "3693ec5 and 5b96e1d: identical (seeds 0–3 × 1,010,000 steps; seeds.csv, "
        "metrics.jsonl; 2026-11-25); 6a4f142 and a0dec3d: DIFFERENT (seeds 12–13 × 30,000 "
        "steps; seeds.csv; 2026-12-05)"
    )


def test_a_tables_cross_commit_checks_are_listed_by_cell(tmp_path):
    check = {"checks": [{"commits": ["c92ad41aaa", "a0dec3dbbb"], "seeds": 4, "steps": 30_000,
                         "compared": ["seeds.csv"], "identical": True,
                         "date": "2026-12-05T18:00:00Z"}]}  # fmt: skip
    r = render.Renderer(str(tmp_path))
    _cell(tmp_path, "iclr2020-arithmetic/div-relu6", {})
    with pytest.raises(render.Missing, match="no cross_commit.json"):
        r.cross_commits("iclr2020-arithmetic")
    for key in ("root-relu", "div-relu"):
        _cell(tmp_path, f"iclr2020-arithmetic/{key}", {}, {"cross_commit.json": json.dumps(check)})
    one = "c92ad41 and a0dec3d: identical (seeds 0–3 × 30,000 steps; seeds.csv; 2026-12-05)"
    # in the table's order (÷ before √z), cells without a check left out
    assert r.cross_commits("iclr2020-arithmetic") == f"÷ ReLU: {one}; √z ReLU: {one}"
    assert r.cross_commits("iclr2020-arithmetic", ops=["root"]) == f"√z ReLU: {one}"


def test_experiments_not_covered_are_listed_with_what_is_missing(tmp_path):
    r = render.Renderer(str(tmp_path))
    rows = r.not_covered_rows().splitlines()
    assert [row.split(" | ")[0] for row in rows] == [
        "| Program evaluation (NALU §4.4)", "| MNIST parity (NALU §4.6)",
    ]  # fmt: skip
    assert all(row.endswith("not implemented: its protocol (data, model sizes, budget) is not "
                            "in docs/protocols.md |") for row in rows)  # fmt: skip
    (tmp_path / "mnist-parity").mkdir()
    rows = render.Renderer(str(tmp_path)).not_covered_rows().splitlines()
    assert rows[1].endswith(
        "results committed (`results/mnist-parity`); not judged in this table |"
    )


def test_repeated_looks_reads_the_tests_at_each_batchs_seed_count(tmp_path):
    with open("results/iclr2020-arithmetic/sub-nalu/seeds.csv") as f:
        lines = f.read().splitlines()
    d = _cell(tmp_path, "t/sub-nalu", {}, {"seeds.csv": "\n".join(lines[:21]) + "\n"})
    batches = [{"first_seed": 0, "num_seeds": 10}, {"first_seed": 10, "num_seeds": 10},
               {"first_seed": 10, "num_seeds": 10}]  # fmt: skip
    (d / "provenance.json").write_text(json.dumps({"batches": batches}))
    theirs = seedtests.published_seeds()[("sub", "nalu")]
    b = theirs["solved_at"][theirs["solved"]]
    b = b[np.isfinite(b)]
    expected = []
    for n in (10, 20):  # each batch's end once, in order; solved_at is column 5
        rows = [line.split(",") for line in lines[1 : n + 1]]
        a = [float(r[5]) for r in rows if r[1] == "1"]
        p = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        expected.append((f"{p:.2g}", str(n), f"{np.median(a):,.0f}"))
    text = render.Renderer(str(tmp_path)).repeated_looks("t", "sub-nalu")
    look = r"(\S+) at (\d+) seeds \([^;]+; median ([\d,]+)\)"
    assert re.fullmatch(f"{look}(; {look})*; the authors' median {np.median(b):,.0f}", text)
    assert re.findall(look, text) == expected
    assert "no committed data" in render.Renderer(str(tmp_path)).repeated_looks("t", "mul-nmu")


def test_published_solved_at_means_are_set_against_the_authors_seeds(tmp_path):
    def rows(name):
        text = resources.files("nalu_jax.reproduce").joinpath("published", name).read_text()
        return list(csv.DictReader(ln for ln in text.splitlines() if ln and ln[0] != "#"))

    steps = {}  # the authors' solved seeds' steps per cell, read apart from seedtests
    for r in rows("iclr2020-static-seeds.csv"):
        if r["solved"] == "1":
            steps.setdefault((r["op"], r["model"]), []).append(float(r["solved_at"]))
    apart, same, outside = {}, 0, 0
    for p in rows("iclr2020-arithmetic.csv"):
        s = steps.get((p["op"], p["model"]), [])
        if len(s) < 2:
            continue
        mean, theirs = sum(s) / len(s), float(p["solved_at_mean"])
        if abs(theirs / mean - 1) > 0.01:
            apart[p["paper_name"], p["op"]] = (theirs, mean)
            outside += not float(p["solved_at_lo"]) <= mean <= float(p["solved_at_hi"])
        else:
            same += 1
    # the authors' + NAU seeds: median 18,000, a tail of late seeds; the fit doubled the mean
    assert apart["NAU", "add"][1] == pytest.approx(189570.0)
    assert apart["NAU", "add"][0] / apart["NAU", "add"][1] > 2
    text = render.Renderer(str(tmp_path)).published_solved_at_means("iclr2020-arithmetic")
    m = re.fullmatch(r"in (\d+) of (\d+) cells .*: (.*); in the other (\d+) it is within 1% of it",
                     text)  # fmt: skip
    assert m and (int(m[1]), int(m[2]), int(m[4])) == (len(apart), len(apart) + same, same)
    found = re.findall(r"(\S+) against (\S+) \(×([\d.]+)", m[3])
    assert [(float(a), float(b)) for a, b, _ in found] == [
        (float(f"{t:.3g}"), float(f"{s:.3g}")) for t, s in apart.values()
    ]
    assert [float(x) for *_, x in found] == [round(t / s, 2) for t, s in apart.values()]
    assert m[3].count("outside the paper's interval") == outside > 0


def test_published_medians_set_the_papers_median_against_our_order_statistics():
    text = render.Renderer("results").published_medians("iclr2020-gate")
    for cell, name in (
        ("add-nalu_shared", "+ NALU (shared)"),
        ("mul-nalu_shared", "× NALU (shared)"),
    ):
        with open(f"results/iclr2020-gate/{cell}/seeds.csv") as f:
            steps = sorted(float(r["solved_at"]) for r in csv.DictReader(f) if r["solved"] == "1")
        n = len(steps)
        # the widest k with 1 - 2·P(Binomial(n, 1/2) <= k - 1) >= 95%, by hand
        cover = [1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n for k in range(n + 1)]
        ks = [k for k in range(1, n // 2 + 1) if cover[k] >= 0.95]
        part = re.search(re.escape(name) + r": the paper's ([\d,]+), ours ([^;]+?)(?:;|$)", text)
        assert part, text
        if not ks:  # too few solved seeds: the median alone
            assert f"too few solved seeds for an interval: {n}" in part[2]
            continue
        k = max(ks)
        lo, hi = steps[k - 1], steps[n - k]
        assert part[2].startswith(f"{np.median(steps):,.0f} [{lo:,.0f}, {hi:,.0f}]")
        theirs = float(part[1].replace(",", ""))
        assert part[2].endswith("(inside)" if lo <= theirs <= hi else "(outside)")
    assert re.search(r"\((\d+) of (\d+) inside\)$", text)
