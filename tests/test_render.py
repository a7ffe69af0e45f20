"""``docs/reproductions.md`` is rendered from its template and ``results/``
(``nalu_jax.reproduce.render``): the committed document is what the committed data renders, a
figure edited by hand fails the check, a missing cell renders as "no committed data", and a
table cell's verdict follows the rubric."""

import json
import math
import os

import pytest
from conftest import ROOT

from nalu_jax.reproduce import render

TEMPLATE = os.path.join(ROOT, "docs", "reproductions.template.md")
DOC = os.path.join(ROOT, "docs", "reproductions.md")


@pytest.mark.slow  # 21 s on 2 idle cores
def test_committed_document_is_what_the_committed_results_render():
    assert render.main(["--check"]) == 0, (
        "docs/reproductions.md differs from what results/ renders: edit "
        "docs/reproductions.template.md and run python -m nalu_jax.reproduce.render"
    )


def _cell(root, path, summary, config=None, batches=None):
    d = root / path
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "config.json").write_text(json.dumps(config or {"num_seeds": summary["num_seeds"]}))
    machine = {"cpu": "Test CPU", "cores": 2, "platform": "cpu", "devices": 2,
               "device_kind": "cpu"}  # fmt: skip
    batch = {"first_seed": 0, "num_seeds": summary["num_seeds"], "commit": "abcdef0123",
             "dirty": False, "date": "2026-11-23T10:00:00Z", "machine": machine,
             "wall_time_s": 600.0, "seed_steps_per_s": 1000.0}  # fmt: skip
    (d / "provenance.json").write_text(json.dumps({"batches": batches or [batch]}))


def _arith_summary(solved, n, steps, solved_at=(1.6e4, 1.5e4, 1.7e4), sparsity=(3e-5, 2e-5, 4e-5)):
    from nalu_jax.reporting import metrics

    return {
        "num_seeds": n, "num_steps": steps, "solved": solved, "success_rate": solved / n,
        "success_interval": list(metrics.wilson_interval(solved, n)), "diverged": 0,
        "solved_at_median": solved_at[0], "solved_at_mean": solved_at[0],
        "solved_at_interval": list(solved_at[1:]), "sparsity_error_mean": sparsity[0],
        "sparsity_error_interval": list(sparsity[1:]), "wall_time_s": 600.0,
    }  # fmt: skip


def test_a_figure_edited_by_hand_fails_the_check(tmp_path):
    root = tmp_path / "results"
    _cell(root, "demo/nau", {"num_seeds": 10, "solved": 7, "success_rate": 0.7,
                             "success_interval": [0.397, 0.892]})  # fmt: skip
    template = tmp_path / "t.md"
    template.write_text("NAU: {{ success('demo/nau') }}\nmissing: {{ success('demo/nmu') }}\n")
    out = tmp_path / "doc.md"
    args = ["--template", str(template), "--results", str(root), "--out", str(out)]
    assert render.main(args) == 0
    text = out.read_text()
    assert text == (
        "NAU: 7/10 (70%) [40%, 89%]\nmissing: *no committed data* (`results/demo/nmu`)\n"
    )
    assert render.main([*args, "--check"]) == 0
    out.write_text(text.replace("7/10", "8/10"))  # a figure typed by hand
    assert render.main([*args, "--check"]) == 1


def test_a_missing_path_is_refused_and_the_document_left_as_it_was(tmp_path, capsys):
    template = tmp_path / "t.md"
    template.write_text("NAU: {{ success('demo/nau') }}\n")
    out = tmp_path / "doc.md"
    out.write_text("the committed document\n")
    ok = ["--template", str(template), "--results", str(tmp_path), "--out", str(out)]
    for flag, bad, kind in (("--results", tmp_path / "resluts", "directory"),
                            ("--results", template, "directory"),
                            ("--template", tmp_path / "nope.md", "file")):  # fmt: skip
        args = [*ok, flag, str(bad)]  # the later flag wins
        assert render.main(args) == 2 and render.main([*args, "--check"]) == 2
        assert capsys.readouterr().err.splitlines()[-1] == f"{flag}: {bad} is not a {kind}."
        assert out.read_text() == "the committed document\n"
    assert render.main([*ok[:-1], str(tmp_path / "absent.md"), "--check"]) == 2
    assert capsys.readouterr().err.strip() == f"--out: {tmp_path / 'absent.md'} is not a file."
    nowhere = tmp_path / "no" / "dir" / "doc.md"  # written without --check: was a traceback
    assert render.main([*ok[:-1], str(nowhere)]) == 2
    assert capsys.readouterr().err.strip() == f"--out: {nowhere} lies in no existing directory."
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    "solved, steps, sparsity, verdict",
    [
        (20, 5_000_000, (3e-5, 2e-5, 4e-5), "reproduced"),  # all three intervals overlap
        (20, 5_000_000, (0.4, 0.3, 0.5), "partly: sparsity error apart"),  # success yes
        (0, 200_000, (3e-5, 2e-5, 4e-5), "not settled at 1/25 of the budget (no seed solved)"),
        (0, 5_000_000, (3e-5, 2e-5, 4e-5), "not reproduced"),
        (20, 200_000, (3e-5, 2e-5, 4e-5), "reproduced at 1/25 of the budget"),
        # no seed solved at a smaller budget: a failure, settled only at the paper's budget
        (0, 20_000, (3e-5, 2e-5, 4e-5), "not settled at 1/250 of the budget (no seed solved)"),
    ],
)
def test_table_cell_verdict_follows_the_rubric(tmp_path, solved, steps, sparsity, verdict):
    # the paper: NAU on +, 100% [96%, 100%], solved at 3.9e5 [3.54e5, 4.35e5], sparsity
    # 3.19e-5 [1.89e-5, 4.48e-5]; ours solved at [3.5e5, 4.4e5] overlaps it
    root = tmp_path / "results"
    s = _arith_summary(solved, 20, steps, (3.9e5, 3.5e5, 4.4e5), sparsity)
    _cell(root, "iclr2020-arithmetic/add-nau", s)
    table = render.Renderer(str(root)).arith_table("iclr2020-arithmetic", ops=["add"],
                                                   models=["nau", "nmu"])  # fmt: skip
    nau, nmu = table.splitlines()[2:4]
    assert nau.startswith("| + | NAU | 20 × ") and nau.endswith(f"| {verdict} |")
    assert nmu.endswith("| no committed data |")


def test_a_cell_without_the_authors_seeds_shows_its_power_against_the_papers_rate(tmp_path):
    # the gated NAU/NMU's seeds are not in the authors' per-seed file: judged by interval
    # overlap (0/4 [0%, 49%] against the paper's 0% [0%, 4%]), and its power is shown: 4 seeds
    # against the paper's 100 at 0% detect 43 points (h = 2.80159·√(1/4 + 1/100), sin²(h/2));
    # Fisher's test against the paper's count, 0 of 100: p = 1 (every table has 0 solved)
    root = tmp_path / "results"
    _cell(root, "iclr2020-arithmetic/div-gated_nau_nmu", _arith_summary(0, 4, 5_000_000))
    tests = render.Renderer(str(root)).arith_tests(
        "iclr2020-arithmetic", only=["div-gated_nau_nmu"]
    )
    row = tests.splitlines()[2]
    assert row == (
        "| ÷ | Gated NAU/NMU | 0/4 / the authors' seeds are not published | 1 (against the "
        "paper's 0/100) | ≥ 43 points (against the paper's rate) | — | — | — | reproduced |"
    )


def test_fisher_against_the_papers_count_is_beside_the_overlap_verdict_not_in_it(tmp_path):
    # 3 of 36 solved against the paper's 0 of 100: of the tables with 3 solved in all, ours
    # holding all 3 is the least likely, C(36,3)/C(136,3) = 7140/410040 = 0.0174, and the
    # two-sided p is that alone; the intervals, 8% [3%, 22%] and [0%, 4%], overlap, so the
    # rubric's verdict stays "reproduced"
    root = tmp_path / "results"
    _cell(root, "iclr2020-arithmetic/sub-gated_nau_nmu",
          _arith_summary(3, 36, 5_000_000, (1e6, 0.0, 2e6), (7e-4, 0.0, 1.4e-3)))  # fmt: skip
    tests = render.Renderer(str(root)).arith_tests(
        "iclr2020-arithmetic", only=["sub-gated_nau_nmu"]
    )
    row = tests.splitlines()[2]
    cols = [c.strip() for c in row.strip("|").split("|")]
    assert cols[2] == "3/36 / the authors' seeds are not published"
    assert cols[3] == "0.017 (against the paper's 0/100)"
    assert cols[-1] == "reproduced" and cols[-2] == "—"


@pytest.mark.parametrize(
    "rate, n, count",
    [(0.37, 100, (37, 100)), (0.84, 25, (21, 25)), (0.0, 100, (0, 100)), (0.333, 100, None),
     (0.5, math.nan, None), (math.nan, 100, None), (None, 100, None)],
)  # fmt: skip
def test_the_papers_count_only_where_its_rate_is_a_whole_number_of_its_seeds(rate, n, count):
    from nalu_jax.reproduce.verdicts import _paper_count

    row = {"published_num_seeds": n} | ({} if rate is None else {"published_success_rate": rate})
    assert _paper_count(row) == count


def test_table1_and_appendix_c_others_split_the_add_sub_mul_cells():
    from nalu_jax.reproduce import specs

    others = specs.appendix_c_others()
    spec = specs.table("iclr2020-arithmetic")
    every = [c.key for c in specs.cells(spec, ops=("mul", "add", "sub"))]
    assert len(specs.TABLE1_CELLS) == 11 and len(others) == 22  # 3 ops × 11 models
    assert sorted([*specs.TABLE1_CELLS, *others]) == sorted(every)
    assert "mul-gated_nau_nmu" in others and "sub-nmu" in others and "mul-nmu" not in others


def test_a_missing_cell_shows_the_papers_figures_and_only_selects_cells(tmp_path):
    table = render.Renderer(str(tmp_path)).arith_table(
        "iclr2020-arithmetic", only=["add-nau", "mul-nmu"]
    )
    rows = table.splitlines()[2:]
    assert [r.split(" | ")[:2] for r in rows] == [["| ×", "NMU"], ["| +", "NAU"]]
    # ours "—", the paper's beside it (Table 1: NAU on + 100% [96%, 100%], sparsity 3.19e-5)
    assert rows[1] == (
        "| + | NAU | — | — | 100% [96%, 100%] | — | 18,000 | — | 3.91e+05 [3.54e+05, 4.35e+05]"
        " | — | — | 3.19e-05 [1.89e-05, 4.48e-05] | no committed data |"
    )


def test_arith_seeds_groups_the_committed_cells_by_seed_count(tmp_path):
    root = tmp_path / "results"
    # × NMU and + NAU: the two cells whose published sparsity error is a sample mean (the
    # others' Beta fit would need seeds.csv)
    for key, n in (("mul-nmu", 100), ("add-nau", 40)):
        _cell(root, f"iclr2020-arithmetic/{key}", _arith_summary(n // 2, n, 5_000_000))
    r = render.Renderer(str(root))
    assert r.arith_seeds("iclr2020-arithmetic") == "100 seeds: × NMU; 40 seeds: + NAU"
    assert r.arith_seeds("iclr2020-arithmetic", only=["add-nau", "add-linear"]) == (
        "40 seeds: + NAU"
    )
    with pytest.raises(render.Missing):
        render.Renderer(str(tmp_path / "empty")).arith_seeds("iclr2020-arithmetic")
    # by budget: most steps first, then most seeds (× NMU again at 10 × 20,000)
    assert r.arith_budgets("iclr2020-arithmetic") == (
        "100 × 5,000,000: 1 cell; 40 × 5,000,000: 1 cell"
    )
    small = tmp_path / "small"
    _cell(small, "iclr2020-arithmetic/mul-nmu", _arith_summary(0, 10, 20_000))
    _cell(small, "iclr2020-arithmetic/add-nau", _arith_summary(20, 40, 5_000_000))
    r = render.Renderer(str(small))
    assert r.arith_budgets("iclr2020-arithmetic") == "40 × 5,000,000: 1 cell; 10 × 20,000: 1 cell"
    assert r.arith_budgets("iclr2020-arithmetic", ops=["mul"]) == "10 × 20,000: 1 cell"
    with pytest.raises(render.Missing):
        render.Renderer(str(tmp_path / "empty")).arith_budgets("iclr2020-arithmetic")


def test_timing_table_gives_each_batch_its_seeds_wall_time_and_rate(tmp_path):
    root = tmp_path / "results"
    machine = {"cpu": "Test CPU", "cores": 2, "platform": "cpu", "devices": 2,
               "device_kind": "cpu"}  # fmt: skip
    batches = [
        {"first_seed": 0, "num_seeds": 20, "wall_time_s": 1069.1, "seed_steps_per_s": 93854.0,
         "machine": machine, "commit": "09046a2aaaa", "date": "2026-11-24T10:00:00Z"},
        {"first_seed": 20, "num_seeds": 80, "wall_time_s": 6264.0, "seed_steps_per_s": 16003.6,
         "machine": {**machine, "platform": "gpu", "device_kind": "NVIDIA H100"},
         "commit": "b1d1504bbbb", "dirty": True, "date": "2026-11-25T10:00:00Z"},
        {"first_seed": 100, "num_seeds": 10, "wall_time_s": 60.0, "seed_steps_per_s": 2e5,
         "machine": {**machine, "platform": "gpu", "device_kind": "NVIDIA H100"},
         "matmul_precision": "default", "commit": "b1d1504bbbb", "dirty": True,
         "date": "2026-11-25T11:00:00Z"},
    ]  # fmt: skip
    # the first batch records its command; the launcher and table are left out of it
    batches[0]["command"] = (
        "python -m launch.reproduce --table=iclr2020-arithmetic --ops=add --seeds=20"
    )
    batches[1]["command"] = "python -m launch.compare_models --seeds=80"
    _cell(root, "iclr2020-arithmetic/add-linear", _arith_summary(20, 20, 5_000_000),
          batches=batches)  # fmt: skip
    # what each batch's seeds did, from seeds.csv: seeds 0–19 all solved; of 20–99, the
    # even ones solved and seeds 21 and 23 diverged; of 100–109, none solved
    rows = ["seed,solved,solved_at,diverged,diverged_at"]
    rows += [f"{k},1,1000,0,-1" for k in range(20)]
    rows += [f"{k},{1 - k % 2},1000,{int(k in (21, 23))},-1" for k in range(20, 100)]
    rows += [f"{k},0,,0,-1" for k in range(100, 110)]
    (root / "iclr2020-arithmetic/add-linear/seeds.csv").write_text("\n".join(rows) + "\n")
    rows = render.Renderer(str(root)).timing_table("iclr2020-arithmetic").splitlines()[2:]
    assert rows == [
        "| + | Linear (merged: 3 batches at 2 commits) | 0–19 | `--ops=add --seeds=20` | 09046a2 "
        "| 2026-11-24 | 17.8 min | 93,854 | Test CPU (2 cores) | 20 of 20 solved |",
        "| + | Linear (merged: 3 batches at 2 commits) | 20–99 | `python -m launch.compare_models "
        "--seeds=80` | b1d1504 (modified) | 2026-11-25 | 104.4 min | 16,004 | NVIDIA H100 "
        "| 40 of 80 solved, 2 diverged |",
        "| + | Linear (merged: 3 batches at 2 commits) | 100–109 | — | b1d1504 (modified) "
        "| 2026-11-25 | 1.0 min | 200,000 | NVIDIA H100, matmul_precision 'default' "
        "| 0 of 10 solved |",
    ]
    # restricted to named cells: the other cell's batch is left out, and none named is Missing
    _cell(root, "iclr2020-arithmetic/mul-relu", _arith_summary(0, 20, 5_000_000),
          batches=batches[:1])  # fmt: skip
    r = render.Renderer(str(root))
    assert len(r.timing_table("iclr2020-arithmetic").splitlines()) == 2 + 4
    only = r.timing_table("iclr2020-arithmetic", only=["mul-relu"]).splitlines()[2:]
    assert only == [  # a cell without seeds.csv: what its seeds did is not shown
        "| × | ReLU | 0–19 | `--ops=add --seeds=20` | 09046a2 | 2026-11-24 | 17.8 min | 93,854 "
        "| Test CPU (2 cores) | — |"
    ]
    with pytest.raises(render.Missing):
        r.timing_table("iclr2020-arithmetic", only=["div-nmu"])
    # a batch whose seeds all diverged and stopped training has no rate worth comparing
    stopped = dict(batches[0], first_seed=20, num_seeds=4, wall_time_s=90.0,
                   seed_steps_per_s=180.0, stopped_at_step=1000)  # fmt: skip
    _cell(root, "iclr2020-arithmetic/div-nmu", _arith_summary(0, 24, 5_000_000),
          batches=[batches[0], stopped])  # fmt: skip
    rows = render.Renderer(str(root)).timing_table("iclr2020-arithmetic", only=["div-nmu"])
    assert rows.splitlines()[-1] == (
        "| ÷ | NMU (merged: 2 batches) | 20–23 | `--ops=add --seeds=20` | 09046a2 | 2026-11-24 "
        "| 1.5 min | — (all diverged by step 1,000; not trained after) | Test CPU (2 cores) | — |"
    )


def test_provenance_names_the_device_and_a_precision_below_full(tmp_path):
    root = tmp_path / "results"
    machine = {"cpu": "Test CPU", "cores": 16, "platform": "gpu", "devices": 1,
               "device_kind": "NVIDIA H100 80GB HBM3"}  # fmt: skip
    batch = {"first_seed": 0, "num_seeds": 10, "commit": "abcdef0123", "dirty": False,
             "date": "2026-11-25T10:00:00Z", "machine": machine, "wall_time_s": 60.0,
             "seed_steps_per_s": 1000.0}  # fmt: skip
    _cell(root, "a/full", _arith_summary(5, 10, 1000), batches=[batch])
    _cell(root, "a/fast", _arith_summary(0, 10, 1000),
          batches=[{**batch, "matmul_precision": "default"}])  # fmt: skip
    r = render.Renderer(str(root))
    assert r.provenance("a/full").endswith("2026-11-25, NVIDIA H100 80GB HBM3, 1.0 min")
    assert r.provenance("a/fast").endswith(
        "2026-11-25, NVIDIA H100 80GB HBM3, matmul_precision 'default', 1.0 min"
    )


def test_solved_in_all_sums_a_sweep_cells_settings(tmp_path):
    root = tmp_path / "results"
    parts = [{"setting": f"00{i}", "solved": k, "num_seeds": 25} for i, k in enumerate((25, 3))]
    _cell(root, "p/mul-nmu", {"num_seeds": 25, "settings": parts})
    assert render.Renderer(str(root)).solved_in_all("p/mul-nmu") == "28/50 (2 ranges)"


def test_gridworld_table_and_success_at_t(tmp_path):
    root = tmp_path / "results"

    def agent(name, label, rates, mastered):
        rows = zip((5, 13), rates, mastered, strict=True)
        per_t = [{"t": t, "success_rate": r, "seed_interval": [r - 0.05, r + 0.05],
                  "seeds_mastered": m} for t, r, m in rows]  # fmt: skip
        return {"agent": name, "label": label, "num_seeds": 4, "per_t": per_t}

    summary = {"num_seeds": 4, "agents": [agent("lstm", "LSTM", (0.9, 0.5), (3, 1)),
                                          agent("memory", "NAC", (0.95, 0.25), (4, 0))],
               "train_range": [5, 12], "test_times": [5, 13], "master_rate": 0.9,
               "random_policy_success": [0.03, 0.01]}  # fmt: skip
    _cell(root, "gridworld/default", summary)
    r = render.Renderer(str(root))
    assert r.success_at_t("gridworld/default", "memory", 13) == "25%"
    rows = r.gridworld_table("gridworld/default").splitlines()
    assert rows[2] == "| 5 (train) | 90% [85%, 95%] | 95% [90%, 100%] | 3/4 | 4/4 | 3% |"
    assert rows[3] == "| 13 | 50% [45%, 55%] | 25% [20%, 30%] | 1/4 | 0/4 | 1% |"
    with pytest.raises(render.Missing):
        r.success_at_t("gridworld/default", "memory", 14)


def test_template_cites_no_file_outside_the_repository():
    text = open(TEMPLATE).read()
    for word in ("tasks.md", "units.md", "shared/spec", "/work/", "session"):
        assert word not in text


def test_table_verdict_names_the_cells_of_one_verdict_together(tmp_path):
    root = tmp_path / "results"
    # the paper (gating table): + NALU (separate) 51% [41%, 61%], solved at 2.9e5 [2.47e5,
    # 3.25e5], sparsity 0.18 [0.166, 0.194] (the Beta fit's μ, half the errors' mean); ours
    # overlaps all three (errors 0.34–0.38: μ ≈ 0.18)
    full = _arith_summary(10, 20, 5_000_000, (2.9e5, 2.5e5, 3.3e5), (0.36, 0.35, 0.37))
    _cell(root, "iclr2020-gate/add-nalu_separate", full)
    header = (
        "seed,solved,best_step,interpolation_mse,extrapolation_mse,solved_at,sparsity_error,"
        "diverged,diverged_at"
    )
    solved = [f"{k},1,20000,0.0,0.0,290000,{0.34 + 0.004 * k:.3f},0,-1" for k in range(10)]
    unsolved_10 = [f"{k},0,20000,1.0,9.0,,0.4,0,-1" for k in range(10, 20)]
    seeds = "\n".join([header, *solved, *unsolved_10]) + "\n"
    (root / "iclr2020-gate" / "add-nalu_separate" / "seeds.csv").write_text(seeds)
    unsolved = "\n".join([header, *(f"{k},0,20000,1.0,9.0,,0.4,0,-1" for k in range(10))]) + "\n"
    for key in ("add-nalu_shared", "add-gated_nau_nmu", "mul-gated_nau_nmu"):
        _cell(root, f"iclr2020-gate/{key}", _arith_summary(0, 10, 20_000))
        (root / "iclr2020-gate" / key / "seeds.csv").write_text(unsolved)  # no seed solved
    only = ["mul-gated_nau_nmu", "add-nalu_shared", "add-nalu_separate", "add-gated_nau_nmu"]
    verdict = render.Renderer(str(root)).table_verdict("iclr2020-gate", only=only)
    assert verdict == (
        "**not settled**: 1 of 4 cells reproduced; not settled at 1/250 of the budget: "
        "× Gated NAU/NMU, + NALU (shared), + Gated NAU/NMU"
    )


def test_batch_seeds_solved_steps_and_late_solvers_read_each_batchs_seeds(tmp_path):
    # a cell of two batches: seeds 0–2 (10 min) and 3–6 (25 min, seed 5 diverged); solved-at
    # steps by seed: 0: 100, 1: 300, 3: 250, 4: 400, 6: 1,000,000
    root = tmp_path / "results"
    first = {"first_seed": 0, "num_seeds": 3, "wall_time_s": 600.0}
    second = {"first_seed": 3, "num_seeds": 4, "wall_time_s": 1500.0}
    _cell(root, "gate/add-nalu", _arith_summary(5, 7, 10_000), batches=[first, second])
    rows = ["0,1,100,0", "1,1,300,0", "2,0,,0", "3,1,250,0", "4,1,400,0", "5,0,,1",
            "6,1,1000000,0"]  # fmt: skip
    head = "seed,solved,solved_at,diverged,diverged_at"
    at = {"5": "1234"}
    lines = [f"{r},{at.get(r.split(',')[0], -1)}" for r in rows]
    (root / "gate" / "add-nalu" / "seeds.csv").write_text("\n".join([head, *lines]) + "\n")
    ns = render.Renderer(str(root)).namespace()
    cell = "gate/add-nalu"
    assert ns["batch_seeds"](cell, 0) == "10 min: 2 of 3 solved, at 100 to 300 steps; none diverged"
    assert ns["batch_seeds"](cell, -1) == (
        "25 min: 3 of 4 solved, at 250 to 1,000,000 steps; seed 5 diverged (at 1,234 steps)"
    )
    assert ns["solved_steps"](cell) == "100 to 1,000,000"
    assert ns["solved_steps"](cell, (0, 2), stat="mean") == "200"
    assert ns["solved_steps"](cell, (3, 3)) == "250"
    assert ns["solved_steps"](cell, (5, 5)) == "no seed solved"
    # after every solver of seeds 0–2 (the last at 300): 400 and 1,000,000, not 250
    assert ns["late_solvers"](cell, (3, 6), (0, 2)) == (
        "2 seeds, at 400 and 1,000,000 steps (the last of seeds 0–2 at 300)"
    )
    assert ns["late_solvers"](cell, (3, 3), (0, 2)) == "none (the last of seeds 0–2 at 300)"
    assert ns["late_solvers"](cell, (0, 1), (5, 5)) == (
        "2 seeds, at 100 and 300 steps (none of seed 5 solved)"
    )
    assert ns["live_seeds"](cell) == "0, 1, 2, 3, 4 and 6"  # seed 5 diverged
    _cell(root, "gate/add-gated", _arith_summary(0, 2, 10_000))
    (root / "gate" / "add-gated" / "seeds.csv").write_text(f"{head}\n0,0,,1,0\n1,0,,1,11\n")
    assert ns["live_seeds"]("gate/add-gated") == "none"
    assert ns["live_seeds"]("gate/add-gated", "gate/add-gated") == "none in each"
    # cells of different seeds: read on the seeds both hold (0 and 1), then each one's others;
    # the two share their op, so each is named by its path
    assert ns["live_seeds"](cell, "gate/add-gated") == (
        "gate/add-nalu: 0 and 1; gate/add-gated: none (of seeds 0–1, which every cell holds); "
        "gate/add-nalu, seeds 2–6: 2, 3, 4 and 6"
    )
    # cells of different ops, named by their op: the same live seeds on the shared seeds 0–1,
    # and the longer cell's others (seed 5 diverged)
    _cell(root, "gate/mul-gated", _arith_summary(0, 2, 10_000))
    (root / "gate" / "mul-gated" / "seeds.csv").write_text(f"{head}\n0,0,,0,-1\n1,0,,0,-1\n")
    assert ns["live_seeds"]("gate/mul-gated", cell) == (
        "0 and 1 in each (of seeds 0–1, which every cell holds); +, seeds 2–6: 2, 3, 4 and 6"
    )
    # seeds 0 and 2 against 0–6: on those two, × keeps 0 (2 diverged), + both
    (root / "gate" / "mul-gated" / "seeds.csv").write_text(f"{head}\n0,0,,0,-1\n2,0,,1,5\n")
    assert ns["live_seeds"]("gate/mul-gated", cell) == (
        "×: 0; +: 0 and 2 (of seeds 0 and 2, which every cell holds); "
        "+, seeds 1, 3, 4, 5 and 6: 1, 3, 4 and 6"
    )
    with pytest.raises(ValueError, match="seeds 7–9: gate/add-nalu holds none of them"):
        ns["solved_steps"](cell, (7, 9))
    with pytest.raises(ValueError, match="solved_steps stat: 'median' is neither"):
        ns["solved_steps"](cell, stat="median")
