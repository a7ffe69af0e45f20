"""The wall time ``launch.reproduce`` prints before a cell: the timing run it comes from and
the arithmetic that extrapolates it (its accuracy on a machine: ``benchmarks/estimate.py``)."""

import pytest

from nalu_jax.reproduce import cells, specs


def _cell_config(steps):
    spec = specs.table("iclr2020-arithmetic")
    cell = specs.cells(spec, ["nau"], ["add"])[0]
    return cells.configs(spec, [cell], 2, steps, cells.SMOKE)["add-nau"]


def test_calibration_times_whole_evaluation_periods_of_the_cells_runs_and_leaves_it_as_it_was():
    # how close the estimate comes to a cell's wall time is a speed figure, printed by
    # benchmarks/estimate.py; here: what the timing run ran and what its record says
    config = _cell_config(4_000)  # 2 seeds, evaluation every 500 steps (--smoke's sizes)
    before = config.to_json()
    timing = cells.calibrate(config, 1_300)  # whole evaluation periods: 1,000 steps
    assert config.to_json() == before
    assert timing["seed_steps"] == 2 * 1_000
    assert 0 < timing["compile_s"] < timing["wall_s"]
    assert timing["seed_steps_per_s"] > timing["seed_steps"] / timing["wall_s"]  # compile excluded


def test_estimate_is_the_fixed_cost_plus_the_steps_at_the_timing_runs_speed():
    config = _cell_config(10_000)  # 2 seeds × 10,000 steps = 20,000 seed-steps
    timing = {"seed_steps_per_s": 1_000.0, "compile_s": 2.0, "wall_s": 9.0, "seed_steps": 4_000}
    assert cells.estimate_s(config, timing) == pytest.approx(5.0 + 20.0)  # 9 - 4 fixed
    timing["wall_s"] = 4.5  # faster than its own speed says: at least the compile time
    assert cells.estimate_s(config, timing) == pytest.approx(2.0 + 20.0)


def test_plan_only_prints_the_plan_and_runs_nothing(tmp_path):
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    # a committed cell at more seeds than it holds: the plan says it extends it, counts the
    # seed-steps of the seeds it lacks only, and no workdir or result is written
    results = tmp_path / "results"
    work = tmp_path / "work"
    cmd = [sys.executable, "-m", "launch.reproduce", "--table=iclr2020-hidden-size",
           "--models=nmu", "--points=h10", "--seeds=60", "--steps=5000000",
           "--calibration_steps=0", f"--workdir={work}", "--plan_only"]  # fmt: skip
    shutil.copytree(f"{ROOT}/results/iclr2020-hidden-size/mul-nmu-h10",
                    results / "iclr2020-hidden-size" / "mul-nmu-h10")  # fmt: skip
    before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    out = subprocess.run([*cmd, f"--results={results}"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout + out.stderr
    assert "results hold seeds 0–49; running the 10 more" in text, text
    assert "mul-nmu-h10: 10 runs × 5,000,000 steps = 5e+07 seed-steps; GPU ≈" in text, text
    assert "plan only: no cell was run or written" in text
    assert not work.exists()
    assert before == {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
    both = subprocess.run([*cmd, "--report_only"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert both.returncode == 2 and "exclude each other" in both.stderr, both.stderr
