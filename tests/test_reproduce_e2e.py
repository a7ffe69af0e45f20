"""``launch/reproduce.py`` and ``launch/slurm.py`` end to end on a tiny protocol (2 cells,
2 seeds, 1,000 steps, smoke-sized evaluation): the table files, resume/skip, adding cells, and
the submitit local executor (array of 2 tasks; one 2-task ``jax.distributed`` job) giving the
same per-seed results as one process."""

import csv
import os
import subprocess
import sys

import pytest
from conftest import ROOT

TINY = ["--table=iclr2020-arithmetic", "--seeds=2", "--steps=1000", "--smoke"]
ENV = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")


def launch(script, *args):
    quiet = ["--noprogress"] if script == "reproduce.py" else []
    module = "launch." + script.removesuffix(".py")
    cmd = [sys.executable, "-m", module, *TINY, *quiet, *args]
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def rows(workdir):
    with open(os.path.join(workdir, "table.csv")) as f:
        return list(csv.DictReader(f))


def seeds_csv(workdir, cell):
    with open(os.path.join(workdir, "cells", cell, "seeds.csv")) as f:
        return f.read()


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """One process: add × {nau, nmu}, with the wall-time estimate."""
    workdir = str(tmp_path_factory.mktemp("single"))
    out = launch("reproduce.py", "--ops=add", "--models=nau,nmu", "--calibration_steps=500",
                 f"--workdir={workdir}")  # fmt: skip
    return workdir, out


def test_table_has_ours_published_and_the_overlap(single):
    workdir, out = single
    assert "estimated wall time on this machine:" in out
    assert out.index("estimated wall time") < out.index("== add-nau")
    got = rows(workdir)
    assert [(r["op"], r["model"], r["status"]) for r in got] == [
        ("add", "nau", "done"), ("add", "nmu", "done"),
    ]  # fmt: skip
    for r in got:
        assert r["num_seeds"] == "2" and r["num_steps"] == "1000"
        assert r["published_success_rate"] != "" and r["success_overlap"] in ("yes", "no")
    md = open(os.path.join(workdir, "table.md")).read()
    assert "**REDUCED** protocol" in md and "published success [95%]" in md
    assert os.path.exists(os.path.join(workdir, "figures", "add.png"))


def test_rerun_skips_finished_cells_and_more_cells_add_to_the_table(single):
    workdir, _ = single
    stamp = os.path.getmtime(os.path.join(workdir, "cells", "add-nau", "seeds.csv"))
    out = launch("reproduce.py", "--ops=add", "--models=nau,nmu", f"--workdir={workdir}")
    assert "2 cells, 2 already done" in out and "estimated" not in out
    assert os.path.getmtime(os.path.join(workdir, "cells", "add-nau", "seeds.csv")) == stamp
    launch("reproduce.py", "--ops=sub", "--models=nau", "--calibration_steps=0",
           f"--workdir={workdir}")  # fmt: skip
    keys = [(r["op"], r["model"]) for r in rows(workdir)]
    assert keys == [("add", "nau"), ("add", "nmu"), ("sub", "nau")]


def test_slurm_array_on_the_local_executor_merges_to_the_same_table(single, tmp_path):
    workdir, _ = single
    out = launch("slurm.py", "--cluster=local", "--ops=add", "--models=nau,nmu",
                 "--timeout_min=30", f"--workdir={tmp_path}")  # fmt: skip
    assert "submitted 2 job(s)" in out
    for cell in ("add-nau", "add-nmu"):
        assert seeds_csv(tmp_path, cell) == seeds_csv(workdir, cell)
    timing = ("wall_time_s",)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in timing} for r in rs]
    assert strip(rows(tmp_path)) == strip(rows(workdir)[:2])


def test_slurm_distributed_job_of_two_tasks_equals_one_process(single, tmp_path):
    workdir, _ = single
    launch("slurm.py", "--cluster=local", "--mode=distributed", "--tasks_per_node=2",
           "--ops=add", "--models=nau", "--timeout_min=30", f"--workdir={tmp_path}")  # fmt: skip
    assert sorted(os.listdir(tmp_path / "cells" / "add-nau" / "parts")) == [
        "process_0.npz", "process_1.npz",
    ]  # fmt: skip
    assert seeds_csv(tmp_path, "add-nau") == seeds_csv(workdir, "add-nau")
