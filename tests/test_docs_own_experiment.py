"""docs/own_experiment.md is executed: its experiment module and config, written into a folder
outside the repository, run from there by command line alone: registered by ``--plugin`` (and
``NALU_JAX_PLUGINS``), through ``nalu_jax.main`` into a results cell, an lr sweep,
``launch.compare_models``, and a registered table run, committed and re-checked by
``launch.reproduce``; an unregistered name fails in one sentence."""

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from conftest import ROOT

from nalu_jax.reproduce import results as results_lib

DOC = os.path.join(ROOT, "docs", "own_experiment.md")
EXAMPLES = [
    os.path.join(ROOT, "docs", "examples", f)
    for f in ("abc_task.py", "abc_config.py", "abc_table.py")
]
TINY_CONFIG = "--config=abc_config.py:seeds=2,steps=200"
TINY_RUN = [
    "--config.eval_every=100",
    "--config.checkpoint_every=100",
    "--config.eval_size=200",
    "--config.task.threshold_samples=10000",
    "--config.tensorboard=False",
    "--noprogress",
]


def _blocks(kind: str) -> list[str]:
    with open(DOC) as f:
        return re.findall(rf"```{kind}\n(.*?)```", f.read(), re.S)


def _run(command: str, home, *extra, status: int = 0) -> subprocess.CompletedProcess:
    """A command of the doc, run in ``home`` (outside the repository) with this checkout on
    PYTHONPATH after the doc's own entries (extended, never replaced)."""
    words = shlex.split(command)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    while "=" in words[0] and not words[0].startswith("-"):  # VAR=value prefixes
        name, value = words.pop(0).split("=", 1)
        if name == "PYTHONPATH":
            value = os.pathsep.join(p for p in (str(home), ROOT, os.environ.get("PYTHONPATH")) if p)
        env[name] = value
    assert words[0] == "python"
    # the doc's --config, shrunk, in its place: overrides must follow it
    args = [TINY_CONFIG if w.startswith("--config=") else w for w in words[1:]]
    args += TINY_RUN + list(extra)
    out = subprocess.run(
        [sys.executable, *args], cwd=home, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == status, out.stderr[-3000:]
    return out


def test_the_doc_shows_the_example_files_verbatim():
    texts = []
    for path in EXAMPLES:
        with open(path) as f:
            texts.append(f.read())
    assert _blocks("python") == texts


@pytest.mark.slow  # about a minute of CPU: three short runs of two seeds
def test_own_experiment_runs_from_outside_the_checkout(tmp_path):
    home = tmp_path / "mine"
    home.mkdir()
    for path, text in zip(EXAMPLES, _blocks("python"), strict=True):
        (home / os.path.basename(path)).write_text(text)
    single, sweep, compare, table_block = _blocks("bash")
    assert "--plugin=abc_task" in single and "--results=" in single
    assert "sweep.lr" in sweep and "NALU_JAX_PLUGINS=abc_task" in compare

    _run(single, home)
    cell = home / "results" / "abc"
    summary = json.loads((cell / "summary.json").read_text())
    assert (summary["task"], summary["op"]) == ("abc", "a·b + c")
    assert summary["model"] == "nau → nmu → nau" and summary["num_seeds"] == 2
    assert len((cell / "seeds.csv").read_text().strip().splitlines()) == 3  # header + 2 seeds
    assert (cell / "provenance.json").exists()

    out = _run(sweep, home)
    for h in range(3):
        assert (home / "runs" / "abc_lr" / "settings" / f"{h:03d}" / "seeds.csv").exists()
    assert out.stdout.count("lr=") >= 3

    _run(compare, home)
    table = (home / "runs" / "abc_models" / "comparison.md").read_text()
    assert "nau-nmu-nau" in table and "nac_add-nac_mul-nac_add" in table

    # a name nobody registered: one sentence saying how to register one, status 2
    bad = _run(single, home, "--config.experiment=abd", status=2)
    assert bad.stderr.count("\n") == 1 and "register_experiment" in bad.stderr

    # the registered table: both rows run, committed (asked for: 200 steps is below the
    # table's protocol) and tabulated; then a committed cell re-checked against its rows
    whole, recheck = table_block.strip().splitlines()
    assert "--plugin=abc_table" in whole and "--check=abc-nau-nmu-nau" in recheck
    small = ("--seeds=2", "--steps=200", "--calibration_steps=0")
    out = _run(whole, home, *small, "--results=results")
    table = (home / "runs" / "abc_table" / "table.md").read_text()
    assert "nau → nmu → nau" in table and "nac_add → nac_mul → nac_add" in table
    assert "GPU: not estimated for this task" in out.stdout
    # the NAU row's config is the first command's: named (same_as.json), not trained again
    assert "abc-nau-nmu-nau: " in out.stdout and "holds the same config" in out.stdout
    alias = home / "results" / "abc-stacks" / "abc-nau-nmu-nau"
    assert os.path.samefile(results_lib.resolve(str(alias)), home / "results" / "abc")
    cell = home / "results" / "abc-stacks" / "abc-nac_add-nac_mul-nac_add"
    assert len((cell / "seeds.csv").read_text().strip().splitlines()) == 3
    assert json.loads((cell / "config.json").read_text())["experiment"] == "abc"
    # a third seed for that row: only seed 2 runs, merged into the committed cell
    more = _run(whole, home, *small, "--seeds=3", "--models=nac_add-nac_mul-nac_add",
                "--results=results")  # fmt: skip
    assert "running the 1 more" in more.stdout
    assert len((cell / "seeds.csv").read_text().strip().splitlines()) == 4
    assert json.loads((cell / "summary.json").read_text())["num_seeds"] == 3
    out = _run(recheck, home, "--calibration_steps=0")
    assert "2 committed rows of seeds 0–1 identical" in out.stdout
    other = _run(whole, home, "--table=abd-stacks", status=2)
    assert other.stderr.count("\n") == 1 and "register_table" in other.stderr
