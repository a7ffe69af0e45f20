"""The command line: a successful smoke run, and one clear sentence with status 2 for bad input."""

import csv
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

SMOKE = "--config=configs/arithmetic.py:model=nmu,op=mul,smoke"
SMALL = ["--config.num_steps=1000", "--config.eval_every=500", "--config.num_seeds=2"]


def run_cli(*args, workdir):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    cmd = [sys.executable, "-m", "nalu_jax.main", f"--workdir={workdir}", "--noprogress", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_smoke_run_prints_summary_and_writes_results(tmp_path):
    out = run_cli(SMOKE, *SMALL, workdir=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "| success rate |" in out.stdout
    assert (tmp_path / "summary.json").exists() and (tmp_path / "seeds.csv").exists()


def test_select_from_step_reaches_the_judgement(tmp_path):
    # evaluations at 0, 500 and 1000: from step 1000 on, every seed is judged at the last
    out = run_cli(SMOKE, *SMALL, "--config.task.select_from_step=1000", workdir=tmp_path)
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "seeds.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["best_step"] for r in rows] == ["1000", "1000"]


BAD = {
    "unknown model": (
        ["--config=configs/arithmetic.py:model=foo,smoke"],
        "model.name must be one of",
    ),
    "unknown op": (["--config=configs/arithmetic.py:op=pow,smoke"], "task.op must be one of"),
    "unknown variant": (
        ["--config=configs/arithmetic.py:smok"],
        "config variant 'smok' is unknown",
    ),
    "reversed range": (
        [SMOKE, "--config.task.interpolation_range=(2,1)"],
        "task.interpolation_range must have finite lo < hi",
    ),
    "unequal intervals": (
        [SMOKE, "--config.task.extrapolation_range=((-6,-2),(2,5))"],
        "two intervals of equal width",
    ),
    "negative root": (
        [
            "--config=configs/arithmetic.py:op=root,smoke",
            "--config.task.interpolation_range=(-1,1)",
        ],
        "must not reach below 0",
    ),
    "no seeds": ([SMOKE, "--config.num_seeds=0"], "num_seeds must be an integer >= 1"),
    "negative seeds": ([SMOKE, "--config.num_seeds=-3"], "num_seeds must be an integer >= 1"),
    "eval interval": ([SMOKE, "--config.eval_every=300"], "eval_every must divide num_steps"),
    "subsets do not fit": (
        [SMOKE, "--config.task.input_size=10", "--config.task.subset_ratio=0.9"],
        "task.subset_ratio is too large",
    ),
    "range index": (
        ["--config=configs/single_module.py:range=10,smoke"],
        "range_index must be",
    ),
    "missing config file": (["--config=configs/nope.py"], "could not be loaded"),
    "missing data file": (
        [
            "--config=configs/sequential_mnist.py:task=sum,data=mnist_idx,smoke",
            "--config.data.directory=/nonexistent",
        ],
        "data file '/nonexistent/train-images-idx3-ubyte' does not exist",
    ),
    "recurrent length": (
        ["--config=configs/recurrent.py:smoke", "--config.task.test_length=0"],
        "task.test_length must be an integer >= 1",
    ),
    "sweep of a static field": (
        [SMOKE, "--config.sweep.range_index=(1,2)"],
        "task.range_index applies only to task.kind 'single_module'",
    ),
    "unknown field": ([SMOKE, "--config.num_seedz=3"], "names no field of the config"),
    "best step window after the run": (
        [SMOKE, "--config.task.select_from_step=10000000"],
        "task.select_from_step must be an integer from 0 to num_steps",
    ),
    "unit option the unit lacks": (
        ["--config=configs/arithmetic.py:model=nalu,no_clamp,smoke"],
        "unexpected keyword argument 'clamp_w'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_2_with_one_sentence(case, tmp_path):
    args, expected = BAD[case]
    out = run_cli(*args, workdir=tmp_path / "w")
    assert out.returncode == 2, (out.stdout, out.stderr)
    message = out.stderr.strip()
    assert expected in message, message
    assert "Traceback" not in message and len(message.splitlines()) == 1


def test_figures_flag_over_the_environment_whose_value_must_be_0_or_1(tmp_path, monkeypatch):
    monkeypatch.setenv("NALU_JAX_FIGURES", "yes")
    out = run_cli(SMOKE, *SMALL, workdir=tmp_path / "bad")
    assert out.returncode == 2, (out.stdout, out.stderr)
    message = out.stderr.strip()
    assert "NALU_JAX_FIGURES must be 1 (draw each run's PNGs, the default) or 0" in message
    assert "Traceback" not in message and len(message.splitlines()) == 1
    assert not (tmp_path / "bad").exists()  # refused before anything ran
    monkeypatch.setenv("NALU_JAX_FIGURES", "0")
    out = run_cli(SMOKE, *SMALL, "--figures", workdir=tmp_path / "w")
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "w" / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_unwritable_workdir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = run_cli(SMOKE, *SMALL, workdir=blocker / "sub")
    assert out.returncode == 2 and "workdir" in out.stderr and "not writable" in out.stderr


@pytest.mark.slow  # 27 s on 2 idle cores
def test_workdir_with_other_config(tmp_path):
    assert run_cli(SMOKE, *SMALL, workdir=tmp_path).returncode == 0
    out = run_cli(SMOKE, *SMALL, "--config.task.op=add", workdir=tmp_path)
    assert out.returncode == 2 and "config differs in task.op" in out.stderr
    out = run_cli(SMOKE, *SMALL, "--config.task.op=add", "--overwrite", workdir=tmp_path)
    assert out.returncode == 0, out.stderr


def test_load_config_by_name_or_path_as_the_config_flag_does(tmp_path):
    from nalu_jax.config import ConfigError, load_config

    by_name = load_config("sequential_mnist", "task=product,model=nmu")
    by_path = load_config(os.path.join(ROOT, "configs", "sequential_mnist.py"), "task=product")
    assert (by_name.task.name, by_name.model.name, by_name.task.train_length) == (
        "product",
        "nmu",
        2,
    )
    assert by_path.task.test_lengths == tuple(range(1, 21))
    own = tmp_path / "mine.py"
    own.write_text("def get_config(arg=None):\n    return {'arg': arg}\n")
    assert load_config(str(own), "x=1") == {"arg": "x=1"}
    with pytest.raises(ConfigError, match="config 'nosuch' does not exist: no .*configs/nosuch.py"):
        load_config("nosuch")
    with pytest.raises(ConfigError, match="config file .*nosuch.py' does not exist"):
        load_config(str(tmp_path / "nosuch.py"))


def test_load_config_looks_in_the_checkout_then_in_the_package(monkeypatch):
    from nalu_jax import config as config_lib

    assert config_lib.config_path("recurrent") == os.path.join(ROOT, "configs", "recurrent.py")
    # away from a checkout (an installed wheel): the package's own copy
    monkeypatch.setattr(config_lib, "CONFIGS_DIR", "/nonexistent/configs")
    path = config_lib.config_path("recurrent")
    assert path == os.path.join(ROOT, "nalu_jax", "configs", "recurrent.py")
    assert config_lib.load_config("recurrent", "model=nau,op=add").model.name == "nau"
    # the package holds every config of the checkout (package data: nalu_jax/configs/*.py)
    in_package = sorted(os.listdir(config_lib.PACKAGED_CONFIGS_DIR))
    assert [f for f in in_package if f.endswith(".py")] == sorted(
        f for f in os.listdir(os.path.join(ROOT, "configs")) if f.endswith(".py")
    )
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert '"nalu_jax" = ["configs/*.py"]' in text


def test_smoke_flag_adds_the_config_files_smoke_variant():
    from nalu_jax.cli import smoke_argv
    from nalu_jax.config import load_config

    f = "configs/recurrent.py"
    assert smoke_argv(["x", f"--config={f}:op=add", "--smoke"]) == [
        "x", f"--config={f}:op=add,smoke", "--smoke"]  # fmt: skip
    assert smoke_argv(["x", "--smoke=true", "--config", f]) == ["x", "--smoke=true", "--config",
                                                                f"{f}:smoke"]  # fmt: skip
    # without --smoke, or with a later --nosmoke, the command line is left as it is
    for argv in (["x", f"--config={f}"], ["x", f"--config={f}", "--smoke", "--nosmoke"]):
        assert smoke_argv(argv) == argv
    # the variant smoke_argv makes is the config file's own smoke variant
    smoke = load_config(os.path.join(ROOT, f), "op=add,smoke")
    assert (smoke.num_seeds, smoke.num_steps) == (2, 200)
    assert smoke.to_json() != load_config(os.path.join(ROOT, f), "op=add").to_json()


@pytest.mark.parametrize("module", ["nalu_jax.main", "launch.compare_models"])
def test_smoke_flag_runs_in_seconds_on_every_training_entry_point(module, tmp_path):
    # the smoke variant of configs/single_module.py: 4 seeds, 2,000 steps
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    extra = ["--models=nmu"] if module.startswith("launch") else []
    cmd = [sys.executable, "-m", module, "--config=configs/single_module.py:op=mul", "--smoke",
           f"--workdir={tmp_path}", "--noprogress", *extra]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = tmp_path / ("nmu" if extra else "") / "summary.json"
    s = json.loads(summary.read_text())
    assert (s["num_seeds"], s["num_steps"]) == (4, 2000)
