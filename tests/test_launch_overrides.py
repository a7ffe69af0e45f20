"""``--config.FIELD=VALUE`` on ``launch/reproduce.py`` and ``launch/compare_models.py``, as on
``nalu_jax.main``: applied to every cell or model, each checked before anything runs, a bad
one a single sentence with exit status 2."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT, subprocess_env

from nalu_jax.cli import take_config_items

TABLE = ["-m", "launch.reproduce", "--table=iclr2020-arithmetic", "--ops=add", "--models=nau",
         "--seeds=2", "--steps=1000", "--smoke", "--calibration_steps=0", "--noprogress",
         "--results="]  # fmt: skip
COMPARE = ["-m", "launch.compare_models", "--config=configs/arithmetic.py:op=add,smoke",
           "--models=nau", "--noprogress", "--config.num_seeds=2", "--config.num_steps=500",
           "--config.eval_every=250", "--config.checkpoint_every=250",
           "--config.tensorboard=False"]  # fmt: skip


def launch(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          env=subprocess_env(JAX_PLATFORMS="cpu"), timeout=600)  # fmt: skip


def test_take_config_items_keeps_order_and_other_flags():
    items = []
    rest = take_config_items(
        ["prog", "--table=t", "--config.seed_block=4", "-config.train.lr=0.5", "--seeds=2"], items
    )
    assert rest == ["prog", "--table=t", "--seeds=2"]
    assert items == ["seed_block=4", "train.lr=0.5"]


def test_reproduce_applies_an_override_to_every_cell(tmp_path):
    out = launch(*TABLE, f"--workdir={tmp_path}", "--config.seed_block=2",
                 "--config.tensorboard=False")  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    written = json.load(open(tmp_path / "cells" / "add-nau" / "config.json"))
    assert written["seed_block"] == 2 and written["tensorboard"] is False
    assert not (tmp_path / "cells" / "add-nau" / "tensorboard").exists()


def test_compare_models_applies_a_block_override(tmp_path):
    out = launch(*COMPARE, f"--workdir={tmp_path}", "--config.seed_block=1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.load(open(tmp_path / "nau" / "config.json"))["seed_block"] == 1


@pytest.mark.parametrize(
    ("script", "arg", "sentence"),
    [(TABLE, "--config.seed_block=0", "seed_block must be 'auto' or an integer >= 1, got 0."),
     (TABLE, "--config.train.lrr=1", "train.lrr is not a config field."),
     (TABLE, "--config.eval_size=big", "eval_size must be a int, got 'big'."),
     (TABLE, "--config.seed_block", "--config.seed_block needs a field and =VALUE"),
     (COMPARE, "--config.seed_block=0", "seed_block must be 'auto' or an integer >= 1, got 0."),
     # a count of 0 is refused, not read as "the published number" (the flag's default)
     (TABLE, "--seeds=0", "flag --seeds=0: 0 is not a positive integer"),
     (TABLE, "--steps=0", "flag --steps=0: 0 is not a positive integer")],
)  # fmt: skip
def test_a_bad_override_is_one_sentence_before_anything_runs(script, arg, sentence, tmp_path):
    out = launch(*script, f"--workdir={tmp_path / 'w'}", arg)
    assert out.returncode == 2, out.stderr[-3000:]
    assert sentence in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr  # that sentence alone
    assert not (tmp_path / "w" / "cells").exists()  # nothing ran


def test_report_only_refuses_overrides_and_a_workdir_that_does_not_exist(tmp_path):
    out = launch(*TABLE, f"--workdir={tmp_path}", "--report_only", "--config.seed_block=2")
    assert out.returncode == 2
    assert "--config.FIELD overrides apply to runs; --report_only runs nothing." in out.stderr
    out = launch(*TABLE, f"--workdir={tmp_path / 'typo'}", "--report_only")  # was status 1
    assert out.returncode == 2 and out.stderr.strip() == (
        f"nalu_jax: error: --report_only tabulates the cells run in --workdir, and "
        f"{tmp_path / 'typo'} is no directory: give the --workdir the cells ran in."
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []
