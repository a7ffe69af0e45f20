"""tools/make_parity_fixtures.py, the developer tool that writes tests/parity/*.npz from the
reference PyTorch code: its refusals come before any work (and without PyTorch), and a fixture
file is written whole or not at all. Writing real fixtures needs PyTorch and the reference
checkouts, which CI has neither of; tests/test_units_parity.py checks the files it wrote."""

import importlib.util
import json

import numpy as np
import pytest

from tools import make_parity_fixtures as tool

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _refused(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        tool.main(argv)
    assert e.value.code == 2
    *usage, error = capsys.readouterr().err.strip().splitlines()
    assert usage[0].startswith("usage: ") and ": error: " in error  # argparse's usage, one error
    assert not any(": error: " in line for line in usage)
    return error


def test_help_without_torch(capsys):
    with pytest.raises(SystemExit) as e:
        tool.main(["--help"])
    assert e.value.code == 0 and "--refs REFS" in capsys.readouterr().out


def test_missing_checkout_and_unknown_case_are_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "out"
    message = _refused(capsys, ["--refs", str(tmp_path / "none"), "--out", str(out)])
    assert "--refs" in message and "no stable-nalu checkout" in message
    # only the repositories the chosen cases need: npu is nalm-benchmark's
    (tmp_path / "refs" / "stable-nalu" / "stable_nalu").mkdir(parents=True)
    message = _refused(capsys, ["--refs", str(tmp_path / "refs"), "--cases=npu", "--out", str(out)])
    assert "no nalm-benchmark checkout" in message
    message = _refused(capsys, ["--refs", str(tmp_path / "refs"), "--cases=nmu,nope"])
    assert "--cases names ['nope']" in message
    assert not out.exists()


def test_checkout_is_found_under_either_name(tmp_path):
    (tmp_path / "stable-nalu" / "stable_nalu").mkdir(parents=True)
    (tmp_path / "ref-nalm-division" / "stable_nalu").mkdir(parents=True)
    (tmp_path / "nalm-benchmark").mkdir()  # no stable_nalu package: not a checkout
    assert tool.checkout(str(tmp_path), "stable-nalu") == str(tmp_path / "stable-nalu")
    assert tool.checkout(str(tmp_path), "nalm-division") == str(tmp_path / "ref-nalm-division")
    assert tool.checkout(str(tmp_path), "nalm-benchmark") is None


@pytest.mark.skipif(HAS_TORCH, reason="PyTorch is installed: the tool would go on to run")
def test_without_torch_one_sentence_after_the_flags(tmp_path, capsys):
    for repo in tool.REPOS.values():
        (tmp_path / repo / "stable_nalu").mkdir(parents=True)
    message = _refused(capsys, ["--refs", str(tmp_path), "--out", str(tmp_path / "out")])
    assert "PyTorch is not installed" in message and "docstring" in message
    assert not (tmp_path / "out").exists()


def test_fixture_written_whole_or_not_at_all(tmp_path, monkeypatch):
    path = str(tmp_path / "nmu.npz")
    flat, meta = np.arange(5, dtype=np.float64), {"unit": "nmu", "layout": {"a": [[5], 0]}}
    tool.write_fixture(path, flat, meta)
    with np.load(path) as f:
        np.testing.assert_array_equal(f["data"], flat)
        assert json.loads(str(f["meta"])) == meta
    before = open(path, "rb").read()

    def fails(file, **arrays):  # a write that dies half-way (a full disk, a kill)
        file.write(b"PK\x03\x04 half a file")
        raise OSError("No space left on device")

    monkeypatch.setattr(np, "savez_compressed", fails)
    with pytest.raises(OSError):
        tool.write_fixture(path, flat * 2, meta)
    assert open(path, "rb").read() == before  # the previous fixture, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nmu.npz"]  # no temporary left
