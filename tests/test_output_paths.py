"""Where a command writes (its workdir, a results root or cell) is checked before it trains
or submits: a path under a file, or under a directory it cannot write, is one sentence and
status 2, not a failed write once the training is done (a results root is first written
after its cell)."""

import os
import subprocess
import sys

import pytest
from conftest import ROOT, subprocess_env

from nalu_jax.config import ConfigError
from nalu_jax.runtime.workdir import refuse_unwritable


def test_a_path_that_is_or_can_become_a_directory_passes(tmp_path):
    refuse_unwritable("--workdir", str(tmp_path))  # exists
    refuse_unwritable("--workdir", str(tmp_path / "a" / "b" / "c"))  # can be made
    assert list(tmp_path.iterdir()) == []  # and nothing is created


def test_a_path_under_a_file_or_an_unwritable_directory_is_refused(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError) as e:
        refuse_unwritable("--results", str(tmp_path / "f" / "cell"))
    assert str(e.value) == f"--results={tmp_path / 'f' / 'cell'} cannot be a directory: " + (
        f"{tmp_path / 'f'} is not one."
    )
    with pytest.raises(ConfigError, match="cannot be a directory"):
        refuse_unwritable("--results", str(tmp_path / "f"))
    # the test may run as root, who may write anywhere: the permission itself is simulated
    monkeypatch.setattr(os, "access", lambda path, mode: path != str(tmp_path))
    with pytest.raises(ConfigError) as e:
        refuse_unwritable("--workdir", str(tmp_path / "runs" / "x"))
    assert str(e.value) == (
        f"--workdir={tmp_path / 'runs' / 'x'} cannot be written: {tmp_path} is not writable."
    )


SMOKE_TABLE = ["launch.reproduce", "--table=iclr2020-arithmetic", "--ops=add", "--models=nau",
               "--smoke", "--calibration_steps=0", "--noprogress"]  # fmt: skip
SMOKE_CONFIG = "--config=configs/arithmetic.py:op=add,smoke"


@pytest.mark.parametrize(
    ("args", "flag"),
    [([*SMOKE_TABLE, "--workdir={file}/w"], "--workdir"),
     ([*SMOKE_TABLE, "--workdir={tmp}/w", "--results={file}"], "--results"),
     (["launch.compare_models", SMOKE_CONFIG, "--models=nau", "--workdir={tmp}/w",
       "--results={file}/cells"], "--results"),
     (["nalu_jax.main", SMOKE_CONFIG, "--workdir={tmp}/w", "--results={file}/cell"],
      "--results"),
     (["launch.slurm", "--table=iclr2020-arithmetic", "--ops=add", "--models=nau", "--smoke",
       "--cluster=debug", "--workdir={file}/w"], "--workdir")],
)  # fmt: skip
def test_each_command_refuses_before_it_trains(args, flag, tmp_path):
    (tmp_path / "file").write_text("")
    args = [a.format(file=tmp_path / "file", tmp=tmp_path) for a in args]
    out = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                         env=subprocess_env(JAX_PLATFORMS="cpu"), timeout=300)  # fmt: skip
    assert out.returncode == 2, out.stderr[-3000:]
    assert out.stderr.strip().splitlines() == [
        f"nalu_jax: error: {flag}={next(a.split('=', 1)[1] for a in args if a.startswith(flag))} "
        f"cannot be a directory: {tmp_path / 'file'} is not one."
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing ran, nothing made
