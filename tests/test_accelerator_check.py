"""``tools.accelerator_check``: its pieces on hand-made inputs, and ``--smoke`` end to end on
whatever platform the tests run on (the CPU in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from tools import accelerator_check as check


def test_overlaps_compares_wilson_intervals():
    # 94/100: Wilson [87.5%, 97.2%]; 80/100: [71.1%, 86.7%] (no overlap); 90/100: [82.6%, 94.5%]
    assert check.overlaps(94, 100, 0.94)
    assert check.overlaps(90, 100, 0.94)
    assert not check.overlaps(80, 100, 0.94)
    assert not check.overlaps(0, 100, 0.13)  # the TF32 failure: 0/100 against 13%


def _perturbed(src, dst, field: str, factor: float):
    """A copy of fixture ``src`` with every combination's ``field`` scaled by ``factor``."""
    with np.load(src) as npz:
        meta, flat = json.loads(str(npz["meta"])), npz["data"].copy()
    for key, (shape, offset) in meta["layout"].items():
        if key.endswith(f"/{field}"):
            flat[offset : offset + int(np.prod(shape))] *= factor
    np.savez(dst, meta=np.array(json.dumps(meta)), data=flat)


def test_parity_passes_the_committed_fixture_and_catches_a_tf32_sized_error(tmp_path):
    unit, worst, tol = check.parity(check.FIXTURES / "nau.npz")
    assert unit == "nau" and worst < tol == check.PARITY_TOL
    _perturbed(check.FIXTURES / "nau.npz", tmp_path / "nau.npz", "y", 1 + 5e-4)  # TF32: 2⁻¹¹
    _, worst, tol = check.parity(tmp_path / "nau.npz")
    assert worst > tol


def test_a_failed_check_exits_1(monkeypatch, capsys):
    rows = [("a", "1", "1", "ok"), ("b", "2", "1", "FAIL"), ("c", "3", "", "—")]
    monkeypatch.setattr(check, "checks", lambda smoke, workdir: iter(rows))
    assert check.main(["--smoke"]) == 1
    out = capsys.readouterr().out
    assert "| b | 2 | 1 | FAIL |" in out and "1 check(s) failed" in out
    monkeypatch.setattr(check, "checks", lambda smoke, workdir: iter(rows[::2]))
    assert check.main(["--smoke"]) == 0


@pytest.mark.slow  # about a minute on 2 cores: the audit's lowering, 33 fixtures, six tiny runs
def test_smoke_passes_here():
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, "-m", "tools.accelerator_check", "--smoke"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True,
        timeout=1200,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("device: ") and lines[1].startswith("versions: python ")
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and "---" not in line]
    checks = [r[0].lstrip("| ") for r in rows[1:]]
    assert checks[0] == "precision audit"
    assert len([c for c in checks if c.startswith("parity ")]) == len(
        list(check.FIXTURES.glob("*.npz"))
    )
    assert [c for c in checks if c.startswith("simple")] == [
        "simple × nmu",
        "simple × nalu",
        "simple × nac_mul",
    ]
    assert [c for c in checks if c.startswith("throughput")] == [
        "throughput 2 seeds",
        "throughput 4 seeds",
    ]
    assert [c for c in checks if c.startswith("run loop")] == [
        "run loop, plain × NMU 7 runs, evaluated every 100",
        "run loop, range sweep 1 × 7 runs, evaluated every 100",
        "run loop, range sweep 1 × 7 runs, evaluated every 2,000",
    ]
    assert [c for c in checks if c.startswith("program alone")] == [
        "program alone, plain × NMU 7 runs (the loop's config)"
    ]
    rate = [r for r in rows if r[0].lstrip("| ").startswith("program alone")][0][1]
    assert float(rate.split()[0].replace(",", "")) > 0
    assert lines[-1] == "all checks passed"


def test_published_simple_intervals_are_the_wilson_intervals_of_the_published_rates():
    # the authors print each rate with its interval rounded to whole percent (simple_mul.tex)
    from nalu_jax.reporting.metrics import wilson_interval
    from tools import accelerator_check as ac

    for model, rate in ac.PUBLISHED_SIMPLE.items():
        lo, hi = wilson_interval(round(rate * ac.SIMPLE_SEEDS), ac.SIMPLE_SEEDS)
        assert (round(lo, 2), round(hi, 2)) == ac.PUBLISHED_SIMPLE_INTERVALS[model], model
