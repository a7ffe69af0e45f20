"""``launch.reproduce --check``: a committed cell's first seeds, re-run at its committed
protocol, give its committed rows; a changed row is found; another platform is judged by the
stated tolerance; the check never writes into results/."""

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
    monkeypatch.setattr(check_lib, "platform_of", lambda m: f"{m.get('platform')} (elsewhere)"
                        if m is not None and m.get("cpu") != "x" else "gpu (H100)")  # fmt: skip
    from nalu_jax.reproduce import results

    monkeypatch.setattr(results, "machine", lambda: {"platform": "gpu", "cpu": "x"})
    ok, lines = _check(committed, tmp_path, seeds=1)
    assert ok and check_lib.TOLERANCE_TEXT in "\n".join(lines)


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
