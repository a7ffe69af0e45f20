"""Seeds sharded across host devices give the same per-seed results as one device.

The sharding tests run their subprocesses on XLA:CPU (``JAX_PLATFORMS=cpu``) on any machine:
``--xla_force_host_platform_device_count`` makes CPU devices only, and the property is that
the per-seed bits do not depend on how seeds are split over devices or processes. (On a GPU,
even one program run twice may differ in its last bits unless XLA is told
``--xla_gpu_deterministic_ops=true``.)"""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from conftest import ROOT, load_config, tiny

from nalu_jax.experiments.arithmetic import build_task
from nalu_jax.tasks import subset_masks, subset_sums
from nalu_jax.tasks.eval_sets import evaluation_inputs, range_inputs


def run_cli(workdir, devices):
    env = dict(
        os.environ, JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    )  # fmt: skip
    args = [
        "--config=configs/arithmetic.py:model=nmu,op=mul,smoke",
        "--config.num_seeds=5",
        "--config.num_steps=1000",
        "--config.eval_every=500",
        "--config.seed_block=2",
    ]
    cmd = [sys.executable, "-m", "nalu_jax.main", f"--workdir={workdir}", "--noprogress", *args]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return open(os.path.join(workdir, "seeds.csv")).read()


@pytest.mark.slow  # 24 s on 2 idle cores
def test_four_devices_equal_one_device(tmp_path):
    one = run_cli(tmp_path / "one", 1)
    four = run_cli(tmp_path / "four", 4)
    assert one == four
    assert one.count("\n") == 6  # header + 5 seeds (the population was padded to 8)


@pytest.mark.parametrize(
    "extrapolation", [(2.0, 6.0), ((-6.0, -2.0), (2.0, 6.0))], ids=["single", "two-interval"]
)
def test_evaluation_sets_rebuilt_from_draws_match_masked_sums(extrapolation):
    config = tiny(load_config("arithmetic", "model=nmu,op=mul"))
    config.task.extrapolation_range = extrapolation
    task = build_task(config)
    data = evaluation_inputs(task, 300)
    for offset in (0, 1, 17, task.max_offset):
        x, sums = range_inputs(task, data, "test", task.extrapolation_range, offset)
        direct = np.asarray(subset_sums(x, subset_masks(task, offset)))
        np.testing.assert_allclose(np.asarray(sums), direct, rtol=2e-6, atol=1e-5)
        lo, hi = (-6.0, 6.0) if isinstance(extrapolation[0], tuple) else extrapolation
        assert np.all((np.asarray(x) >= lo) & (np.asarray(x) < hi))
    assert data["valid_usums"].shape == (300, task.max_offset + 1, 2)
    x, _ = range_inputs(task, data, "valid", task.interpolation_range, 0)
    assert jax.numpy.all((x >= 1.0) & (x < 2.0))


MULTI = [
    "--config=configs/arithmetic.py:model=nmu,op=mul,smoke",
    "--config.num_seeds=5",
    "--config.num_steps=1000",
    "--config.eval_every=500",
    "--config.seed_block=2",
    "--noprogress",
]


def test_two_processes_equal_one_process(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(
        os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1"
    )
    main = [sys.executable, "-m", "nalu_jax.main", *MULTI]
    procs = [
        subprocess.Popen(
            [
                *main,
                f"--workdir={tmp_path / 'two'}",
                f"--coordinator_address=localhost:{port}",
                "--num_processes=2",
                f"--process_id={i}",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in (1, 0)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    one = subprocess.run(
        [*main, f"--workdir={tmp_path / 'one'}"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    read = lambda d: open(tmp_path / d / "seeds.csv").read()
    assert read("two") == read("one")
    assert sorted(os.listdir(tmp_path / "two" / "checkpoints")) == ["process_0", "process_1"]


@pytest.mark.parametrize(
    ("flags", "environ", "words"),
    [((None, 0, None), {},
      "num_processes (flag or NALU_JAX_NUM_PROCESSES) must be an integer >= 1, got 0."),
     ((None, -2, None), {}, "must be an integer >= 1, got -2."),
     ((None, None, None), {"NALU_JAX_NUM_PROCESSES": "0"}, "must be an integer >= 1, got 0."),
     ((None, None, None), {"NALU_JAX_NUM_PROCESSES": "two"}, "must be an integer, got 'two'."),
     (("h:1", 2, None), {"NALU_JAX_PROCESS_ID": "x"},
      "process_id (flag or NALU_JAX_PROCESS_ID) must be an integer, got 'x'."),
     (("h:1", 2, 2), {}, "process_id must be in [0, 2), got 2."),
     ((None, 2, 0), {}, "coordinator_address must be given")],
)  # fmt: skip
def test_bad_process_counts_are_refused_before_jax_is_asked(flags, environ, words, monkeypatch):
    from nalu_jax.config import ConfigError
    from nalu_jax.runtime import distributed

    for name in distributed.ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as e:
        distributed.initialize(*flags)
    assert words in str(e.value)


def test_one_process_by_flag_or_environment_starts_no_distributed_run(monkeypatch):
    from nalu_jax.runtime import distributed

    called = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda *a: called.append(a))
    for name in distributed.ENV:
        monkeypatch.delenv(name, raising=False)
    distributed.initialize(None, 1, None)
    monkeypatch.setenv("NALU_JAX_NUM_PROCESSES", "1")
    distributed.initialize(None, None, None)
    assert called == []


def test_lr_sweep_settings_equal_separate_runs(tmp_path):
    from nalu_jax.experiments import train_and_evaluate

    config = tiny(load_config("single_module", "op=mul,model=nmu"), seeds=3)
    config.sweep.lr = (1e-3, 1e-2)
    summary = train_and_evaluate(config, str(tmp_path / "sweep"), progress=False)
    assert [s["setting"] for s in summary["settings"]] == ["lr=0.001", "lr=0.01"]
    for h, lr in enumerate((1e-3, 1e-2)):
        alone = tiny(load_config("single_module", "op=mul,model=nmu"), seeds=3)
        alone.train.lr = lr
        train_and_evaluate(alone, str(tmp_path / f"alone{h}"), progress=False)
        swept = open(tmp_path / "sweep" / "settings" / f"{h:03d}" / "seeds.csv").read()
        assert swept == open(tmp_path / f"alone{h}" / "seeds.csv").read()
    table = open(tmp_path / "sweep" / "summary.md").read()
    assert "lr=0.001" in table and "lr=0.01" in table


def test_range_sweep_runs_nine_ranges_in_one_program(tmp_path):
    from nalu_jax.experiments import train_and_evaluate
    from nalu_jax.tasks import range_pair

    config = tiny(load_config("single_module", "op=add,model=nau"), seeds=2, steps=500)
    config.sweep.range_index = tuple(range(1, 10))
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert len(summary["settings"]) == 9
    for k, s in enumerate(summary["settings"], start=1):
        interp, extrap = range_pair(k)
        assert tuple(s["interpolation_range"]) == tuple(interp)
        assert s["threshold"] > 0 and s["num_seeds"] == 2
        assert (tmp_path / "settings" / f"{k - 1:03d}" / "seeds.csv").exists()
    # thresholds differ with the ranges (ε·Σ|x| grows with the magnitudes)
    assert summary["settings"][8]["threshold"] > summary["settings"][6]["threshold"]


def test_unsweepable_field_is_a_config_error(tmp_path):
    from nalu_jax.config import ConfigError
    from nalu_jax.experiments import train_and_evaluate

    config = tiny(load_config("single_module", "op=add,model=nau"))
    with config.unlocked():
        config.sweep.batch_size = (64, 128)
    with pytest.raises(ConfigError, match="sweep.batch_size is not sweepable"):
        train_and_evaluate(config, str(tmp_path), progress=False)
