"""The benchmark scripts' command lines: bad input is one sentence and exit status 2, before
anything compiles."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


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
