"""``launch/reproduce.py`` and ``launch/slurm.py`` end to end on a tiny protocol (2 cells,
2 seeds, 1,000 steps, smoke-sized evaluation): the table files, resume/skip, adding cells, and
the submitit local executor (array of 2 tasks; one 2-task ``jax.distributed`` job) giving the
same per-seed results as one process. The ablation's "no W-clamp" cells train through the
same machinery in this process."""

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
                 f"--workdir={workdir}", "--figures")  # fmt: skip
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


def test_smoke_without_a_selection_runs_the_first_cell(tmp_path):
    out = launch("reproduce.py", "--calibration_steps=0", f"--workdir={tmp_path}")
    assert "--smoke runs the table's first cell, mul-nac_mul_nmu" in out
    assert [(r["op"], r["model"], r["status"]) for r in rows(str(tmp_path))] == [
        ("mul", "nac_mul_nmu", "done"),
    ]  # fmt: skip
    assert "results: none committed" in out


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


def test_ablation_no_clamp_cells_train_and_differ_from_the_clamped_nmu(tmp_path):
    """The two "no W-clamp" cells of iclr2020-ablation run (2 seeds × 1,000 steps); at a large
    lr W leaves the range within those steps, so the no-clamp cell's results (same seeds)
    differ from the NMU cell's."""
    import json

    from nalu_jax import reproduce
    from nalu_jax.reproduce.cells import SMOKE

    small = {**SMOKE, "eval_size": 500, "task.threshold_samples": 20_000, "train.lr": 0.05}
    models = ["nmu", "nmu_no_rsparse_no_clamp", "nmu_no_clamp"]  # in table order
    got = reproduce.reproduce(
        "iclr2020-ablation", str(tmp_path), models=models, seeds=2, steps=1000,
        overrides=small, calibration_steps=0, progress=False, log=lambda _: None,
    )  # fmt: skip
    assert [(r["model"], r["status"]) for r in got] == [(m, "done") for m in models]
    for m in models:
        with open(tmp_path / "cells" / f"mul-{m}" / "config.json") as f:
            model = json.load(f)["model"]
        clamp = {model["layer1_options"].get("clamp_w"), model["layer2_options"].get("clamp_w")}
        assert clamp == ({None} if m == "nmu" else {False})
    plain, no_clamp = seeds_csv(tmp_path, "mul-nmu"), seeds_csv(tmp_path, "mul-nmu_no_clamp")
    assert plain.splitlines()[0] == no_clamp.splitlines()[0] and plain != no_clamp


def test_a_quick_reduced_run_leaves_the_checkout_clean(tmp_path):
    """A run below the table's protocol commits nothing unless asked (``--results``)."""

    def status():  # the committed results only: edits elsewhere during the test are not its own
        return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--",
                               "results"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout  # fmt: skip

    before = status()
    cmd = [sys.executable, "-m", "launch.reproduce", "--table=iclr2020-arithmetic", "--seeds=2",
           "--steps=2000", "--ops=add", "--models=nau", "--calibration_steps=0", "--noprogress",
           f"--workdir={tmp_path}"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "results: none committed, not the table's protocol (--steps=2,000 < the" in out.stdout
    assert status() == before
