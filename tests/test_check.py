"""``launch.reproduce --check``: a committed cell's first seeds, re-run at its committed
protocol, give its committed rows; a changed row is found; another platform is judged by the
stated tolerance; the check never writes into results/."""

import json
import os

import pytest

from nalu_jax.config import ConfigError
from nalu_jax.reproduce import check as check_lib
from nalu_jax.reproduce import reproduce
from nalu_jax.reproduce.cells import SMOKE
from nalu_jax.reproduce.results import read_csv


@pytest.fixture(scope="module")
def committed(tmp_path_factory):
    """A results root holding one tiny iclr2020-arithmetic cell (add-nau, 3 seeds)."""
    root = str(tmp_path_factory.mktemp("results"))
    work = str(tmp_path_factory.mktemp("work"))
    reproduce("iclr2020-arithmetic", work, models=["nau"], ops=["add"], seeds=3, steps=1000,
              overrides={**SMOKE, "tensorboard": False}, calibration_steps=0, progress=False,
              results=root, log=lambda *_: None)  # fmt: skip
    return root


def _check(root, tmp_path, seeds=2, log=None):
    lines = []
    ok = check_lib.check("iclr2020-arithmetic", "add-nau", seeds=seeds, root=root,
                         workdir=str(tmp_path / "check"), calibration_steps=0, progress=False,
                         log=lines.append)  # fmt: skip
    return ok, lines


def test_rerun_of_committed_seeds_is_identical(committed, tmp_path):
    ok, lines = _check(committed, tmp_path)
    assert ok, lines
    assert "the rows must be identical" in "\n".join(lines)
    assert lines[-1].startswith(
        "iclr2020-arithmetic/add-nau: 2 committed rows of seeds 0–1 identical"
    )


def test_a_changed_committed_row_is_found(committed, tmp_path):
    path = os.path.join(committed, "iclr2020-arithmetic", "add-nau", "seeds.csv")
    original = open(path).read()
    rows = read_csv(path)
    mse = rows[1]["extrapolation_mse"]
    try:
        with open(path, "w") as f:
            f.write(original.replace(mse, repr(float(mse) * (1 + 1e-6)), 1))
        ok, lines = _check(committed, tmp_path)
    finally:
        with open(path, "w") as f:
            f.write(original)
    assert not ok
    assert any("seed 1 extrapolation_mse" in ln for ln in lines), lines


def test_another_platform_is_judged_by_the_tolerance(committed, tmp_path, monkeypatch):
    monkeypatch.setattr(check_lib, "platform_of", lambda m, **_: f"{m.get('platform')} (elsewhere)"
                        if m is not None and m.get("cpu") != "x" else "gpu (H100)")  # fmt: skip
    from nalu_jax.reproduce import results

    monkeypatch.setattr(results, "machine", lambda: {"platform": "gpu", "cpu": "x"})
    ok, lines = _check(committed, tmp_path, seeds=1)
    assert ok and check_lib.TOLERANCE_TEXT in "\n".join(lines)


def test_platform_names_the_cpus_vector_width_where_recorded():
    cpu = {"platform": "cpu", "cpu": "AMD EPYC", "device_kind": "cpu", "vector_width": 256}
    assert check_lib.platform_of(cpu) == "cpu (AMD EPYC, 256-bit vectors)"
    assert check_lib.platform_of(cpu, vector_width=False) == "cpu (AMD EPYC)"
    assert check_lib.platform_of({**cpu, "vector_width": 512}) != check_lib.platform_of(cpu)
    older = {k: v for k, v in cpu.items() if k != "vector_width"}
    assert check_lib.platform_of(older) == "cpu (AMD EPYC)"
    gpu = {"platform": "gpu", "cpu": "AMD EPYC", "device_kind": "NVIDIA H200"}
    assert check_lib.platform_of(gpu) == "gpu (NVIDIA H200)"


def _with_committed_machine(committed, edit):
    """The committed cell's provenance with each batch's machine edited; the original back."""
    path = os.path.join(committed, "iclr2020-arithmetic", "add-nau", "provenance.json")
    original = open(path).read()
    provenance = json.loads(original)
    for batch in provenance["batches"]:
        batch["machine"] = edit(dict(batch["machine"]))
    with open(path, "w") as f:
        json.dump(provenance, f)
    return path, original


@pytest.mark.parametrize("recorded", ["other width", "none"])
def test_the_same_cpu_name_with_other_vectors_is_another_platform(committed, tmp_path, recorded):
    from nalu_jax.reproduce import results

    here = results.machine()
    if here.get("vector_width") is None:
        pytest.skip("this CPU's vector width is unknown (not x86 Linux)")
    if recorded == "other width":
        other = 512 if here["vector_width"] != 512 else 256
        path, original = _with_committed_machine(committed, lambda m: {**m, "vector_width": other})
    else:  # a batch from before provenance recorded the width: the CPU's name decides
        path, original = _with_committed_machine(
            committed, lambda m: {k: v for k, v in m.items() if k != "vector_width"}
        )
    try:
        ok, lines = _check(committed, tmp_path, seeds=1)
    finally:
        with open(path, "w") as f:
            f.write(original)
    text = "\n".join(lines)
    assert ok, lines
    if recorded == "other width":
        assert check_lib.TOLERANCE_TEXT in text and f"{other}-bit vectors" in text
    else:
        assert "the rows must be identical" in text
        assert "records no vector width" in text


def test_tolerance_keeps_verdicts_exact_and_numbers_close():
    row = {"seed": "0", "solved": "1", "best_step": "1000", "extrapolation_mse": "1e-3"}
    close = {**row, "best_step": "1050", "extrapolation_mse": "1.05e-3"}
    far = {**row, "extrapolation_mse": "2e-3"}
    flipped = {**row, "solved": "0"}
    assert check_lib.compare_rows([row], [close], exact=False) == []
    assert check_lib.compare_rows([row], [close], exact=True) != []
    assert check_lib.compare_rows([row], [far], exact=False) == [
        "seed 0 extrapolation_mse: committed 1e-3, re-run 2e-3"
    ]
    assert len(check_lib.compare_rows([row], [flipped], exact=False)) == 1


def test_a_temporary_rerun_is_removed_unless_its_rows_differ(committed, tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where mkdtemp puts the re-run
    lines = []
    run = lambda: check_lib.check("iclr2020-arithmetic", "add-nau", seeds=1, root=committed,
                                  calibration_steps=0, progress=False, log=lines.append)  # fmt: skip
    assert run() and list(scratch.iterdir()) == []  # identical: nothing left behind
    path = os.path.join(committed, "iclr2020-arithmetic", "add-nau", "seeds.csv")
    original = open(path).read()
    mse = read_csv(path)[0]["extrapolation_mse"]
    try:
        with open(path, "w") as f:
            f.write(original.replace(mse, repr(float(mse) * (1 + 1e-6)), 1))
        assert not run()
    finally:
        with open(path, "w") as f:
            f.write(original)
    (kept,) = scratch.iterdir()  # a difference: the re-run stays, and the log says where
    assert kept.name.startswith("nalu-check-add-nau-") and (kept / "seeds.csv").exists()
    assert lines[-1] == f"  the re-run stays in {kept}"


def test_never_writes_into_results_and_names_bad_input(committed, tmp_path):
    inside = os.path.join(committed, "scratch")
    with pytest.raises(ConfigError, match="lies inside"):
        check_lib.check("iclr2020-arithmetic", "add-nau", root=committed, workdir=inside,
                        calibration_steps=0)  # fmt: skip
    assert not os.path.exists(inside)
    with pytest.raises(ConfigError, match="not a cell of"):
        check_lib.check("iclr2020-arithmetic", "add-nmu_typo", root=committed)
    with pytest.raises(ConfigError, match="holds no committed cell"):
        check_lib.check("iclr2020-arithmetic", "mul-nmu", root=committed)
    with pytest.raises(ConfigError, match="--seeds must be 1 to 3"):
        check_lib.check("iclr2020-arithmetic", "add-nau", seeds=4, root=committed)


def test_blocks_note_says_what_padding_costs():
    from nalu_jax.config import load_config

    config = load_config("arithmetic", "model=nmu,op=mul")
    config.num_seeds, config.seed_block = 2, 10
    note = check_lib.blocks_note(config, 2)
    assert "2 padded block(s) of seed_block=10" in note and "up to --seeds=20" in note
