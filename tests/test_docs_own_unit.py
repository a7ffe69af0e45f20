"""docs/own_unit.md is executed: its unit, written into a folder outside the repository, runs
by command-line name alone through the single-module benchmark and the arithmetic task beside
the NAU/NMU (launch/compare_models.py) and gets its row in a launch/reproduce.py table."""

import os
import re
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT

DOC = os.path.join(ROOT, "docs", "own_unit.md")
EXAMPLE = os.path.join(ROOT, "docs", "examples", "scaled_nau.py")
TINY_RUN = [
    "--config.num_seeds=2",
    "--config.num_steps=200",
    "--config.eval_every=100",
    "--config.checkpoint_every=100",
    "--config.eval_size=200",
    "--config.task.threshold_samples=10000",
    "--config.tensorboard=False",
    "--noprogress",
]
TINY_TABLE = ["--seeds=2", "--steps=1000", "--smoke", "--calibration_steps=0", "--noprogress"]


def _blocks(kind: str) -> list[str]:
    with open(DOC) as f:
        return re.findall(rf"```{kind}\n(.*?)```", f.read(), re.S)


def _run(command: str, unit_dir, runs_dir) -> subprocess.CompletedProcess:
    """A command of the doc, with its unit folder and ``runs/`` moved to the test's folders."""
    words = shlex.split(command)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    while "=" in words[0] and not words[0].startswith("-"):  # VAR=value prefixes
        name, value = words.pop(0).split("=", 1)
        env[name] = str(unit_dir) if value == "docs/examples" else value
        if name == "PYTHONPATH":  # the doc's folder goes first; an install's paths stay
            env[name] = os.pathsep.join(filter(None, [env[name], os.environ.get(name)]))
    assert words[0] == "python"
    args = [w.replace("--workdir=runs/", f"--workdir={runs_dir}/") for w in words[1:]]
    if args[:2] == ["-m", "launch.reproduce"]:
        args = [a for a in args if not a.startswith(("--seeds=", "--steps="))] + TINY_TABLE
    else:
        args += TINY_RUN
    out = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _recorded_reg_scale(config_text: str, unit_dir) -> float:
    """The λ̂ that a run's recorded ``config.json`` trains with, computed from the unit's
    registration; the recorded ``train.reg_scale`` must be unset, so that it comes from there."""
    script = (
        "import json, sys, ml_collections, numpy as np\n"
        "from nalu_jax.experiments.arithmetic import build_hparams\n"
        "c = ml_collections.ConfigDict(json.loads(sys.stdin.read()))\n"
        "assert c.model.single_unit and c.train.get('reg_scale') is None, c.train\n"
        "print(float(np.asarray(build_hparams(c, (c.model.name,)).reg_scale)))\n"
    )
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(unit_dir))
    out = subprocess.run(
        [sys.executable, "-c", script], input=config_text, cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return float(out.stdout.strip().splitlines()[-1])


def test_the_doc_shows_the_example_file_verbatim():
    with open(EXAMPLE) as f:
        assert _blocks("python") == [f.read()]


@pytest.mark.slow  # about a minute of CPU: five short runs and a 9-range table of two units
def test_own_unit_runs_by_name_through_both_benchmarks_and_a_table(tmp_path):
    unit_dir, runs = tmp_path / "mine", tmp_path / "runs"
    unit_dir.mkdir()
    (unit_dir / "scaled_nau.py").write_text(_blocks("python")[0])  # outside the repository
    single, arith, table, battery = _blocks("bash")
    assert "battery" not in single and "pytest" in battery

    _run(single, unit_dir, runs)
    cmp = (runs / "own_single" / "comparison.md").read_text()
    assert "nau" in cmp and "scaled_nau:ScaledNAU" in cmp
    seeds = (runs / "own_single" / "scaled_nau:ScaledNAU" / "seeds.csv").read_text()
    assert len(seeds.strip().splitlines()) == 3  # header + 2 seeds
    # λ̂ of the single-module run is the unit's declared 0.01 (not a silent 0): the run's
    # recorded config, rebuilt into the hyperparameters it trained with (in a process of its
    # own, so that this one's unit registry stays the library's)
    summary = (runs / "own_single" / "scaled_nau:ScaledNAU" / "config.json").read_text()
    assert '"name": "scaled_nau:ScaledNAU"' in summary
    assert _recorded_reg_scale(summary, unit_dir) == pytest.approx(0.01)

    _run(arith, unit_dir, runs)
    cmp = (runs / "own_arith" / "comparison.md").read_text()
    for model in ("nau", "nmu", "scaled_nau"):
        assert (runs / "own_arith" / model / "seeds.csv").exists()
        assert model in cmp

    out = _run(table, unit_dir, runs)
    md = (runs / "own_table" / "table.md").read_text()
    assert md.count("| + | Scaled NAU |") == 9 + 1  # per-range rows, and its solved-per-range row
    assert md.count("| + | NAU |") == 9 + 1
    assert "† Not comparable with the paper" in md
    assert "rows; results in" in out.stdout
    # a budget that ends before R_sparse's ramp starts (the doc's 20,000 steps, this test's
    # fewer) says so, as the doc tells
    assert "R_sparse never switches on" in out.stdout + out.stderr
