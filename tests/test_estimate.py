"""The wall time ``launch.reproduce`` prints before a cell is within 25% of the cell's own,
give or take the timing noise of the machine (measured here: two identical timing runs)."""

import time

import pytest

from nalu_jax.engine.run import run
from nalu_jax.experiments import EXPERIMENTS
from nalu_jax.reproduce import cells, specs


def _cell_config(steps):
    spec = specs.table("iclr2020-arithmetic")
    cell = specs.cells(spec, ["nau"], ["add"])[0]
    return cells.configs(spec, [cell], 2, steps, cells.SMOKE)["add-nau"]


@pytest.mark.slow
def test_estimate_is_within_a_quarter_of_the_wall_time(tmp_path):
    config = _cell_config(4_000)
    first, second = (cells.calibrate(config, 1_000) for _ in range(2))
    noise = abs(first["wall_s"] - second["wall_s"]) / min(first["wall_s"], second["wall_s"])
    estimate = cells.estimate_s(config, second)
    t0 = time.perf_counter()
    run(EXPERIMENTS["arithmetic"], config, str(tmp_path), progress=False)
    wall = time.perf_counter() - t0
    assert abs(estimate - wall) <= (0.25 + noise) * wall, (estimate, wall, noise)


def test_estimate_is_the_fixed_cost_plus_the_steps_at_the_timing_runs_speed():
    config = _cell_config(10_000)  # 2 seeds × 10,000 steps = 20,000 seed-steps
    timing = {"seed_steps_per_s": 1_000.0, "compile_s": 2.0, "wall_s": 9.0, "seed_steps": 4_000}
    assert cells.estimate_s(config, timing) == pytest.approx(5.0 + 20.0)  # 9 - 4 fixed
    timing["wall_s"] = 4.5  # faster than its own speed says: at least the compile time
    assert cells.estimate_s(config, timing) == pytest.approx(2.0 + 20.0)
