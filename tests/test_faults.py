"""What happens to real runs: kills, signals, other device counts, damaged checkpoints, failed
writes, a second process on the workdir, impossible seed counts, broken config files."""

import asyncio
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import jax
import numpy as np
import pytest
from conftest import load_config, subprocess_env

from nalu_jax.config import ConfigError
from nalu_jax.experiments import train_and_evaluate
from nalu_jax.reporting import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A run long enough to be interrupted: 4 seeds, 8,000 steps, evaluation every 250 steps and a
# checkpoint every 500 (small evaluation sets, a cheap threshold).
LONG = [
    "--config=configs/arithmetic.py:model=nmu,op=mul,seeds=4,steps=8000,smoke",
    "--config.num_steps=8000",
    "--config.eval_every=250",
    "--config.tensorboard=False",
]


def main_cmd(workdir, args=LONG):
    return [
        sys.executable,
        "-m",
        "nalu_jax.main",
        *args,
        f"--workdir={workdir}",
        "--progress=false",
    ]


def env(devices: int):
    # XLA:CPU host devices on any machine: resumed runs are compared bit for bit, which holds
    # on XLA:CPU (a GPU may differ in last bits between two runs of one program)
    return subprocess_env(
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        NALU_JAX_CACHE=os.path.join(ROOT, ".pytest_cache", "thresholds"),
    )


def finish(workdir, devices=2, args=LONG):
    out = subprocess.run(main_cmd(workdir, args), cwd=ROOT, env=env(devices), capture_output=True,
                         text=True, timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def results(workdir) -> dict:
    return {f: open(os.path.join(workdir, f), "rb").read() for f in ("seeds.csv", "metrics.jsonl")}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("uninterrupted"))
    finish(workdir)
    return results(workdir)


def checkpoints(workdir):
    return glob.glob(os.path.join(workdir, "checkpoints", "[0-9]*"))


def start_and_wait_for_checkpoint(workdir, devices=2, args=LONG):
    proc = subprocess.Popen(main_cmd(workdir, args), cwd=ROOT, env=env(devices),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 600
    while not checkpoints(workdir) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_saves_then_resume_on_one_device_is_identical(tmp_path, uninterrupted, sig, status):
    workdir = str(tmp_path)
    proc = start_and_wait_for_checkpoint(workdir)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == status, err[-2000:]
    last = [ln for ln in err.strip().splitlines() if ln.startswith("nalu_jax: error")]
    assert len(last) == 1 and "run the same command again to resume" in last[0]
    assert "Traceback" not in err
    assert not os.path.exists(os.path.join(workdir, "seeds.csv"))
    out = finish(workdir, devices=1)  # resumed on another device count
    assert "resumed from the checkpoint at step" in out.stderr
    assert results(workdir) == uninterrupted


@pytest.mark.slow
def test_a_stopped_overwrite_run_says_to_resume_without_overwrite(tmp_path, uninterrupted):
    # --overwrite starts clean, so "the same command" would throw the saved steps away
    workdir = str(tmp_path)
    proc = start_and_wait_for_checkpoint(workdir, args=[*LONG, "--overwrite"])
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 143, err[-2000:]
    last = [ln for ln in err.strip().splitlines() if ln.startswith("nalu_jax: error")]
    assert len(last) == 1 and "run the same command without --overwrite to resume" in last[0]
    out = finish(workdir)
    assert "resumed from the checkpoint at step" in out.stderr
    assert results(workdir) == uninterrupted


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume_is_identical(tmp_path, uninterrupted):
    rng = np.random.default_rng(0)
    workdir = str(tmp_path)
    for _ in range(2):
        proc = start_and_wait_for_checkpoint(workdir)
        time.sleep(float(rng.uniform(0.0, 1.5)))  # sometimes inside a checkpoint write
        proc.kill()
        proc.communicate()
    # a checkpoint's directory takes its step's name once it is written whole
    written = [p for p in checkpoints(workdir) if os.path.basename(p).isdigit()]
    out = finish(workdir, devices=1)
    if written:  # the run goes on from one of them rather than from step 0
        assert "resumed from the checkpoint at step" in out.stderr, out.stderr[-2000:]
    assert results(workdir) == uninterrupted


def smoke(tmp_path, **fields):
    config = load_config("arithmetic", "model=nmu,op=mul,smoke")
    config.checkpoint_every = 500
    for k, v in fields.items():
        config[k] = v
    return config


def flip_bits(path: str, count: int = 3) -> None:
    data = bytearray(open(path, "rb").read())
    for i in np.linspace(len(data) // 3, len(data) - 1, count).astype(int):
        data[i] ^= 0x10
    open(path, "wb").write(bytes(data))


def data_files(step_dir: str) -> list:
    return [p for p in glob.glob(os.path.join(step_dir, "**", "*"), recursive=True)
            if os.path.isfile(p) and "d/" in p.replace(os.sep, "/")]  # fmt: skip


@pytest.mark.parametrize(
    "damage", ["flip", "truncate", "delete", "metadata", "empty"], ids=lambda d: d
)
def test_damaged_latest_checkpoint_falls_back_to_an_intact_one(tmp_path, capsys, damage):
    config = smoke(tmp_path)
    first = train_and_evaluate(config, str(tmp_path), progress=False)
    expected = results(str(tmp_path))
    steps = sorted(checkpoints(str(tmp_path)), key=lambda p: int(os.path.basename(p)))
    older, latest = os.path.basename(steps[-2]), steps[-1]
    files = data_files(latest)
    assert files, os.listdir(latest)
    if damage == "flip":
        for f in files:
            flip_bits(f)
    elif damage == "truncate":
        for f in files:
            os.truncate(f, os.path.getsize(f) // 2)
    elif damage == "delete":
        for f in files:
            os.unlink(f)
    elif damage == "metadata":
        for f in glob.glob(os.path.join(latest, "**", "_METADATA"), recursive=True):
            os.unlink(f)
    else:
        for f in os.listdir(latest):
            p = os.path.join(latest, f)
            os.system(f"rm -rf '{p}'")
    os.unlink(tmp_path / "seeds.csv")
    capsys.readouterr()
    again = train_and_evaluate(config, str(tmp_path), progress=False)
    err = capsys.readouterr().err
    assert f"checkpoint at step {os.path.basename(latest)}" in err and "unusable" in err
    assert f"resumed from the checkpoint at step {older} " in err  # not from step 0
    assert results(str(tmp_path)) == expected
    assert again["solved"] == first["solved"]


SMOKE = [
    "--config=configs/arithmetic.py:model=nmu,op=mul,seeds=2,smoke",
    "--config.tensorboard=False",
]


def test_truncated_latest_checkpoint_resumes_with_one_sentence_on_stderr(tmp_path):
    """The resume says which checkpoint it skipped and where it resumed, and nothing else (no
    tracebacks of the restore's other reads finishing after the failed one)."""
    finish(tmp_path, devices=1, args=SMOKE)
    expected = results(str(tmp_path))
    older, step = sorted(int(os.path.basename(p)) for p in checkpoints(str(tmp_path)))[-2:]
    for f in data_files(os.path.join(tmp_path, "checkpoints", str(step))):
        os.truncate(f, os.path.getsize(f) // 2)
    os.unlink(tmp_path / "seeds.csv")
    err = finish(tmp_path, devices=1, args=SMOKE).stderr
    kept = err.split(f"checkpoints-unusable/{step}-")[-1].split(",")[0]  # its time stamp
    # the smoke budget's warnings (it ends before the λ ramp; its few seeds are mostly padding)
    budget = "nalu_jax: warning: "
    assert [ln for ln in err.splitlines() if not ln.startswith(budget)] == [
        f"nalu_jax: checkpoint at step {step} in {tmp_path}/checkpoints is unusable: it cannot "
        f"be read (ValueError); moved to {tmp_path}/checkpoints-unusable/{step}-{kept}, "
        f"trying step {older}.",
        f"nalu_jax: resumed from the checkpoint at step {older} in {tmp_path}/checkpoints.",
    ], err
    assert results(str(tmp_path)) == expected


def test_a_closed_restore_loop_first_waits_for_its_pending_reads():
    """A read that finishes in another thread after a sibling failed ends inside the loop."""
    from nalu_jax.runtime.checkpoint import _draining_event_loops

    with _draining_event_loops():
        loop = asyncio.new_event_loop()
    assert isinstance(asyncio.get_event_loop_policy(), asyncio.DefaultEventLoopPolicy)
    done, thread_errors = [], []

    async def slow_read():
        future = loop.create_future()

        def finish_later():  # as tensorstore's threads do: a callback into the loop
            time.sleep(0.2)
            try:
                loop.call_soon_threadsafe(future.set_result, 1)
            except RuntimeError as e:
                thread_errors.append(e)

        threading.Thread(target=finish_later).start()
        done.append(await future)

    async def failed_read():
        raise ValueError("truncated")

    async def restore():
        await asyncio.gather(slow_read(), failed_read())

    with pytest.raises(ValueError, match="truncated"):
        loop.run_until_complete(restore())
    loop.close()
    assert done == [1] and thread_errors == []


def test_overwrite_always_starts_clean(tmp_path, capsys):
    config = smoke(tmp_path)
    train_and_evaluate(config, str(tmp_path), progress=False)
    expected = results(str(tmp_path))
    capsys.readouterr()
    summary = train_and_evaluate(config, str(tmp_path), overwrite=True, progress=False)
    assert "resumed" not in capsys.readouterr().err
    assert results(str(tmp_path)) == expected
    assert summary["seed_steps_per_s"] > 0


def test_resumed_finished_run_reports_the_whole_runs_timing(tmp_path):
    config = smoke(tmp_path)
    first = train_and_evaluate(config, str(tmp_path), progress=False)
    again = train_and_evaluate(config, str(tmp_path), progress=False)
    assert again["seed_steps_per_s"] > 0 and again["wall_time_s"] >= first["wall_time_s"] * 0.99


def test_a_failed_write_is_one_sentence_and_loses_nothing(tmp_path, monkeypatch, capsys):
    from nalu_jax import cli
    from nalu_jax.engine import run as run_lib

    config = smoke(tmp_path)

    def full(path, data):
        raise OSError(28, "No space left on device", path)

    monkeypatch.setattr(report, "atomic_write", full)
    monkeypatch.setattr(run_lib, "atomic_write", full)
    with pytest.raises(SystemExit) as exit_info:
        with cli.reported_errors():
            train_and_evaluate(config, str(tmp_path), progress=False)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    err = [line for line in err if "nalu_jax: warning: " not in line]  # the smoke budget's
    assert len(err) == 1 and "No space left on device" in err[0] and "resume" in err[0]
    monkeypatch.undo()
    capsys.readouterr()
    train_and_evaluate(config, str(tmp_path), progress=False)
    assert "resumed from the checkpoint at step 1000" in capsys.readouterr().err


def test_an_allocation_the_host_cannot_make_is_one_sentence(capsys):
    # e.g. sequential MNIST's --config.task.eval_sequences=1000000000: numpy's MemoryError,
    # raised while the evaluation sequences are drawn, was a traceback
    from nalu_jax import cli

    with pytest.raises(SystemExit) as exit_info:
        with cli.reported_errors():
            raise MemoryError("Unable to allocate 74.5 GiB for an array with shape (10, 10)")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "nalu_jax: error: out of memory (Unable to allocate 74.5 GiB for an array with shape "
        "(10, 10)): ask for less at once (fewer seeds or evaluation examples, or more "
        "processes: --num_processes)."
    ]


def test_a_second_live_process_is_refused_and_a_dead_ones_lock_is_taken(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from nalu_jax.runtime.workdir import lock; "
         f"lock({str(tmp_path)!r}); print('locked', flush=True); time.sleep(60)"],
        env=env(1), stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    config = smoke(tmp_path)
    with pytest.raises(ConfigError, match=f"in use by process {holder.pid}"):
        train_and_evaluate(config, str(tmp_path), progress=False)
    holder.kill()
    holder.wait()
    train_and_evaluate(config, str(tmp_path), progress=False)  # the lock died with it
    assert os.path.exists(tmp_path / "seeds.csv")


def test_impossible_seed_count_is_refused_before_the_workdir_exists(tmp_path):
    config = smoke(tmp_path, num_seeds=10**8)
    workdir = tmp_path / "never"
    with pytest.raises(ConfigError, match=r"num_seeds=100000000 needs about [\d.]+ GiB"):
        train_and_evaluate(config, str(workdir), progress=False)
    assert not workdir.exists()


class FakeDevice:
    """A device as ``jax.Device`` reports its memory (``memory_stats``; None on the CPU)."""

    def __init__(self, platform, limit=None, in_use=0):
        self.platform, self.limit, self.in_use = platform, limit, in_use

    def memory_stats(self):
        return (
            None if self.limit is None else {"bytes_limit": self.limit, "bytes_in_use": self.in_use}
        )


def test_memory_check_uses_the_devices_memory_off_the_cpu(tmp_path, monkeypatch):
    from nalu_jax.engine import run as run_lib
    from nalu_jax.engine import sweep
    from nalu_jax.experiments import EXPERIMENTS

    config = smoke(tmp_path, num_seeds=40)
    experiment = EXPERIMENTS["arithmetic"]
    pop = experiment.population(config, sweep.expand(config, experiment.sweepable))
    gpus = [FakeDevice("gpu", 2**40), FakeDevice("gpu", 2**40)]
    on_device, host = run_lib.device_memory_estimate(pop, 40, config, gpus)
    # the host's three copies and each device's share add up to the one-host estimate
    data = pop.trainer.train_data, pop.trainer.eval_data
    shared = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(data))
    assert host + 2 * (on_device - shared) + shared == run_lib.memory_estimate(
        pop, 40, config, gpus
    )
    monkeypatch.setattr(run_lib, "available_memory", lambda: 2**40)  # a roomy host
    run_lib.check_memory(pop, 40, config, gpus)
    # one device nearly full: refused by its free memory (limit − in use), not the host's
    full = [gpus[0], FakeDevice("gpu", 2**40, in_use=2**40 - on_device)]
    with pytest.raises(
        ConfigError, match=r"needs about [\d.]+ GiB on each gpu device \(40 runs over 2\)"
    ):
        run_lib.check_memory(pop, 40, config, full)
    # the host still holds the checkpoint copies and the history
    monkeypatch.setattr(run_lib, "available_memory", lambda: host)
    with pytest.raises(ConfigError, match="on this host"):
        run_lib.check_memory(pop, 40, config, gpus)
    # on the CPU the devices share the host's memory: the one-host estimate against it
    cpus = [FakeDevice("cpu"), FakeDevice("cpu")]
    monkeypatch.setattr(run_lib, "available_memory", lambda: 2 * on_device + host)
    run_lib.check_memory(pop, 40, config, cpus)
    monkeypatch.setattr(
        run_lib, "available_memory", lambda: run_lib.memory_estimate(pop, 40, config, cpus)
    )
    with pytest.raises(ConfigError, match="on this host"):
        run_lib.check_memory(pop, 40, config, cpus)


def test_result_files_are_readable_by_others_and_no_temp_files_stay(tmp_path):
    stale = tmp_path / ".tmp-leftover"
    stale.write_text("half")
    train_and_evaluate(smoke(tmp_path), str(tmp_path), progress=False)
    assert not stale.exists()
    for name in ("seeds.csv", "summary.json", "metrics.jsonl", "config.json"):
        assert os.stat(tmp_path / name).st_mode & 0o044 == 0o044, name


def test_refused_resume_names_the_field_that_differs(tmp_path):
    train_and_evaluate(smoke(tmp_path), str(tmp_path), progress=False)
    other = smoke(tmp_path)
    other.train.beta1 = 0.8
    with pytest.raises(ConfigError, match=r"differs in train\.beta1"):
        train_and_evaluate(other, str(tmp_path), progress=False)


@pytest.mark.parametrize(
    "args, expect",
    [
        (["--config=configs/nope.py", "--config.num_seeds=3"], "No such file"),
        (["--config={bad}"], "syntax error on line 1"),
        (["--config=configs/arithmetic.py:smoke", "--config.train.lr=inf"], "train.lr"),
        (
            ["--config=configs/arithmetic.py:smoke", "--config.task.interpolation_range=(nan,2)"],
            "task.interpolation_range must be finite numbers",
        ),
    ],
)
def test_config_file_and_value_errors_are_one_sentence(tmp_path, args, expect):
    bad = tmp_path / "bad.py"
    bad.write_text("def get_config(:\n")
    args = [a.format(bad=bad) for a in args]
    out = subprocess.run(main_cmd(tmp_path / "w", args), cwd=ROOT, env=env(1),
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], out.stderr[-1500:]


def read_events(logdir) -> list:
    """The ``Event`` records of the TFRecord event files under ``logdir``, in order."""
    import struct

    from tensorboardX.proto.event_pb2 import Event

    events = []
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        data, pos = open(path, "rb").read(), 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            events.append(Event.FromString(data[pos + 12 : pos + 12 + length]))
            pos += 12 + length + 4  # length, its crc, the record, its crc
    return events


def read_scalars(logdir) -> dict:
    """``{tag: [(step, value)]}`` from the TFRecord event files under ``logdir``."""
    out = {}
    for event in read_events(logdir):
        for v in event.summary.value:
            out.setdefault(v.tag, []).append((event.step, v.simple_value))
    return out


def test_tensorboard_events_read_back(tmp_path):
    config = smoke(tmp_path)
    train_and_evaluate(config, str(tmp_path), progress=False)
    scalars = read_scalars(tmp_path / "tensorboard")
    for tag in ("valid_mse/median", "test_mse/max", "sparsity/q25", "runs/solved", "runs/diverged"):
        assert tag in scalars, sorted(scalars)
    assert [step for step, _ in scalars["test_mse/median"]] == [0, 1000, 2000]
    last = json.loads(open(tmp_path / "metrics.jsonl").readlines()[-1])
    got = scalars["test_mse/median"][-1][1]
    assert got == pytest.approx(last["extrapolation_mse"]["0.5"], rel=1e-6)
    assert scalars["runs/solved"][-1][1] == last["seeds_solved"]
    # one event per evaluation, holding all its scalars (an event per scalar cost a small
    # model's loop ~18%)
    with_values = [e.step for e in read_events(tmp_path / "tensorboard") if e.summary.value]
    assert with_values == [0, 1000, 2000]


def test_tensorboard_per_setting_in_a_sweep_and_off_switch(tmp_path):
    config = smoke(tmp_path)
    config.sweep.lr = (1e-3, 1e-2)
    train_and_evaluate(config, str(tmp_path / "on"), progress=False)
    tags = read_scalars(tmp_path / "on" / "tensorboard")
    assert "setting_000/test_mse/median" in tags and "setting_001/runs/solved" in tags
    off = smoke(tmp_path)
    off.tensorboard = False
    train_and_evaluate(off, str(tmp_path / "off"), progress=False)
    assert not (tmp_path / "off" / "tensorboard").exists()


def test_subprocesses_extend_pythonpath_never_replace_it(monkeypatch):
    # dependencies installed with ``pip --target`` live on PYTHONPATH: a subprocess started
    # from the checkout must still import them (an editable install is not the only one)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/deps/a", "/deps/b"]))
    assert env(2)["PYTHONPATH"].split(os.pathsep) == [ROOT, "/deps/a", "/deps/b"]
    assert env(2)["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"
    assert env(2)["JAX_PLATFORMS"] == "cpu"
    monkeypatch.delenv("PYTHONPATH")
    assert env(1)["PYTHONPATH"] == ROOT
