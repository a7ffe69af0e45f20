"""Model selection over restarts: metrics.best_of and launch/best_of.py."""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from nalu_jax.reporting import metrics


def test_best_of_keeps_the_lowest_validation_mse_per_run():
    valid = [0.3, 1e-9, 5.0, 2.0, 7.0, 7.0]  # runs (0, 1), (2, 3), (4, 5): a tie in the last
    assert metrics.best_of(valid, 2).tolist() == [1, 3, 4]  # earliest on ties
    assert metrics.best_of(valid, 3).tolist() == [1, 3]
    assert metrics.best_of(valid, 1).tolist() == list(range(6))
    assert metrics.best_of(valid, 6).tolist() == [1]


def test_best_of_never_keeps_nan_or_diverged_unless_nothing_else():
    valid = [float("nan"), 0.5, 1e-9, 0.1, float("nan"), float("nan")]
    diverged = [False, False, True, False, False, False]
    # run 0: NaN loses to 0.5; run 1: the diverged seed's 1e-9 loses to 0.1; run 2: all bad
    assert metrics.best_of(valid, 2, diverged).tolist() == [1, 3, 4]


@pytest.mark.parametrize("k, n", [(0, 4), (-1, 4), (3, 4), (2, 0), (1.5, 4), (True, 4)])
def test_best_of_rejects_bad_k(k, n):
    with pytest.raises(ValueError, match="k"):
        metrics.best_of(np.ones(n), k)


SEEDS_CSV = """seed,solved,best_step,interpolation_mse,extrapolation_mse,solved_at,sparsity_error,diverged,diverged_at
48,0,15000,0.09,1e7,,,0,-1
49,1,50000,2e-10,1e-3,40000,1e-7,0,-1
50,1,50000,3e-10,2e-3,50000,1e-7,0,-1
51,0,12000,0.2,1e9,,,0,-1
52,0,50000,,,,,1,300
53,0,14000,0.1,1e8,,,0,-1
54,1,50000,1e-11,1e-4,20000,1e-7,0,-1
55,1,50000,4e-11,3e-4,30000,1e-7,0,-1
"""
LENGTHS_CSV = """seed,mse_1,solved_1,mse_1000,solved_1000
48,1.0,0,1e7,0
49,1e-10,1,1e-3,1
50,1e-10,1,2e-3,1
51,1.0,0,1e9,0
52,nan,0,nan,0
53,1.0,0,1e8,0
54,1e-11,1,1e-4,1
55,1e-11,1,3e-4,0
"""


def _run(*args):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", "launch.best_of", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_best_of_script_table(tmp_path):
    (tmp_path / "nau").mkdir()
    (tmp_path / "nau" / "seeds.csv").write_text(SEEDS_CSV)
    (tmp_path / "nau" / "lengths.csv").write_text(LENGTHS_CSV)
    out = _run("--k=2", "--models=nau", f"--workdir={tmp_path}")
    assert out.returncode == 0, out.stderr[-3000:]
    text = (tmp_path / "best_of_2.md").read_text()
    assert text == out.stdout.rstrip("\n") + "\n"
    # runs (48, 49) → 49 solved; (50, 51) → 50 solved; (52 diverged, 53) → 53 unsolved;
    # (54, 55) → 54 solved: 3 of 4 runs, against 4 of 8 single initialisations
    lo, hi = metrics.wilson_interval(3, 4)
    lo1, hi1 = metrics.wilson_interval(4, 8)
    row = (
        f"| nau | 48–55 | 4/8 50.0% [{lo1:.1%}, {hi1:.1%}] | 4 | 3/4 75.0% [{lo:.1%}, {hi:.1%}] | "
        "49, 50, 53, 54 |"
    )
    assert row in text.splitlines()
    # per length: the kept seeds 49, 50, 53, 54 at 1,000 are solved 1, 1, 0, 1 (55 would be 0)
    line_1000 = next(ln for ln in text.splitlines() if ln.startswith("| 1000 |"))
    assert line_1000.startswith(
        f"| 1000 | 3/4 75.0% [{lo:.1%}, {hi:.1%}] (3/8 37.5% "
    )  # 55 fails here


def test_best_of_script_bad_input(tmp_path):
    (tmp_path / "nau").mkdir()
    (tmp_path / "nau" / "seeds.csv").write_text(SEEDS_CSV)
    out = _run("--k=3", "--models=nau", f"--workdir={tmp_path}")
    assert out.returncode == 2 and "multiple of k=3" in out.stderr
    out = _run("--k=0", "--models=nau", f"--workdir={tmp_path}")
    assert out.returncode == 2 and "--k" in out.stderr
    out = _run("--k=2", "--models=lstm", f"--workdir={tmp_path}")
    assert out.returncode == 2 and "no seeds.csv" in out.stderr
    assert not (tmp_path / "best_of_3.md").exists()
