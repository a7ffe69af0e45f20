"""ICLR 2020's dataset-parameter and λ̂ figures (``nalu_jax.reproduce.figures_iclr``): the
paired range sweep, each figure's cells and configs, the cost printed before a run, and the
rendered table and verdict."""

import json
import math

import pytest

from nalu_jax.config import ConfigError, arithmetic_config
from nalu_jax.engine import sweep
from nalu_jax.reproduce import budget, cell_config, render, specs
from nalu_jax.reproduce.cells import configs, num_runs
from nalu_jax.reproduce.figures_iclr import FIGURES, RANGE_PAIRS


def test_range_pair_sweep_sets_both_ranges_per_value_not_their_grid():
    c = arithmetic_config()
    with c.sweep.unlocked():
        c.sweep.range_pair = RANGE_PAIRS[:3]
    settings = sweep.expand(c)
    assert len(settings) == 3  # pairs, not the 3 × 3 grid
    got = [(s.config.task.interpolation_range, s.config.task.extrapolation_range) for s in settings]
    assert [sweep.as_tuples(g) for g in got] == list(RANGE_PAIRS[:3])
    assert settings[1].values == {
        "interpolation_range": (-2.0, 2.0),
        "extrapolation_range": ((-6.0, -2.0), (2.0, 6.0)),
    }
    with pytest.raises(ConfigError, match="range_pair"):
        sweep.expand(c, allowed=("lr",))


def test_the_default_config_has_no_range_pair_field():
    """The pair is a field only of the configs that sweep it (the range figure's), so every
    other cell's recorded ``config.json`` stays without it."""
    assert "range_pair" not in arithmetic_config().sweep


@pytest.mark.parametrize(
    ("name", "cells", "runs"),
    [
        ("iclr2020-hidden-size", 6 * 9, 50),
        ("iclr2020-range", 6, 50 * 7),
        ("iclr2020-input-size", 6 * 14, 50),
        ("iclr2020-overlap", 6, 50 * 6),
        ("iclr2020-subset", 6, 50 * 4),
        ("iclr2020-lambda", 3, 25 * 6),
    ],
)
def test_each_figure_has_its_cells_and_runs(name, cells, runs):
    spec = specs.table(name)
    got = specs.cells(spec)
    assert len(got) == cells
    assert all(num_runs(cell_config(spec, c)) == runs for c in got)


def test_a_point_sets_its_field_and_the_input_size_its_iterations():
    hidden = specs.table("iclr2020-hidden-size")
    cell = next(c for c in specs.cells(hidden, ["nmu"]) if c.point == "h7")
    assert cell.key == "mul-nmu-h7" and cell_config(hidden, cell).model.hidden_size == 7
    inputs = specs.table("iclr2020-input-size")
    by_key = {c.point: c for c in specs.cells(inputs, ["nmu"])}
    assert cell_config(inputs, by_key["i300"]).task.input_size == 300
    assert cell_config(inputs, by_key["i300"]).num_steps == 15_000_000
    assert cell_config(inputs, by_key["i125"]).num_steps == 10_000_000
    # --steps reduces every point by the same fraction: 1/50 of 15·10⁶
    assert cell_config(inputs, by_key["i300"], 10, 100_000).num_steps == 300_000
    # overlap and subset ratio: one program per model, the points its settings
    overlap = specs.table("iclr2020-overlap")
    (cell,) = specs.cells(overlap, ["nalu"])
    assert cell.key == "mul-nalu"
    assert tuple(cell_config(overlap, cell).sweep.overlap_ratio) == (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
    subset = specs.table("iclr2020-subset")
    assert tuple(cell_config(subset, specs.cells(subset, ["nmu"])[0]).sweep.subset_ratio) == (
        0.05, 0.1, 0.25, 0.5)  # fmt: skip


def test_the_lambda_figure_is_the_scripts_protocol():
    spec = specs.table("iclr2020-lambda")
    cfgs = configs(spec, specs.cells(spec))
    assert sorted(cfgs) == ["add-nau", "mul-nmu", "sub-nau"]
    c = cfgs["add-nau"]
    assert (c.first_seed, c.num_seeds) == (25, 25)  # seeds 25–49
    assert tuple(c.sweep.reg_scale) == (0.0, 0.01, 0.1, 1.0, 10.0, 100.0)
    assert c.model.name == "nau"


def test_program_rate_is_the_measured_one_at_the_measured_sizes():
    assert budget.program_rate(100, "nmu") == pytest.approx(1.97e6)
    assert budget.program_rate(1_000, "nmu") == pytest.approx(7.20e6)
    assert budget.program_rate(10_000, "nalu") == pytest.approx(8.93e6 * 3.6 / 8.6)
    # below 100 runs a step takes as long as at 100 (latency-bound): 10 runs, a tenth the rate
    assert budget.program_rate(10, "nmu") == pytest.approx(1.97e5)
    assert budget.program_rate(20_000, "nmu") == pytest.approx(8.93e6)  # held above the largest
    # halfway in log(runs) between 100 and 350 runs: halfway between the rates
    assert budget.program_rate(round(math.sqrt(35_000)), "nmu") == pytest.approx(3.365e6, rel=1e-3)


def test_a_cell_runs_at_the_loops_measured_fraction_of_its_program():
    # through the run loop 175 runs ran at 0.87 of the program alone (2.68e6 against 3.10e6
    # seed-steps/s on an H200); the program alone interpolates to 3.22e6 at 175 runs (H100)
    assert budget.program_rate(175, "nmu") == pytest.approx(3.22e6, rel=2e-3)
    assert budget.gpu_rate(175, "nmu") == pytest.approx(0.87 * 3.22e6, rel=2e-3)
    assert budget.gpu_rate(10_000, "nmu") == pytest.approx(0.87 * 8.93e6)
    assert budget.gpu_rate(20, "nmu") == pytest.approx(0.87 * 3.94e5)
    assert budget.gpu_rate(1_000, "gated_nau_nmu") == pytest.approx(0.87 * 7.20e6 * 3.6 / 8.6)
    # the range figure's NMU program: 175 runs × 5e6 steps ≈ 5.2 min
    assert 175 * 5e6 / budget.gpu_rate(175, "nmu") / 60 == pytest.approx(5.2, abs=0.1)


def test_plan_counts_seed_steps_of_every_cell():
    spec = specs.table("iclr2020-lambda")
    cells = specs.cells(spec)
    lines = budget.plan(cells, configs(spec, cells, 10, 20_000), {"mul-nmu": 30.0})
    # 3 cells × 10 seeds × 6 λ̂ × 20,000 steps
    assert lines[-1].startswith("total 3.6e+06 seed-steps; this CPU ≈ 30 s;")
    assert "mul-nmu: 60 runs × 20,000 steps = 1.2e+06 seed-steps" in lines[2]


def _summary(solved, n, steps):
    from nalu_jax.reporting import metrics

    return {"num_seeds": n, "num_steps": steps, "solved": solved, "success_rate": solved / n,
            "success_interval": list(metrics.wilson_interval(solved, n))}  # fmt: skip


def _commit(root, path, summary, seeds, steps):
    d = root / path
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    machine = {"cpu": "Test CPU", "cores": 2, "platform": "cpu", "devices": 2,
               "device_kind": "cpu"}  # fmt: skip
    batch = {"first_seed": 0, "num_seeds": seeds, "num_steps": steps, "machine": machine,
             "wall_time_s": 120.0}  # fmt: skip
    (d / "provenance.json").write_text(json.dumps({"batches": [batch]}))


def _range_cell(root, model, solved_per_point, n=10, steps=100_000):
    parts = []
    for (inter, extra), k in zip(RANGE_PAIRS, solved_per_point, strict=True):
        values = {"interpolation_range": inter, "extrapolation_range": extra}
        parts.append(_summary(k, n, steps) | {"setting_values": values})
    _commit(root, f"iclr2020-range/mul-{model}", {"settings": parts}, n, steps)


def test_range_figure_table_budget_and_verdict(tmp_path):
    root = tmp_path / "results"
    ren = render.Renderer(str(root))
    with pytest.raises(render.Missing):
        ren.namespace()["figure_table"]("iclr2020-range")
    _range_cell(root, "nmu", (0, 3, 0, 0, 10, 0, 0))
    _range_cell(root, "nac_mul", (0, 0, 0, 0, 2, 0, 0))
    ns = ren.namespace()
    table = ns["figure_table"]("iclr2020-range").splitlines()
    assert table[0].startswith("| interpolation range (×) | NMU | NAC• | NAC•,σ |")
    assert table[3].startswith(
        "| U[-2,2] → U[-6,-2] ∪ U[2,6] | 3/10 [11%, 60%] | 0/10 [0%, 28%] | — |"
    )
    # 10 seeds × 10⁵ steps of the paper's 50 × 5·10⁶: 1/250
    assert ns["figure_verdict"]("iclr2020-range") == (
        "not settled at 1/250 of the paper's seed-steps in its least-run cell: the claim holds"
        " on the committed cells (2 of 6 cells committed); NMU 3/10 on U[−2,2]; on U[1.1,1.2] NMU 0/10, NAC• 0/10"
    )
    # one program per model, its seven points its settings: 3 + 10 + 2 of 2 × 7 × 10
    assert ns["figure_solved"]("iclr2020-range") == "15 of 140 seeds"
    assert ns["figure_budget"]("iclr2020-range").startswith(
        "2 of 6 cells, 1.4e+07 seed-steps of the paper's 1.05e+10 (0.13%), 4.0 min on Test CPU"
    )
    # a batch on a GPU extends the NMU cell: each machine's minutes are its own
    prov = root / "iclr2020-range" / "mul-nmu" / "provenance.json"
    batches = json.loads(prov.read_text())["batches"]
    gpu = {"cpu": "Xeon", "cores": 16, "platform": "gpu", "devices": 1, "device_kind": "H200"}
    batches.append({"first_seed": 10, "num_seeds": 10, "num_steps": 100_000, "machine": gpu,
                    "wall_time_s": 30.0})  # fmt: skip
    prov.write_text(json.dumps({"batches": batches}))
    assert ns["figure_budget"]("iclr2020-range").startswith(
        "2 of 6 cells, 2.1e+07 seed-steps of the paper's 1.05e+10 (0.2%), 0.5 min on H200; "
        "4.0 min on Test CPU"
    )


def test_a_claim_short_of_the_paper_is_not_settled_below_the_budget(tmp_path):
    root = tmp_path / "results"
    _range_cell(root, "nmu", (0, 0, 0, 0, 0, 0, 0))  # NMU solves nothing on U[-2,2]
    ns = render.Renderer(str(root)).namespace()
    assert ns["figure_verdict"]("iclr2020-range") == (
        "not settled at 1/250 of the paper's seed-steps in its least-run cell (1 of 6 cells"
        " committed): NMU 0/10 on U[−2,2]; on U[1.1,1.2] NMU 0/10"
    )
    root2 = tmp_path / "full"
    _range_cell(root2, "nmu", (0, 0, 0, 0, 0, 0, 0), n=50, steps=5_000_000)
    assert render.Renderer(str(root2)).namespace()["figure_verdict"]("iclr2020-range") == (
        "not reproduced (1 of 6 cells committed): NMU 0/50 on U[−2,2]; on U[1.1,1.2] NMU 0/50"
    )


def test_a_failure_claim_is_settled_only_at_the_paper_budget(tmp_path):
    # every model committed; the NMU solves on U[−2,2] and none solves U[1.1,1.2] (point 6)
    models = ("nmu", "nac_mul", "nac_mul_sigma", "nac_mul_nmu", "nalu", "gated_nau_nmu")
    for root, n, steps in ((tmp_path / "less", 10, 100_000), (tmp_path / "full", 50, 5_000_000)):
        for m in models:
            _range_cell(root, m, (0, 4 if m == "nmu" else 0, 0, 0, 1, 0, 0), n=n, steps=steps)
    evidence = "NMU 4/{n} on U[−2,2]; on U[1.1,1.2] " + ", ".join(
        f"{label} 0/{{n}}"
        for label in ("NMU", "NAC•", "NAC•,σ", "NAC•,NMU", "NALU", "Gated NAU/NMU")
    )
    verdict = render.Renderer(str(tmp_path / "less")).namespace()["figure_verdict"]
    assert verdict("iclr2020-range") == (
        "not settled at 1/250 of the paper's seed-steps in its least-run cell: the claim holds "
        "on these cells, but no model solving U[1.1,1.2] is a failure, which only the paper's budget can show; "
        + evidence.format(n=10)
    )
    verdict = render.Renderer(str(tmp_path / "full")).namespace()["figure_verdict"]
    assert verdict("iclr2020-range") == "reproduced: " + evidence.format(n=50)


def test_a_figure_table_at_the_papers_steps_reads_its_columns_from_the_results(tmp_path):
    root = tmp_path / "results"
    _range_cell(root, "nmu", (10, 9, 10, 10, 10, 0, 10), steps=5_000_000)
    _range_cell(root, "nac_mul", (0, 0, 0, 0, 2, 0, 0))  # 10⁵ steps: not the paper's
    _range_cell(root, "nalu", (0, 0, 0, 0, 0, 0, 0), steps=5_000_000)
    table = render.Renderer(str(root)).namespace()["figure_table"]
    head = table("iclr2020-range", models="paper_steps").splitlines()[0]
    assert head == "| interpolation range (×) | NMU | NALU |"  # 5·10⁶: most cells' steps
    with pytest.raises(ValueError, match="'nmu' is neither a list of model keys nor"):
        table("iclr2020-range", models="nmu")
    # per-point cells: the paper's iterations grow with the input size (10⁷ at 125 inputs)
    inputs = root / "inputs"
    for path, steps in (("mul-nmu-i125", 10_000_000), ("mul-nac_mul-i125", 5_000_000),
                        ("mul-nac_mul-i4", 20_000), ("mul-nalu-i4", 5_000_000)):  # fmt: skip
        _commit(inputs, f"iclr2020-input-size/{path}", _summary(1, 10, steps), 10, steps)
    table = render.Renderer(str(inputs)).namespace()["figure_table"]
    rows = table("iclr2020-input-size", models="paper_steps").splitlines()
    assert rows[0].split(" | ")[1:] == ["NMU", "NALU |"]  # not NAC•: 5·10⁶ at 125 inputs
    assert rows[2].startswith("| 4 | — | 1/10 ")


def test_per_point_cells_and_a_figure_without_a_claim(tmp_path):
    root = tmp_path / "results"
    for point, k in (("i4", 4), ("i25", 9)):
        path = f"iclr2020-input-size/mul-nmu-{point}"
        _commit(root, path, _summary(k, 10, 20_000), 10, 20_000)
    ns = render.Renderer(str(root)).namespace()
    rows = ns["figure_table"]("iclr2020-input-size").splitlines()
    assert rows[2].startswith("| 4 | 4/10 ") and rows[4].startswith("| 25 | 9/10 ")
    assert rows[3].startswith("| 10 | — |")
    assert ns["figure_verdict"]("iclr2020-input-size").startswith("measured")
    assert ns["figure_solved"]("iclr2020-input-size") == "13 of 20 seeds"  # 4 + 9 of 10 + 10
    assert set(FIGURES) <= set(specs.TABLES)


def test_a_ratio_figure_is_one_cell_per_model_its_points_the_settings(tmp_path):
    root = tmp_path / "results"
    parts = [
        _summary(k, 10, 100_000) | {"setting_values": {"overlap_ratio": v}}
        for v, k in zip((0.0, 0.1, 0.25, 0.5, 0.75, 1.0), (4, 0, 0, 9, 0, 1), strict=True)
    ]
    _commit(root, "iclr2020-overlap/mul-nmu", {"settings": parts}, 10, 100_000)
    ns = render.Renderer(str(root)).namespace()
    rows = ns["figure_table"]("iclr2020-overlap").splitlines()
    assert rows[2].startswith("| 0 | 4/10 ") and rows[5].startswith("| 0.5 | 9/10 ")
    assert rows[3].startswith("| 0.1 | 0/10 [0%, 28%] | — |")
    assert ns["figure_verdict"]("iclr2020-overlap").startswith("measured")
    assert ns["figure_solved"]("iclr2020-overlap") == "14 of 60 seeds"  # 4 + 9 + 1 of 6 × 10


def test_a_sweep_figures_column_at_other_steps_than_the_rest_says_its_steps(tmp_path):
    # the λ̂ figure: × NMU past its ramp (5·10⁶), + and − NAU at 5·10⁵, one program per cell
    root = tmp_path / "results"
    for key, steps in (("mul-nmu", 5_000_000), ("add-nau", 500_000), ("sub-nau", 500_000)):
        parts = [_summary(1, 10, steps) | {"setting_values": {"reg_scale": v}}
                 for v in (0.0, 0.01, 0.1, 1.0, 10.0, 100.0)]  # fmt: skip
        _commit(root, f"iclr2020-lambda/{key}", {"settings": parts}, 10, steps)
    ns = render.Renderer(str(root)).namespace()
    assert ns["figure_table"]("iclr2020-lambda", op="mul").splitlines()[0] == (
        "| λ̂_sparse (×) | NMU (5·10⁶ steps) |"
    )
    assert (
        ns["figure_table"]("iclr2020-lambda", op="add").splitlines()[0] == "| λ̂_sparse (+) | NAU |"
    )


def test_a_figure_at_the_papers_budget_says_100_percent(tmp_path):
    root = tmp_path / "results"
    for key in ("mul-nmu", "add-nau", "sub-nau"):
        parts = [_summary(20, 25, 5_000_000) | {"setting_values": {"reg_scale": v}}
                 for v in (0.0, 0.01, 0.1, 1.0, 10.0, 100.0)]  # fmt: skip
        _commit(root, f"iclr2020-lambda/{key}", {"settings": parts}, 25, 5_000_000)
    assert render.Renderer(str(root)).namespace()["figure_budget"]("iclr2020-lambda") == (
        "3 of 3 cells, 2.25e+09 seed-steps of the paper's 2.25e+09 (100%), 6.0 min on Test CPU, "
        "2 cores"
    )


def test_a_figure_table_with_measures_gives_solved_at_and_sparsity_error(tmp_path):
    root = tmp_path / "results"
    measured = {"solved_at_median": 1438000.0, "sparsity_error_mean": 5.484788e-07}
    parts = [_summary(9, 10, 5_000_000) | {"setting_values": {"reg_scale": v}} | measured
             for v in (0.0, 0.01, 0.1, 1.0, 10.0)]  # fmt: skip
    parts.append(_summary(0, 10, 5_000_000) | {"setting_values": {"reg_scale": 100.0},
                 "solved_at_median": None, "sparsity_error_mean": float("nan")})  # fmt: skip
    _commit(root, "iclr2020-lambda/mul-nmu", {"settings": parts}, 10, 5_000_000)
    rows = (
        render.Renderer(str(root))
        .namespace()["figure_table"]("iclr2020-lambda", op="mul", measures=True)
        .splitlines()
    )
    assert rows[6] == "| 10 | 9/10 [60%, 98%]; solved at 1.44e+06, sparsity error 5.48e-07 |"
    assert rows[7] == "| 100 | 0/10 [0%, 28%]; solved at —, sparsity error — |"  # none solved


def test_a_figure_table_of_some_models_keeps_only_their_columns(tmp_path):
    root = tmp_path / "results"
    _range_cell(root, "nmu", (10, 9, 10, 10, 10, 0, 10), steps=5_000_000)
    _range_cell(root, "nac_mul", (0, 0, 0, 0, 2, 0, 0))
    path = root / "iclr2020-range" / "mul-nmu" / "summary.json"
    summary = json.loads(path.read_text())
    summary["settings"][1] |= {"solved_at_median": 4000.0, "sparsity_error_mean": 1.37e-07}
    path.write_text(json.dumps(summary))
    table = render.Renderer(str(root)).namespace()["figure_table"]
    rows = table("iclr2020-range", measures=True, models=["nmu"]).splitlines()
    # one column, the model's own steps in its head (the figure's others ran 10⁵)
    assert rows[0] == "| interpolation range (×) | NMU (5·10⁶ steps) |"
    assert rows[3] == (
        "| U[-2,2] → U[-6,-2] ∪ U[2,6] | 9/10 [60%, 98%]; solved at 4e+03, sparsity error 1.37e-07 |"
    )
    assert len(rows) == 2 + len(RANGE_PAIRS)
    both = table("iclr2020-range", models=["nac_mul", "nmu"]).splitlines()[0]
    assert both == "| interpolation range (×) | NMU (5·10⁶ steps) | NAC• |"  # the figure's order
    with pytest.raises(ValueError, match="figure_table models: nau not among iclr2020-range's"):
        table("iclr2020-range", models=["nau"])


def test_best_steps_are_counted_against_each_cells_ramp(tmp_path):
    # × NMU ramps over 10⁶ → 2·10⁶, + NAU over 5·10³ → 5·10⁴ (nalu_jax.models); a config's
    # train.reg_start / reg_end replace the model's; an unsolved seed is not counted
    root = tmp_path / "results"
    best = {  # per cell and λ̂: (solved, best_step) per seed
        "mul-nmu": [(1, 1_000_000), (1, 1_500_000), (1, 2_000_000), (0, 10)],
        "add-nau": [(1, 5_000), (1, 5_001), (1, 49_999), (1, 50_000)],
        "sub-nau": [(1, 5_000), (1, 60_000), (1, 70_000), (0, 80_000)],
    }
    train = {"sub-nau": {"reg_start": 65_000, "reg_end": 70_000}}
    for key, seeds in best.items():
        lambdas = (0.0, 0.01, 0.1, 1.0, 10.0, 100.0)
        parts = [_summary(sum(k for k, _ in seeds), 4, 5_000_000)
                 | {"setting_values": {"reg_scale": v}} for v in lambdas]  # fmt: skip
        _commit(root, f"iclr2020-lambda/{key}", {"settings": parts}, 4, 5_000_000)
        d = root / "iclr2020-lambda" / key
        for h in range(len(lambdas)):
            (d / "settings" / f"{h:03d}").mkdir(parents=True)
            rows = ["seed,solved,best_step"] + [f"{i},{k},{t}" for i, (k, t) in enumerate(seeds)]
            (d / "settings" / f"{h:03d}" / "seeds.csv").write_text("\n".join(rows) + "\n")
        config = {"model": {"name": key.split("-")[1]}, "train": train.get(key, {})}
        (d / "config.json").write_text(json.dumps(config))
    table = render.Renderer(str(root)).namespace()["figure_best_steps"]
    rows = table("iclr2020-lambda", ops=("mul", "add", "sub")).splitlines()
    assert rows[0] == "| λ̂_sparse | × NMU | + NAU | − NAU |"
    assert rows[2] == "| 0 | 1 / 1 / 1 | 1 / 2 / 1 | 2 / 0 / 1 |"
    assert rows[7] == "| 100 | 1 / 1 / 1 | 1 / 2 / 1 | 2 / 0 / 1 |"
    assert table("iclr2020-lambda").splitlines()[0] == "| λ̂_sparse | + NAU | − NAU | × NMU |"


def test_cell_best_steps_counts_a_table_cells_solvers_against_its_ramp(tmp_path):
    # × NMU's ramp is 10⁶ → 2·10⁶ (nalu_jax.models); an unsolved seed is not counted
    root = tmp_path / "results"
    _commit(root, "iclr2020-arithmetic/mul-nmu", _summary(4, 5, 5_000_000), 5, 5_000_000)
    d = root / "iclr2020-arithmetic" / "mul-nmu"
    rows = ["0,1,1000000", "1,1,1500000", "2,1,1999999", "3,1,2000000", "4,0,10"]
    (d / "seeds.csv").write_text("\n".join(["seed,solved,best_step", *rows]) + "\n")
    (d / "config.json").write_text(json.dumps({"model": {"name": "nmu"}, "train": {}}))
    best_steps = render.Renderer(str(root)).namespace()["cell_best_steps"]
    assert best_steps("iclr2020-arithmetic/mul-nmu") == (
        "1 at or before its start (10⁶), 2 inside, 1 at or after its end (2·10⁶)"
    )
    # the authors' 98 solved × NMU seeds, counted by hand from the best.model.step column of
    # stable-nalu's sft-last.csv: 0, 47 and 51
    assert best_steps("iclr2020-arithmetic/mul-nmu", published=True) == (
        "0 at or before its start (10⁶), 47 inside, 51 at or after its end (2·10⁶)"
    )
    _commit(root, "iclr2020-arithmetic/mul-gated_nau_nmu", _summary(0, 4, 10), 4, 10)
    (root / "iclr2020-arithmetic" / "mul-gated_nau_nmu" / "config.json").write_text(
        json.dumps({"model": {"name": "nmu"}, "train": {}})
    )
    with pytest.raises(ValueError, match="no published best steps for mul-gated_nau_nmu"):
        best_steps("iclr2020-arithmetic/mul-gated_nau_nmu", published=True)


def test_diverged_runs_errors_and_batch_rates_are_read_from_the_seeds(tmp_path):
    # a range cell of 3 seeds: U[0,1] (index 2) has two diverged seeds, U[0.1,0.2] (index 3)
    # fits its interpolation range and misses the extrapolation range; the rest are quiet
    root = tmp_path / "results"
    _range_cell(root, "nalu", (0,) * len(RANGE_PAIRS), n=3)
    d = root / "iclr2020-range" / "mul-nalu"
    summary = json.loads((d / "summary.json").read_text())
    head = "seed,solved,best_step,interpolation_mse,extrapolation_mse,diverged,diverged_at"
    seeds = {
        2: ["0,0,900,0.5,9.0,1,44801", "1,0,0,nan,nan,1,729", "2,0,1000,2300.0,3.2e7,0,-1"],
        3: ["0,0,1000,1.6568e-05,579136.5,0,-1", "1,0,1000,6.4e-4,591812.3,0,-1",
            "2,0,1000,2e-3,580000.0,0,-1"],
    }  # fmt: skip
    for h, part in enumerate(summary["settings"]):
        part["threshold"] = 9.2367e-4
        rows = seeds.get(h, [f"{k},0,1000,1.0,2.0,0,-1" for k in range(3)])
        (d / "settings" / f"{h:03d}").mkdir(parents=True)
        (d / "settings" / f"{h:03d}" / "seeds.csv").write_text("\n".join([head, *rows]) + "\n")
    (d / "summary.json").write_text(json.dumps(summary))
    ns = render.Renderer(str(root)).namespace()
    assert ns["figure_diverged"]("iclr2020-range", "nalu") == (
        "2 of 21 runs, 2 on U[0,1] (at 729 and 44,801 steps)"
    )
    assert ns["figure_diverged"]("iclr2020-range", "nalu", detail=False) == (
        "2 of 21 runs, all by step 44,801"
    )
    # the errors of the seeds that did not diverge, two significant digits, and how many
    # interpolation errors are below the threshold (2e-3 is not)
    assert ns["figure_errors"]("iclr2020-range", "nalu", "U[0.1,0.2]") == (
        "its 3 seeds: interpolation errors 1.7·10⁻⁵ to 2.0·10⁻³ (2 below the success threshold "
        "9.2·10⁻⁴), extrapolation errors 5.8·10⁵ to 5.9·10⁵"
    )
    assert ns["figure_errors"]("iclr2020-range", "nalu", 2) == (
        "its 1 seed that did not diverge (of 3): interpolation errors 2300 (0 below the success"
        " threshold 9.2·10⁻⁴), extrapolation errors 3.2·10⁷"
    )
    with pytest.raises(ValueError, match="figure_errors point: 'U\\[1' names no single point"):
        ns["figure_errors"]("iclr2020-range", "nalu", "U[1")  # U[1,2] and U[1.1,1.2]
    with pytest.raises(ValueError, match="figure_errors point: 7 is not an index"):
        ns["figure_errors"]("iclr2020-range", "nalu", 7)
    with pytest.raises(render.Missing):
        ns["figure_diverged"]("iclr2020-range", "nmu")
    # a cell without a diverged seed, and each batch's rate (one recorded, one not)
    for h in (2, 3):
        rows = [f"{k},0,1000,1.0,2.0,0,-1" for k in range(3)]
        (d / "settings" / f"{h:03d}" / "seeds.csv").write_text("\n".join([head, *rows]) + "\n")
    assert ns["figure_diverged"]("iclr2020-range", "nalu") == "none of 21 runs"
    prov = json.loads((d / "provenance.json").read_text())
    prov["batches"][0]["seed_steps_per_s"] = 31750.16
    prov["batches"].append(dict(prov["batches"][0], first_seed=3, seed_steps_per_s=None))
    prov["batches"].append(dict(prov["batches"][0], first_seed=6, stopped_at_step=2000))
    (d / "provenance.json").write_text(json.dumps(prov))
    assert ns["batch_rates"]("iclr2020-range/mul-nalu") == (
        "seeds 0–2: 31,750 seed-steps/s; seeds 3–5: rate not recorded; "
        "seeds 6–8: every seed diverged by step 2,000, not trained after"
    )


def test_spans_solvers_errors_seeds_against_and_wall_minutes_of_an_overlap_column(tmp_path):
    # an overlap column of 2 seeds per ratio (0, 0.1, 0.25, 0.5, 0.75, 1): ratio 1 solves both
    # (at 2·10⁶ and 3·10⁶), 0.5 one (seed 1), 0 has a diverged seed; thresholds differ by
    # ratio; seeds.csv writes a NaN error as an empty field
    root = tmp_path / "results"
    ratios = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
    solved = (0, 0, 0, 1, 0, 2)
    medians = {3: 4_000_000.0, 5: 2_500_000.0}
    parts = [_summary(k, 2, 5_000_000) | {"setting_values": {"overlap_ratio": r},
             "threshold": 0.1 if r < 1 else 0.2, "solved_at_median": medians.get(h)}
             for h, (r, k) in enumerate(zip(ratios, solved, strict=True))]  # fmt: skip
    _commit(root, "iclr2020-overlap/mul-nac_mul", {"settings": parts}, 2, 5_000_000)
    d = root / "iclr2020-overlap" / "mul-nac_mul"
    head = (
        "seed,solved,best_step,interpolation_mse,extrapolation_mse,solved_at,diverged,diverged_at"
    )
    seeds = {
        0: ["0,0,10,0.5,,,1,1234", "1,0,10,0.05,300.0,,0,-1"],
        3: ["0,0,10,2.0,40.0,,0,-1", "1,1,10,1e-9,1e-8,4000000,0,-1"],
        5: ["0,1,10,1e-9,1e-8,2000000,0,-1", "1,1,10,1e-9,1e-8,3000000,0,-1"],
    }
    for h in range(len(ratios)):
        rows = seeds.get(h, [f"{k},0,10,3.0,,,0,-1" for k in range(2)])
        (d / "settings" / f"{h:03d}").mkdir(parents=True)
        (d / "settings" / f"{h:03d}" / "seeds.csv").write_text("\n".join([head, *rows]) + "\n")
    prov = json.loads((d / "provenance.json").read_text())
    prov["batches"][0] |= {"wall_time_s": 1810.0, "seed_steps_per_s": 16791.4}
    prov["batches"].append(dict(prov["batches"][0], first_seed=2, wall_time_s=8700.0,
                                seed_steps_per_s=17224.8))  # fmt: skip
    (d / "provenance.json").write_text(json.dumps(prov))
    ns = render.Renderer(str(root)).namespace()
    span = ns["figure_span"]
    assert span("iclr2020-overlap", "nac_mul", points=["1"]) == "2 of 2"  # a label, not "1…"
    assert span("iclr2020-overlap", "nac_mul", points=["0", "0.5", 2]) == "0 to 1 of 2"
    assert span("iclr2020-overlap", "nac_mul", what="diverged") == "0 to 1 of 2"
    assert span("iclr2020-overlap", "nac_mul", what="solved_at_median") == "2.5·10⁶ to 4.0·10⁶"
    assert span("iclr2020-overlap", "nac_mul", what="solved_at_median", points=[0]) == (
        "no seed solved"
    )
    with pytest.raises(ValueError, match="figure_span what: 'best' is not solved, diverged"):
        span("iclr2020-overlap", "nac_mul", what="best")
    with pytest.raises(ValueError, match="figure_span point: '0.3' names no single point"):
        span("iclr2020-overlap", "nac_mul", points=["0.3"])
    with pytest.raises(ValueError, match="figure_span point: 6 is not an index"):
        span("iclr2020-overlap", "nac_mul", points=[6])
    with pytest.raises(render.Missing):
        span("iclr2020-overlap", "nmu")
    assert ns["figure_solvers"]("iclr2020-overlap", "nac_mul") == (
        "seed 1 at overlap ratio 0.5 (at 4,000,000 steps) and seeds 0 and 1 at overlap ratio 1 "
        "(at 2,000,000 and 3,000,000 steps)"
    )
    errors = ns["figure_errors"]
    # every point: the 11 runs that did not diverge, against each point's own threshold; a NaN
    # extrapolation error is left out of the span
    assert errors("iclr2020-overlap", "nac_mul") == (
        "its 11 runs that did not diverge (of 12): interpolation errors 1.0·10⁻⁹ to 3 (4 below "
        "their points' success thresholds), extrapolation errors 1.0·10⁻⁸ to 300"
    )
    assert errors("iclr2020-overlap", "nac_mul", unsolved=True) == (
        "its 8 runs that did not solve or diverge (of 9): interpolation errors 0.05 to 3 (1 "
        "below the success threshold 0.1), extrapolation errors 40 to 300"  # ratio 1's solved
    )
    assert (
        errors("iclr2020-overlap", "nac_mul", "1", unsolved=True) == "no seeds that did not solve"
    )
    assert errors("iclr2020-overlap", "nac_mul", "0.75") == (
        "its 2 seeds: interpolation errors 3 (0 below the success threshold 0.1), extrapolation "
        "errors not finite"
    )
    # a one-setting cell against the figure's points: its rows as the point's, then changed
    table = root / "iclr2020-arithmetic" / "mul-nac_mul"
    _commit(root, "iclr2020-arithmetic/mul-nac_mul", _summary(1, 2, 5_000_000), 2, 5_000_000)

    def against(rows, point="0.5", **kw):
        (table / "seeds.csv").write_text("\n".join([head, *rows]) + "\n")
        return ns["seeds_against"](f"iclr2020-overlap/mul-nac_mul@{point}",
                                   "iclr2020-arithmetic/mul-nac_mul", **kw)  # fmt: skip

    assert against(seeds[3]) == "identical per-seed rows (seeds 0–1)"
    assert against(["0,0,10,2.5,40.0,,0,-1", "1,1,10,1e-9,1e-8,4100000,0,-1"]) == (
        "the same 1 of 2 seeds solve (seeds 0–1), solved-at within 2.4%"  # 10⁵ of 4.1·10⁶
    )
    assert against(["0,0,10,2.5,40.0,,0,-1", "1,1,10,2e-9,1e-8,4000000,0,-1"]) == (
        "the same 1 of 2 seeds solve (seeds 0–1), at the same steps"
    )
    assert against(["0,1,10,1e-9,1e-8,4500000,0,-1", "1,0,10,2.0,40.0,,0,-1"],
                   names=("the figure's run", "the table's")) == (
        "1 of 2 solve in each (seeds 0–1), seed 1 only in the figure's run (at 4,000,000 "
        "steps) and seed 0 only in the table's (at 4,500,000 steps)"
    )  # fmt: skip
    assert against(["0,1,10,1e-9,1e-8,1000000,0,-1", "1,1,10,1e-9,1e-8,5000000,0,-1"], "1") == (
        "the same 2 of 2 seeds solve (seeds 0–1), solved-at within 100%"  # 2·10⁶ against 10⁶
    )
    assert against(["1,0,10,2.0,40.0,,0,-1"], "0.75") == "no seed solves in either (seed 1)"
    with pytest.raises(ValueError, match="seeds_against: .* hold no seed in common"):
        against(["5,0,10,2.0,40.0,,0,-1"])
    assert ns["wall_minutes"]("iclr2020-overlap/mul-nac_mul") == "175 min"
    assert ns["batch_rates"]("iclr2020-overlap/mul-nac_mul", minutes=True) == (
        "seeds 0–1: 30 min, 16,791 seed-steps/s; seeds 2–3: 145 min, 17,225"
    )
    # one batch per cell, a span over cells in whole minutes (30.2 and 145 min; the table's
    # cell 10.4); one value where every cell rounds alike
    minutes = ns["cell_minutes"]
    assert minutes("iclr2020-overlap", "mul-nac_mul") == "30 min"
    assert minutes("iclr2020-overlap", "mul-nac_mul", batch=1) == "145 min"
    assert minutes("iclr2020-overlap", "mul-nac_mul", batch=-1) == "145 min"
    prov = json.loads((table / "provenance.json").read_text())
    prov["batches"][0]["wall_time_s"] = 624.0
    (table / "provenance.json").write_text(json.dumps(prov))
    assert minutes("iclr2020-arithmetic", "mul-nac_mul") == "10 min"
    prov["batches"].append(dict(prov["batches"][0], first_seed=2, wall_time_s=1810.0))
    (table / "provenance.json").write_text(json.dumps(prov))
    assert minutes("iclr2020-arithmetic", "mul-nac_mul", batch=1) == "30 min"
    _commit(root, "iclr2020-arithmetic/div-nmu", _summary(0, 2, 5_000_000), 2, 5_000_000)
    assert minutes("iclr2020-arithmetic", "div-nmu", "mul-nac_mul") == "2–10 min"  # 120 s
    assert minutes("iclr2020-arithmetic", "mul-nac_mul", "div-nmu") == "2–10 min"
    assert minutes("iclr2020-arithmetic", "div-nmu", "mul-nac_mul", seconds=True) == "120–624 s"
    assert minutes("iclr2020-arithmetic", "div-nmu", seconds=True) == "120 s"
    with pytest.raises(render.Missing, match="mul-nac_mul: batch 2 .it has 2."):
        minutes("iclr2020-overlap", "mul-nac_mul", batch=2)
    with pytest.raises(ValueError, match="cell_minutes cells: name at least one"):
        minutes("iclr2020-overlap")
    with pytest.raises(render.Missing):
        minutes("iclr2020-overlap", "mul-nmu")
    # each cell's fastest batch, scaled to the seeds asked for: mul-nac_mul's 624 s for 2
    # seeds (its other batch took 1,810 s), div-nmu's 120 s for 2 and then 216 s for 4
    fastest = ns["fastest_minutes"]
    assert fastest("iclr2020-arithmetic", "mul-nac_mul", "div-nmu", seeds=2) == "2–10 min"
    assert fastest("iclr2020-arithmetic", "mul-nac_mul", "div-nmu") == "20–104 min"
    nmu = root / "iclr2020-arithmetic" / "div-nmu" / "provenance.json"
    prov = json.loads(nmu.read_text())
    prov["batches"].append(dict(prov["batches"][0], first_seed=2, num_seeds=4, wall_time_s=216.0))
    nmu.write_text(json.dumps(prov))
    assert fastest("iclr2020-arithmetic", "div-nmu") == "18 min"  # 216 s × 20 / 4
    with pytest.raises(ValueError, match="fastest_minutes cells: name at least one"):
        fastest("iclr2020-arithmetic")
    with pytest.raises(ValueError, match="fastest_minutes seeds: a positive count, not 0"):
        fastest("iclr2020-arithmetic", "div-nmu", seeds=0)
    with pytest.raises(render.Missing):
        fastest("iclr2020-arithmetic", "add-nmu")


def test_appendix_c_published_rows_name_their_source():
    from nalu_jax.reproduce import tables

    pub = tables.published(specs.table("iclr2020-arithmetic"))
    sources = {k: r["source"] for k, r in pub.items()}
    assert {s for k, s in sources.items() if k[1] == "gated_nau_nmu"} == {
        "function_task_static_all.tex"
    }
    assert {s for k, s in sources.items() if k[1] != "gated_nau_nmu"} == {"sft-short.csv"}
    # App. C's ÷, √z and z² rows (the tex: √z NAC• 7%, NALU 2%; z² NMU 100%, 1.2·10⁶)
    assert pub[("root", "nac_mul")]["success_rate"] == 0.07
    assert pub[("root", "nalu")]["success_rate"] == 0.02
    assert pub[("squared", "nmu")]["solved_at_median"] == 1_219_500.0
    assert all(r["success_rate"] == 0.0 for (op, _), r in pub.items() if op == "div")


def test_a_figure_workdir_table_names_each_rows_point(tmp_path):
    from nalu_jax.reproduce import tables

    spec = specs.table("iclr2020-hidden-size")
    for point, k in (("h2", 9), ("h5", 1)):
        d = tmp_path / "cells" / f"mul-nmu-{point}"
        d.mkdir(parents=True)
        s = _summary(k, 10, 20_000) | {
            "diverged": 0, "solved_at_median": None, "solved_at_mean": None,
            "solved_at_interval": [None, None], "sparsity_error_mean": None,
            "sparsity_error_interval": [None, None],
        }  # fmt: skip
        (d / "summary.json").write_text(json.dumps(s))
    rows = tables.collect(spec, str(tmp_path))
    assert [(r["paper_name"], r["solved"]) for r in rows] == [("NMU [h2]", 9), ("NMU [h5]", 1)]


@pytest.mark.slow
def test_smoke_range_figure_trains_as_one_program_and_renders(tmp_path):
    from nalu_jax.reproduce import reproduce
    from nalu_jax.reproduce.cells import SMOKE

    lines = []
    results = tmp_path / "results"
    reproduce("iclr2020-range", str(tmp_path / "w"), models=["nmu"], seeds=2, steps=1000,
              overrides=SMOKE, calibration_steps=0, progress=False, log=lines.append,
              results=str(results))  # fmt: skip
    assert any(line.startswith("  mul-nmu: 14 runs × 1,000 steps = 1.4e+04") for line in lines)
    summary = json.loads((results / "iclr2020-range/mul-nmu/summary.json").read_text())
    assert len(summary["settings"]) == 7
    table = render.Renderer(str(results)).namespace()["figure_table"]("iclr2020-range")
    assert table.count("/2 [") == 7  # every pair of the one committed cell, 2 seeds each


def test_the_claims_cells_at_a_larger_budget_set_the_verdicts_fraction(tmp_path):
    root = tmp_path / "results"
    for model in ("nmu", "nac_mul"):
        for point in ("h2", "h5"):
            path = f"iclr2020-hidden-size/mul-{model}-{point}"
            _commit(root, path, _summary(0, 10, 100_000), 10, 100_000)
    _commit(root, "iclr2020-hidden-size/mul-nmu-h10", _summary(4, 10, 2_000_000), 10, 2_000_000)
    _commit(root, "iclr2020-hidden-size/mul-nac_mul-h10", _summary(0, 10, 2_000_000), 10,
            2_000_000)  # fmt: skip
    ns = render.Renderer(str(root)).namespace()
    rows = ns["figure_table"]("iclr2020-hidden-size").splitlines()
    # the two cells off the figure's usual budget say theirs; the others do not
    assert rows[2].startswith("| 2 | 0/10 [0%, 28%] | 0/10 [0%, 28%] | — |")
    assert rows[10].startswith(
        "| 10 | 4/10 [17%, 69%] (2·10⁶ steps) | 0/10 [0%, 28%] (2·10⁶ steps) | — |"
    )
    # the claim reads hidden size 10 only: 10 seeds × 2·10⁶ of 50 × 5·10⁶ = 8%, not the
    # 1/250 of the other points
    # "more often": 4/10 against 0/10 by Fisher's exact test, one-sided: all four solved seeds
    # in the NMU's ten, C(10,4) / C(20,4) = 210 / 4845 = 0.0433 < 5%
    assert ns["figure_verdict"]("iclr2020-hidden-size") == (
        "not settled at 8% of the paper's seed-steps in its least-run cell: the claim holds on"
        " the committed cells (6 of 54 cells committed); NMU 4/10 against NAC• 0/10 at hidden size 10, Fisher's"
        " exact test one-sided p = 0.043"
    )
    # the budget line counts every committed cell's own steps: 4 × 10 × 10⁵ + 2 × 10 × 2·10⁶
    assert ns["figure_budget"]("iclr2020-hidden-size").startswith(
        "6 of 54 cells, 4.4e+07 seed-steps"
    )


def test_more_often_is_fishers_exact_test_one_sided():
    from nalu_jax.reproduce.seedtests import more_often

    # 2 of 10 against 0 of 10: both solved seeds in the first ten, C(10,2) / C(20,2) = 45 / 190
    held, p = more_often((2, 10), (0, 10))
    assert not held and p == pytest.approx(45 / 190)
    # 5 of 10 against 0 of 10: C(10,5) / C(20,5) = 252 / 15504
    held, p = more_often((5, 10), (0, 10))
    assert held and p == pytest.approx(252 / 15504)
    assert not more_often((0, 10), (5, 10))[0]  # one-sided: the other direction never holds


def test_a_higher_rate_that_the_test_cannot_tell_apart_settles_nothing(tmp_path):
    root = tmp_path / "results"
    _commit(root, "iclr2020-hidden-size/mul-nmu-h10", _summary(2, 10, 5_000_000), 10, 5_000_000)
    _commit(root, "iclr2020-hidden-size/mul-nac_mul-h10", _summary(0, 10, 5_000_000), 10,
            5_000_000)  # fmt: skip
    ns = render.Renderer(str(root)).namespace()
    assert ns["figure_verdict"]("iclr2020-hidden-size") == (
        "not settled at 1/5 of the paper's seed-steps in its least-run cell (2 of 54 cells"
        " committed): NMU 2/10 against NAC• 0/10 at hidden size 10, Fisher's exact test one-sided p = 0.24"
    )


def test_steps_read_as_powers_of_ten_where_shorter():
    from nalu_jax.reproduce.figures_render import _steps

    assert _steps(2_000_000) == "2·10⁶"
    assert _steps(100_000) == "10⁵"
    assert _steps(25_000) == "25,000"
    assert _steps(15_000_000) == "1.5·10⁷"
    assert _steps(250_000) == "2.5·10⁵"
    assert _steps(1_250_000) == "1.25·10⁶"
    assert _steps(10_000_000) == "10⁷"
    assert _steps(16_000) == "16,000"


def test_the_gated_unit_is_stacked_where_the_scripts_stack_it():
    from nalu_jax.models.arithmetic import resolve_layers

    # App. C's all-models table and the dataset-parameter figures: the gated unit in both
    # layers (no --first-layer in stable-nalu's scripts); the gating table: over an NAU
    def layers(name, op="mul"):
        spec = specs.table(name)
        cell = specs.cells(spec, ["gated_nau_nmu"], [op])[0]
        m = cell_config(spec, cell).model
        return resolve_layers(m.name, first_layer=m.first_layer)

    for name in ("iclr2020-arithmetic", "iclr2020-hidden-size", "iclr2020-range",
                 "iclr2020-input-size", "iclr2020-overlap", "iclr2020-subset"):  # fmt: skip
        assert layers(name) == ("gated_nau_nmu", "gated_nau_nmu"), name
    assert layers("iclr2020-arithmetic", "div") == ("gated_nau_nmu", "gated_nau_nmu")
    assert layers("iclr2020-gate") == layers("iclr2020-gate", "add") == ("nau", "gated_nau_nmu")


def test_the_stacked_gated_unit_overflows_float32_at_initialisation_above_one():
    # the figures' gated NAU/NMU (both layers) multiplies, in its first layer's NMU path, 100
    # factors W·x + 1 − W with W in U[0.25, 0.75] at initialisation: on U[10,20] each factor is
    # at least 1 + 0.25·9 = 3.25, and 3.25¹⁰⁰ ≈ 1.7·10⁵¹ is past float32's 3.4·10³⁸, so the
    # network's output is not finite at any initialisation (the figure's seeds diverge at step
    # 0 there); on U[0.1,0.2] every factor is below 1 and the output is finite
    import jax
    import numpy as np
    from flax import nnx

    from nalu_jax.models.arithmetic import build_model

    assert 3.25**100 > float(np.finfo(np.float32).max)
    spec = specs.table("iclr2020-range")
    m = cell_config(spec, specs.cells(spec, ["gated_nau_nmu"], ["mul"])[0]).model
    for seed in range(5):
        net = build_model(m.name, 100, rngs=nnx.Rngs(seed), hidden_size=m.hidden_size,
                          first_layer=m.first_layer)  # fmt: skip
        key = jax.random.key(seed)
        big = jax.random.uniform(key, (16, 100), minval=10.0, maxval=20.0)
        small = jax.random.uniform(key, (16, 100), minval=0.1, maxval=0.2)
        first = net.layers[0]
        assert np.all(np.asarray(first.nmu(big)) == np.inf)
        assert not np.isfinite(np.asarray(net(big))).any()
        assert np.isfinite(np.asarray(net(small))).all()


def test_a_study_renders_its_own_cells(tmp_path):
    # cells under results/studies/NAME are read as a results root of their own
    root = tmp_path / "results"
    _range_cell(root / "studies" / "x", "nmu", (0, 3, 0, 0, 10, 0, 0))
    with pytest.raises(render.Missing):
        render.Renderer(str(root)).namespace()["figure_solved"]("iclr2020-range")
    ns = render.Renderer(str(root)).namespace()
    expr = 'study("studies/x").figure_solved("iclr2020-range")'
    assert render.Renderer(str(root)).render("{{ " + expr + " }}") == "13 of 70 seeds"
    assert ns["study"]("studies/x").root == str(root / "studies" / "x")
    # what a study lacks is named under its path
    missing = render.Renderer(str(root)).render(
        '{{ study("studies/x").figure_solved("iclr2020-hidden-size") }}'
    )
    assert missing.endswith("(`results/studies/x/iclr2020-hidden-size`)")
