"""launch/recurrent_lengths.py: finished recurrent runs judged at several test lengths."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

CONFIG = "--config=configs/recurrent.py:op=add,smoke"
# --smoke adds the config file's smoke variant: the same runs as CONFIG's
SMOKE = ("--config=configs/recurrent.py:op=add", "--smoke")


def _run(module, *args, check=True):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", module, *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if check:
        assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.mark.slow  # 40 s on 2 idle cores
def test_lengths_of_finished_runs(tmp_path):
    wd = tmp_path / "rec"
    _run("launch.compare_models", "--noprogress", *SMOKE, "--models=nau,lstm", f"--workdir={wd}")
    out = _run("launch.recurrent_lengths", *SMOKE, "--models=nau,lstm", f"--workdir={wd}",
               "--lengths=1,10,100", "--figures")  # fmt: skip
    summary = json.loads((wd / "lengths.json").read_text())
    assert summary["lengths"] == [1, 10, 100] and len(summary["thresholds"]) == 3
    # The thresholds grow with the length (ε per unit of the summed input).
    assert summary["thresholds"][0] < summary["thresholds"][1] < summary["thresholds"][2]
    for model in ("nau", "lstm"):
        rows = list(csv.DictReader(open(wd / model / "lengths.csv")))
        run_rows = list(csv.DictReader(open(wd / model / "seeds.csv")))
        assert [r["seed"] for r in rows] == ["0", "1"]
        for r, run in zip(rows, run_rows, strict=True):
            # At the run's own test length (the smoke's 100) the sequences are its test set: the
            # final evaluation's extrapolation MSE, computed by the run.
            history = [json.loads(x) for x in open(wd / model / "metrics.jsonl")]
            assert history[-1]["step"] == 200
            np.testing.assert_allclose(float(r["mse_100"]), float(run["extrapolation_mse"]),
                                       rtol=1e-4)  # fmt: skip
            for j, n in enumerate((1, 10, 100)):
                assert int(r[f"solved_{n}"]) == int(float(r[f"mse_{n}"]) < summary["thresholds"][j])
        assert summary["models"][model]["step"] == 200
    table = (wd / "lengths.md").read_text()
    assert "| length | threshold | nau: success [95% CI]" in table and "recurrent task's" in table
    assert (wd / "lengths.png").read_bytes()[:4] == b"\x89PNG"
    assert "== nau: solved per length" in out.stdout

    bad = _run("launch.recurrent_lengths", CONFIG, "--models=nau", f"--workdir={wd}",
               "--lengths=0,10", check=False)  # fmt: skip
    assert bad.returncode == 2 and "--lengths must be positive integers" in bad.stderr
    twice = _run("launch.recurrent_lengths", CONFIG, "--models=nau", f"--workdir={wd}",
                 "--lengths=10,100,10", check=False)  # fmt: skip
    assert twice.returncode == 2
    assert (
        twice.stderr.strip() == "nalu_jax: error: --lengths names a length twice, got '10,100,10'."
    )
    other = _run("launch.recurrent_lengths", CONFIG, "--models=nau", f"--workdir={wd}",
                 "--config.train.lr=0.5", check=False)  # fmt: skip
    assert other.returncode == 2 and "written by another config" in other.stderr
