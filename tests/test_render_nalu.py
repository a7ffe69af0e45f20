"""The NALU-paper template functions (nalu_jax/reproduce/render_nalu.py) on hand-made cells."""

import json

import pytest

from nalu_jax.reproduce import render, render_nalu

_MACHINE = {"cpu": "AMD EPYC", "cores": 2, "platform": "cpu", "device_kind": "cpu"}


def _cell(root, name, solved_at_1000, seeds=4, steps=4_000, wall=600.0):
    d = root / name
    d.mkdir(parents=True)
    per_length = [{"length": 10, "solved": seeds}, {"length": 1000, "solved": solved_at_1000}]
    summary = {"num_seeds": seeds, "num_steps": steps, "per_length": per_length}
    (d / "summary.json").write_text(json.dumps(summary))
    batch = {"num_seeds": seeds, "num_steps": steps, "wall_time_s": wall, "machine": _MACHINE,
             "first_seed": 0, "commit": "0" * 40, "date": "2026-11-25T00:00:00Z"}  # fmt: skip
    (d / "provenance.json").write_text(json.dumps({"batches": [batch]}))


def _claims(root):
    r = render.Renderer(str(root))
    return render_nalu.length_claims(r, "g", ["nac_add", "nalu"], ["lstm"], 1000, 100_000)


def test_every_part_holding_is_reproduced_at_the_fraction(tmp_path):
    _cell(tmp_path, "g/nac_add", 1), _cell(tmp_path, "g/nalu", 3), _cell(tmp_path, "g/lstm", 0)
    v = _claims(tmp_path)
    assert v.startswith("**reproduced at 1/25 of the paper's steps**")
    assert "nalu extrapolates (3/4 at 1,000)" in v and "lstm fails (0/4 at 1,000)" in v


def test_short_budget_failures_are_not_settled(tmp_path):
    _cell(tmp_path, "g/nac_add", 0), _cell(tmp_path, "g/nalu", 0), _cell(tmp_path, "g/lstm", 2)
    v = _claims(tmp_path)
    # the units' failures at 4% of the steps are not settled; the LSTM's success is a wrong part
    assert v.startswith("**partly**")
    assert "not settled at this budget: nac_add does not extrapolate yet (0/4" in v
    assert "does not hold at 1/25 of the paper's steps: lstm does not fail (2/4" in v


def test_no_part_at_a_short_budget_is_not_settled(tmp_path):
    _cell(tmp_path, "g/nac_add", 0), _cell(tmp_path, "g/nalu", 0), _cell(tmp_path, "g/lstm", 0)
    v = _claims(tmp_path)
    assert v.startswith("**partly**")  # the LSTM part holds
    for name in ("nac_add", "nalu"):
        assert f"{name} does not extrapolate yet (0/4 at 1,000)" in v


def test_full_budget_failures_are_not_reproduced(tmp_path):
    for name, solved in (("nac_add", 0), ("nalu", 0), ("lstm", 1)):
        _cell(tmp_path, f"g/{name}", solved, steps=100_000)
    assert _claims(tmp_path).startswith("**not reproduced**:")


def test_a_cell_of_another_group_is_named_from_the_root(tmp_path):
    _cell(tmp_path, "g-rz/nmu", 2), _cell(tmp_path, "g/lstm", 0)
    r = render.Renderer(str(tmp_path))
    v = render_nalu.length_claims(r, "g", ["g-rz/nmu"], ["lstm"], 1000, 100_000,
                                  {"g-rz/nmu": "NMU (R_z)"})  # fmt: skip
    assert v == ("**reproduced at 1/25 of the paper's steps**: NMU (R_z) extrapolates "
                 "(2/4 at 1,000); lstm fails (0/4 at 1,000)")  # fmt: skip


def test_unknown_length_and_missing_cell(tmp_path):
    _cell(tmp_path, "g/nac_add", 1)
    r = render.Renderer(str(tmp_path))
    with pytest.raises(ValueError, match="no test length 500"):
        render_nalu.length_claims(r, "g", ["nac_add"], [], 500, 100_000)
    with pytest.raises(render.Missing):
        render_nalu.length_claims(r, "g", ["nalu"], [], 1000, 100_000)


def test_budget_line_states_seed_steps_fraction_wall_and_machine(tmp_path):
    _cell(tmp_path, "g/nalu", 1, seeds=4, steps=4_000, wall=720.0)
    line = render_nalu.budget_line(render.Renderer(str(tmp_path)), 100_000, "g/nalu")
    assert line == (
        "`g/nalu`: 4 seeds × 4,000 steps = 16,000 seed-steps, 1/25 of the paper's steps, "
        "12.0 min on AMD EPYC, 2 cores"
    )


def test_sm_table_shows_each_cells_size_steps_and_ranges(tmp_path):
    d = tmp_path / "primer-single-module-sizes" / "sub-nau_in100"
    d.mkdir(parents=True)
    settings = [{"setting_values": {"range_index": k}, "solved": k % 3, "num_seeds": 25}
                for k in range(1, 10)]  # fmt: skip
    (d / "summary.json").write_text(json.dumps({"settings": settings}))
    (d / "config.json").write_text(json.dumps({"task": {"input_size": 100}, "num_steps": 100000}))
    (d / "provenance.json").write_text(json.dumps({"batches": []}))
    table = render_nalu.sm_table(
        render.Renderer(str(tmp_path)), render.Missing, "primer-single-module-sizes"
    )
    rows = {line.split(" | ")[1]: line for line in table.splitlines()[2:]}
    assert rows["NAU, 100 inputs"] == (
        "| − | NAU, 100 inputs | 100 | 100,000 | 1/25 | 2/25 | 0/25 | 1/25 | 2/25 | 0/25 | "
        "1/25 | 2/25 | 0/25 |"
    )
    assert rows["NAU, 10 inputs"].count("—") == 11  # not committed: dashes, no figures
    with pytest.raises(render.Missing):
        render_nalu.sm_table(
            render.Renderer(str(tmp_path / "none")), render.Missing, "primer-single-module-sizes"
        )


def test_reference_misread_counts_reference_seeds_with_no_digit_right(tmp_path):
    _cell(tmp_path, "g/nmu", 1)
    (tmp_path / "g/nmu/reference").mkdir()
    (tmp_path / "g/nmu/reference/seeds.csv").write_text(
        "seed,image_accuracy,mse_last_1\n0,0.71,2.0\n1,0.0,9.0\n2,0.5,1.0\n"
    )
    assert render_nalu.reference_misread(render.Renderer(str(tmp_path)), "g/nmu") == "1 of 3"


def test_a_fraction_that_is_no_unit_fraction_is_a_percentage(tmp_path):
    _cell(tmp_path, "g/nmu", 1, steps=16_000)
    line = render_nalu.budget_line(render.Renderer(str(tmp_path)), 470_000, "g/nmu")
    assert "3.4% of the paper's steps" in line  # 16,000 / 470,000; 1/29.4 is no unit fraction


def test_scaled_table_rows_and_a_missing_cell(tmp_path):
    d = tmp_path / "t" / "add-nalu"
    d.mkdir(parents=True)
    summary = {"num_seeds": 2, "num_steps": 20_000, "solved": 1, "success_interval": [0.1, 0.9]}
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "provenance.json").write_text(json.dumps({"batches": []}))
    (d / "seeds.csv").write_text("seed,extrapolation_mse,interpolation_mse\n0,1.0,0.5\n1,4.0,0.5\n")
    (d / "random_baseline.csv").write_text("seed,valid_mse,test_mse\n0,1.0,100.0\n1,1.0,10.0\n")
    r = render.Renderer(str(tmp_path))
    table = render_nalu.scaled_table(
        r,
        render.Missing,
        render.NO_DATA,
        "t",
        [("add", "+")],
        [("nalu", "NALU"), ("relu6", "ReLU6")],
    )
    # 100·1/100 = 1 and 100·4/10 = 40 on the test set (median 20.5); 50 on validation
    assert table.splitlines() == [
        "| + | NALU | 2 × 20,000 | 1/2 [10%, 90%] | 20 [1, 40] | 50 [50, 50] |",
        "| + | ReLU6 | *no committed data* (`results/t/add-relu6`) | — | — | — |",
    ]
    with pytest.raises(render.Missing):
        render_nalu.scaled_table(
            r, render.Missing, render.NO_DATA, "t", [("mul", "×")], [("nalu", "NALU")]
        )
