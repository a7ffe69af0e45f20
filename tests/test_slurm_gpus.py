"""``launch/slurm.py``'s GPU requests, read from the executor it builds (no SLURM needed).

The executor is built in a subprocess (``launch.slurm`` defines absl flags that other entry
points define too); a fake ``srun`` on ``PATH`` lets submitit build a SLURM executor here.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import subprocess_env

from nalu_jax.config import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE = """
import json, sys
from absl import flags
from launch import slurm
flags.FLAGS(["slurm"] + sys.argv[1:])
ex = slurm.executor()
inner = getattr(ex, "_executor", ex)
out = {"kind": type(inner).__name__, "parameters": inner.parameters}
if out["kind"] == "SlurmExecutor":
    out["sbatch"] = inner._make_submission_file_text("cmd", "uid")
print(json.dumps(out, default=list))
"""


def executor_of(tmp_path, *args, cuda=None):
    env = subprocess_env()
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "srun").write_text("#!/bin/sh\nexit 0\n")
    (fake / "srun").chmod(0o755)
    env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if cuda is not None:
        env["CUDA_VISIBLE_DEVICES"] = cuda
    argv = ["--table=iclr2020-arithmetic", f"--workdir={tmp_path / 'w'}", *args]
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_slurm_tasks_ask_for_gpus_per_node_and_gres(tmp_path):
    got = executor_of(tmp_path, "--cluster=slurm", "--gpus_per_node=4",
                      "--slurm_gres=gpu:a100:4", "--mode=distributed", "--nodes=2")  # fmt: skip
    assert got["kind"] == "SlurmExecutor"
    assert got["parameters"]["gpus_per_node"] == 4
    assert got["parameters"]["gres"] == "gpu:a100:4"
    assert "#SBATCH --gpus-per-node=4" in got["sbatch"]
    assert "#SBATCH --gres=gpu:a100:4" in got["sbatch"]
    assert "#SBATCH --nodes=2" in got["sbatch"]


def test_slurm_without_the_flag_asks_for_no_gpus(tmp_path):
    got = executor_of(tmp_path, "--cluster=slurm")
    assert "gpus_per_node" not in got["parameters"] and "gres" not in got["parameters"]
    assert "--gpus-per-node" not in got["sbatch"] and "--gres" not in got["sbatch"]


def test_local_executor_leaves_the_hosts_gpus_visible(tmp_path):
    # submitit's local executor sets CUDA_VISIBLE_DEVICES to exactly these GPUs
    got = executor_of(tmp_path, "--cluster=local", cuda="2,3")
    assert got["kind"] == "LocalExecutor"
    assert got["parameters"]["gpus_per_node"] == 2
    assert got["parameters"]["visible_gpus"] == [2, 3]
    got = executor_of(tmp_path, "--cluster=local", "--gpus_per_node=1", cuda="2,3")
    assert got["parameters"]["gpus_per_node"] == 1
    assert got["parameters"]["visible_gpus"] == [2]


def test_local_executor_refuses_more_gpus_than_the_host_shows(tmp_path):
    env = subprocess_env()
    env["CUDA_VISIBLE_DEVICES"] = "0"
    out = subprocess.run(
        [sys.executable, "-m", "launch.slurm", "--cluster=local", "--table=iclr2020-arithmetic",
         f"--workdir={tmp_path / 'w'}", "--gpus_per_node=2"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert "gpus_per_node must be at most the 1 GPU(s) this host shows, got 2." in out.stderr
    assert "Traceback" not in out.stderr


def test_host_gpus_reads_cuda_visible_devices_then_the_device_files(tmp_path):
    from launch.slurm import host_gpus, local_gpus

    for name in ("nvidia1", "nvidia0", "nvidiactl", "nvidia-uvm", "null"):
        (tmp_path / name).write_text("")
    assert host_gpus({}, str(tmp_path)) == (0, 1)
    assert host_gpus({"CUDA_VISIBLE_DEVICES": "3, 5"}, str(tmp_path)) == (3, 5)
    assert host_gpus({"CUDA_VISIBLE_DEVICES": ""}, str(tmp_path)) == ()  # every GPU hidden
    assert host_gpus({}, str(tmp_path / "absent")) == ()  # a host without NVIDIA devices
    assert local_gpus(None, (3, 5)) == (3, 5)
    assert local_gpus(1, (3, 5)) == (3,)
    assert local_gpus(0, (3, 5)) == ()
    with pytest.raises(ConfigError, match="gpus_per_node must be at most"):
        local_gpus(3, (3, 5))


def test_smoke_sizes_each_task_as_launch_reproduce_smoke_does(tmp_path):
    probe = (
        "import json, sys\nfrom absl import flags\nfrom launch import slurm\n"
        "flags.FLAGS(['slurm'] + sys.argv[1:])\nprint(json.dumps(slurm.cell_budget()))\n"
    )

    def budget(*args):
        argv = ["--table=iclr2020-arithmetic", f"--workdir={tmp_path / 'w'}", *args]
        out = subprocess.run([sys.executable, "-c", probe, *argv], cwd=ROOT, env=subprocess_env(),
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    from nalu_jax.reproduce.cells import SMOKE

    assert budget() == {"seeds": None, "steps": None, "overrides": None}
    assert budget("--smoke") == {"seeds": 2, "steps": 2000, "overrides": SMOKE}
    assert budget("--smoke", "--seeds=4")["seeds"] == 4


@pytest.mark.parametrize(
    "flag", ["seeds", "steps", "cells_per_task", "parallelism", "nodes", "tasks_per_node",
             "timeout_min", "cpus_per_task"],
)  # fmt: skip
def test_counts_must_be_positive(flag):
    from absl import flags

    from launch import slurm  # noqa: F401  (defines the flags)

    for bad in ("0", "-1"):
        with pytest.raises(ValueError, match="is not a positive integer"):
            flags.FLAGS[flag].parser.parse(bad)
    assert flags.FLAGS[flag].parser.parse("3") == 3


@pytest.mark.parametrize("value", ["0", "nan"])
def test_memory_must_be_positive(value, tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "launch.slurm", "--cluster=local", "--table=iclr2020-arithmetic",
         f"--workdir={tmp_path / 'w'}", f"--mem_gb={value}"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [
        f"nalu_jax: error: --mem_gb must be a positive number of GB, got {float(value):g}."
    ]
    assert not (tmp_path / "w").exists()
