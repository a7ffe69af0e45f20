"""launch/compare_models.py on the sequence experiments: one reference population shared by
every model, the per-length comparison table and its figure."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from nalu_jax.reporting import report

TINY = [
    "--config.num_steps=20",
    "--config.eval_every=10",
    "--config.checkpoint_every=10",
    "--config.train.batch_size=4",
    "--config.task.train_length=3",
    "--config.task.test_lengths=(1,3,5)",
    "--config.task.eval_sequences=8",
]


def _run(script, *args):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, *script, "--noprogress", *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.mark.slow  # 54 s on 2 idle cores: two sequential-MNIST runs and a comparison
def test_sequential_mnist_comparison_shares_one_reference(tmp_path):
    config = "--config=configs/sequential_mnist.py:task=sum,smoke"
    _run(
        ["-m", "launch.compare_models"],
        config,
        "--figures",  # the runs' PNGs and the comparison's (the suite's default is none)
        "--models=nau,lstm",
        f"--workdir={tmp_path / 'cmp'}",
        *TINY,
    )
    cmp = tmp_path / "cmp"
    shared = (cmp / "reference.json").read_bytes()
    assert (cmp / "nau" / "reference.json").read_bytes() == shared
    assert (cmp / "lstm" / "reference.json").read_bytes() == shared
    assert (cmp / "nau" / "reference").is_dir()  # the reference trained in the first model's run
    assert not (cmp / "lstm" / "reference").exists()  # and only there
    # The shared thresholds are the ones the second model computes on its own.
    _run(["-m", "nalu_jax.main"], config, "--config.model.name=lstm",
         f"--workdir={tmp_path / 'alone'}", *TINY)  # fmt: skip
    assert (tmp_path / "alone" / "reference.json").read_bytes() == shared
    assert (tmp_path / "alone" / "seeds.csv").read_bytes() == (
        cmp / "lstm" / "seeds.csv"
    ).read_bytes()
    table = (cmp / "comparison.md").read_text()
    assert "| length | threshold | nau: success [95% CI]" in table and "lstm: MSE (median)" in table
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:5]] == ["1", "3", "5"]
    assert (cmp / "comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_results_cell_with_the_first_seeds_runs_only_the_rest(tmp_path):
    """``--results`` on a recurrent cell committed with 2 of 3 seeds: seed 2 alone trains (in
    ``WORKDIR/MODEL-from2``) and is merged; the committed rows stay as they were. A run of
    fewer seeds does not replace the cell."""
    config = ["--config=configs/recurrent.py:op=add,smoke", "--models=nac_add",
              f"--results={tmp_path / 'results'}"]  # fmt: skip
    _run(["-m", "launch.compare_models"], *config, f"--workdir={tmp_path / 'two'}")
    cell = tmp_path / "results" / "nac_add"
    two = (cell / "seeds.csv").read_text().splitlines()
    out = _run(["-m", "launch.compare_models"], *config, "--config.num_seeds=3",
               f"--workdir={tmp_path / 'three'}")  # fmt: skip
    assert f"{cell} holds seeds 0–1; running the 1 more" in out.stdout
    assert not (tmp_path / "three" / "nac_add").exists()
    ran = json.loads((tmp_path / "three" / "nac_add-from2" / "config.json").read_text())
    assert (ran["first_seed"], ran["num_seeds"]) == (2, 1)
    rows = (cell / "seeds.csv").read_text().splitlines()
    assert rows[:3] == two and len(rows) == 4 and rows[3].split(",")[0] == "2"
    assert json.loads((cell / "summary.json").read_text())["num_seeds"] == 3
    assert json.loads((cell / "config.json").read_text())["num_seeds"] == 3
    batches = json.loads((cell / "provenance.json").read_text())["batches"]
    assert [(b["first_seed"], b["num_seeds"]) for b in batches] == [(0, 2), (2, 1)]
    # the comparison counts the merged cell's three seeds
    table = (tmp_path / "three" / "comparison.md").read_text().splitlines()
    (row,) = [line for line in table if "| nac_add |" in line]
    assert "/3 (" in row
    # two seeds again, through nalu_jax.main: the cell holding three is kept, not replaced
    merged = {f: (cell / f).read_bytes() for f in ("seeds.csv", "summary.json", "provenance.json")}
    out = _run(["-m", "nalu_jax.main"], "--config=configs/recurrent.py:op=add,smoke,model=nac_add",
               f"--results={cell}", f"--workdir={tmp_path / 'again'}")  # fmt: skip
    assert "(num_seeds differs): it is kept" in out.stdout
    assert {f: (cell / f).read_bytes() for f in merged} == merged
    assert (tmp_path / "again" / "seeds.csv").exists()


def _group(length, solved, n, lo, hi, mse):
    return {
        "length": length,
        "threshold": 0.5,
        "solved": solved,
        "success_rate": solved / n,
        "success_interval": (lo, hi),
        "mse_last_median": mse,
    }


def test_per_length_table_and_figure_by_hand():
    a = {
        "setting": "nau",
        "num_seeds": 10,
        "num_steps": 100,
        "task": "sum",
        "train_length": 10,
        "per_length": [_group(1, 10, 10, 0.722, 1.0, 1e-4), _group(100, 3, 10, 0.108, 0.603, 2.5)],
    }
    b = {
        "setting": "lstm",
        "num_seeds": 10,
        "num_steps": 100,
        "task": "sum",
        "train_length": 10,
        "per_length": [_group(1, 0, 10, 0.0, 0.278, 0.75), _group(100, 0, 10, 0.0, 0.278, 9e3)],
    }
    table, draw = report.comparison([a, b])
    rows = [
        line for line in table.splitlines() if line.startswith("| 1") or line.startswith("| 100")
    ]
    assert rows[0] == (
        "| 1 | 0.5 | 10/10 100.0% [72.2%, 100.0%] | 0.0001 | 0/10 0.0% [0.0%, 27.8%] | 0.75 |"
    )
    assert (
        rows[1]
        == "| 100 | 0.5 | 3/10 30.0% [10.8%, 60.3%] | 2.5 | 0/10 0.0% [0.0%, 27.8%] | 9000 |"
    )
    assert "seeds: nau 10, lstm 10" in table
    assert draw()[:4] == b"\x89PNG"


def test_split_table_by_hand():
    def summary(name, solved, acc, interval):
        test = {
            "split": "test",
            "solved": solved,
            "success_rate": solved / 4,
            "success_interval": interval,
            "acc_mean": acc,
            "mse_median": 2.0,
        }
        valid = {"split": "valid", "acc_mean": 0.5, "mse_median": 1.0}
        return {"setting": name, "num_seeds": 4, "num_steps": 50, "diverged": 0, "wall_time_s": 12.4,
                "success_accuracy": 1.0, "splits": [valid, test]}  # fmt: skip

    table, draw = report.comparison(
        [summary("nalu", 1, 0.875, (0.046, 0.699)), summary("lstm", 0, 0.25, (0.0, 0.49))]
    )
    assert "| nalu | 1/4 25.0% [4.6%, 69.9%] | 87.5% | 2 | 50.0% | 0 | 12 s |" in table
    assert "| lstm | 0/4 0.0% [0.0%, 49.0%] | 25.0% |" in table
    assert draw()[:4] == b"\x89PNG"


def test_no_figure_with_figures_off(monkeypatch, tmp_path):
    from nalu_jax.reporting import report

    monkeypatch.setenv("NALU_JAX_FIGURES", "0")
    runs = [
        {"setting": m, "num_seeds": 2, "num_steps": 100, "task": "sum", "train_length": 10,
         "per_length": [_group(1, 1, 2, 0.1, 0.9, 1.0)]}
        for m in ("nau", "lstm")
    ]  # fmt: skip
    table, draw = report.comparison(runs)
    assert "| 1 |" in table and callable(draw)
    (tmp_path / "comparison.png").write_bytes(b"an earlier comparison")
    report.write_png(str(tmp_path / "comparison.png"), draw)
    report.write_files(str(tmp_path), {"curves.png": lambda: 1 / 0, "summary.md": "numbers"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]  # nothing drawn
    monkeypatch.setenv("NALU_JAX_FIGURES", "1")
    report.write_files(str(tmp_path), {"curves.png": lambda: b"\x89PNG drawn"})
    assert (tmp_path / "curves.png").read_bytes() == b"\x89PNG drawn"


def test_success_series_gives_rates_and_wilson_bounds_or_none():
    from nalu_jax.reporting.report import success_series

    groups = [
        {"success_rate": 0.5, "success_interval": [0.2, 0.8]},
        {"success_rate": 1.0, "success_interval": [0.7, 1.0]},
    ]
    assert success_series(groups) == ([0.5, 1.0], [(0.2, 0.7), (0.8, 1.0)])
    assert success_series([{"mse_last_median": 1.0}]) is None
    assert success_series([]) is None
