"""The benchmark scripts' command lines: bad input is one sentence and exit status 2, before
anything compiles."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _refuses(module, cases):
    """Each ``(args, words)`` of ``cases``: exit status 2, ``words`` in the last line of stderr,
    nothing on stdout."""
    for args, words in cases:
        out = _run(module, *args)
        assert out.returncode == 2, out.stderr
        assert words in out.stderr.strip().splitlines()[-1], out.stderr
        assert out.stdout == ""


def test_profile_step_seeds_off_the_seed_block():
    out = _run(
        "benchmarks.profile_step", "--task", "single_module", "--models", "nac_add", "--seeds", "25"
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert "--seeds must be a multiple of nac_add's seed block (13)" in last, last
    assert "25 is not (e.g. --seeds 26)" in last, last
    assert out.stdout == ""  # nothing measured


def test_floor_unknown_probe():
    out = _run("benchmarks.floor", "--probes", "cos,tan")
    assert out.returncode == 2, out.stderr
    assert "--probes: unknown ['tan']" in out.stderr, out.stderr
    assert out.stdout == ""


def test_loop_breakdown_bad_cell_and_count():
    _refuses("benchmarks.loop_breakdown", (
        (("--table", "iclr2020-hidden-size", "--cell", "mul-nmu-h99"),
         "--cell must be one of table iclr2020-hidden-size's cells"),
        (("--steps", "0"), "--steps must be a positive integer."),
        (("--table", "nope"), "--table must be one of"),
    ))  # fmt: skip


def test_loop_breakdown_counts_every_call_of_a_run():
    import json

    # 2 seeds of the hidden-size cell × 3,000 steps, evaluated every 1,000 and checkpointed
    # every 2,000 (the cell's 10,000 lowered): 3 training calls, 4 evaluations, one
    # checkpoint inside the loop and the last one after it
    out = _run("benchmarks.loop_breakdown", "--table", "iclr2020-hidden-size", "--cell",
               "mul-nmu-h2", "--seeds", "2", "--steps", "3000", "--checkpoint_every", "2000",
               "--no_alone")  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert (row["runs"], row["steps"], row["eval_every"]) == (2, 3000, 1000)
    assert (row["train_calls"], row["evaluate_calls"], row["checkpoints"]) == (3, 4, 2)
    assert row["seed_block"] == 10  # the CPU's block
    parts = row["train_s"] + row["evaluate_s"] + row["checkpoint_s"]
    assert 0 < parts and abs(parts + row["rest_s"] - row["loop_s"]) < 0.05
    assert abs(row["train_seed_steps_per_s"] * row["train_s"] / 6000 - 1) < 0.05  # s rounded
    assert "alone_seed_steps_per_s" not in row


@pytest.mark.slow  # 22 s on 2 idle cores
def test_estimate_bad_input_and_its_row():
    import json

    _refuses("benchmarks.estimate", (
        (("--models", "foo"), "--models names 'foo', not a model of table 'iclr2020-arithmetic'"),
        (("--ops", "pow"), "--ops names 'pow'"),
        (("--repeat", "0"), "--repeat must be a positive integer."),
    ))  # fmt: skip
    out = _run("benchmarks.estimate", "--steps", "1000", "--calibration_steps", "500")
    assert out.returncode == 0, out.stderr[-3000:]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert (row["cell"], row["seeds"], row["steps"]) == ("add-nau", 2, 1000)
    error = abs(row["estimate_s"] - row["wall_s"]) / row["wall_s"]
    assert abs(error - row["error"]) < 1e-3
    assert row["within_target"] == (row["error"] <= 0.25 + row["noise"])


def test_profile_step_default_seeds_fill_the_seed_block():
    """The default 50 seeds, rounded up to the block each config runs with on the CPU: the
    arithmetic task's 10 keeps 50, the single-module units' 13 makes 52 (50 would be refused,
    as 25 is in test_profile_step_seeds_off_the_seed_block)."""
    from benchmarks.profile_step import default_seeds, engine_block
    from benchmarks.throughput import benchmark_config

    assert default_seeds(benchmark_config("nmu")) == 50
    assert default_seeds(benchmark_config("nac_add", task="single_module")) == 52
    assert engine_block(benchmark_config("nac_add", task="single_module"), 52) == 13


def test_profile_step_non_positive_seeds():
    _refuses("benchmarks.profile_step", [(("--seeds", "0"), "--seeds must be a positive integer.")])


def _refused_in_process(module, args, monkeypatch, capsys):
    """``module``'s ``main()`` run in this process on ``args``: it exits with status 2; its
    captured output."""
    import importlib

    main = importlib.import_module(module).main
    monkeypatch.setattr(sys, "argv", [module, *args])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2
    return capsys.readouterr()


@pytest.mark.parametrize(
    ("module", "args", "flag"),
    [("benchmarks.throughput", ["--seeds", "0"], "seeds"),
     ("benchmarks.throughput", ["--repeat", "-1"], "repeat"),
     ("benchmarks.floor", ["--rounds", "0"], "rounds"),
     ("benchmarks.profile_step", ["--steps", "0"], "steps"),
     ("benchmarks.sequence_throughput", ["--rounds", "0"], "rounds"),
     ("benchmarks.gridworld_env", ["--agents", "64", "0"], "agents"),
     ("benchmarks.reference_throughput",
      ["--python", "python", "--stable-nalu", ".", "--processes", "0"], "processes"),
     ("tools.compare_throughput", ["--against", "HEAD", "--seeds", "100", "-5"], "seeds")],
)  # fmt: skip
def test_a_count_below_one_is_one_sentence_before_anything_runs(module, args, flag, monkeypatch,
                                                                capsys):  # fmt: skip
    out = _refused_in_process(module, args, monkeypatch, capsys)
    assert out.err.splitlines() == [f"--{flag} must be a positive integer."] and out.out == ""


@pytest.mark.parametrize(
    ("module", "args", "error"),
    [("benchmarks.sequence_throughput", ["--blocks", "0,5"],
      "--blocks must be positive integers, got '0,5'."),
     ("benchmarks.sequence_throughput", ["--blocks", "a"],
      "--blocks must be positive integers, got 'a'."),
     ("benchmarks.sequence_throughput", ["--cases", "mnist8_sum,nope"], "--cases: unknown ['nope']"),
     ("benchmarks.sequence_throughput", ["--modes", "both"],
      "--modes takes seeds and/or batch, got 'both'."),
     ("benchmarks.profile_step", ["--kernels", "-1"],
      "--kernels must be an integer >= 0 (0: no trace), got -1."),
     ("benchmarks.profile_step", ["--models", "nmu,nope"], "--models: unknown ['nope']"),
     ("benchmarks.profile_step", ["--set", "x=1"], "x is not a config field."),
     ("benchmarks.throughput", ["--models", "nope"], "--models: unknown ['nope']"),
     ("benchmarks.throughput", ["--set", "foo"], "an override must be field=value, got 'foo'."),
     ("benchmarks.throughput", ["--seeds", "2", "--set", "num_seeds=abc"],
      "num_seeds must be a int, got 'abc'."),
     ("benchmarks.throughput", ["--seeds", "2", "--steps", "200"],  # was the child's traceback
      "eval_every must divide num_steps, got eval_every=1000 and num_steps=200."),
     ("benchmarks.floor", ["--set", "x=1"], "x is not a config field."),
     ("tools.compare_throughput", ["--against", "HEAD", "--model", "nope"],
      "--models: unknown ['nope']"),
     ("benchmarks.reference_throughput", ["--python", "/nonexistent/python", "--stable-nalu", "."],
      "--python: /nonexistent/python is not an executable Python."),
     ("benchmarks.reference_throughput", ["--python", sys.executable, "--stable-nalu", "/nonexistent"],
      "--stable-nalu: /nonexistent has no experiments/simple_function_static.py.")],
)  # fmt: skip
def test_a_bad_list_path_or_name_is_argparses_error_before_anything_runs(
    module, args, error, monkeypatch, capsys
):
    from nalu_jax.units import UNITS

    units = set(UNITS)
    out = _refused_in_process(module, args, monkeypatch, capsys)  # was a traceback, or status 1
    *usage, last = out.err.strip().splitlines()
    assert usage[0].startswith("usage: ") and error in last and ": error: " in last
    # in this process: a refusal registers no unit (floor's probes would, and other tests
    # of this worker read the registry)
    assert set(UNITS) == units


def test_repro_init_hang_takes_no_flags(capsys):
    from tools import repro_init_hang

    with pytest.raises(SystemExit) as e:  # before its two minutes of child processes
        repro_init_hang.main(["--seeds", "4"])
    assert e.value.code == 2
    assert "unrecognized arguments: --seeds 4" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["tools.check_identity", "tools.compare_throughput"])
def test_against_that_names_no_commit_is_refused_before_anything_is_created(
    module, tmp_path, monkeypatch, capsys
):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where its worktree would go
    for rev in ("deadbeef", "no-such-branch", "HEAD:README.md"):  # the last is a file, not a commit
        out = _refused_in_process(module, [f"--against={rev}"], monkeypatch, capsys)
        *usage, error = out.err.strip().splitlines()
        assert usage[0].startswith("usage: ")
        assert error.endswith(
            f"error: --against {rev!r} names no commit of the checkout at {ROOT}."
        )
    assert list(tmp_path.iterdir()) == []


def test_commit_or_refuse_resolves_a_commit_to_its_hash():
    import argparse
    import subprocess

    from tools import commit_or_refuse

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    assert commit_or_refuse(argparse.ArgumentParser(), "HEAD") == head.stdout.strip()


def test_non_positive_reads_scalars_lists_and_unset_fields():
    from argparse import Namespace

    from benchmarks import non_positive

    assert non_positive(Namespace(a=1, b=None, c=[2, 3]), ("a", "b", "c")) is None
    assert non_positive(Namespace(a=1, c=[2, 0]), ("a", "c")) == "--c must be a positive integer."
    assert non_positive(Namespace(a=0, c=[0]), ("a", "c")) == "--a must be a positive integer."
