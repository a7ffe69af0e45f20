"""Identity-extrapolation experiment: end to end, and the failure it exists to show."""

import csv
import json

import pytest
from conftest import load_config

from nalu_jax.config import ConfigError
from nalu_jax.experiments import EXPERIMENTS, train_and_evaluate


def test_smoke_config_writes_every_output(tmp_path, figures_on):
    config = load_config("identity", "smoke")
    experiment = EXPERIMENTS[config.experiment]
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    names = list(config.identity.activations)
    rows = list(csv.DictReader(open(tmp_path / "seeds.csv")))
    assert [(r["activation"], r["seed"]) for r in rows] == [(a, s) for a in names for s in "01"]
    errors = list(csv.DictReader(open(tmp_path / "errors.csv")))
    assert len(errors) == len(names) * config.identity.grid_size
    assert sorted(json.load(open(tmp_path / "summary.json"))["activations"]) == sorted(names)
    table = open(tmp_path / "summary.md").read()
    assert table == experiment.format_summary(summary)
    assert all(f"| {a} |" in table for a in names)
    assert open(tmp_path / "curves.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert json.load(open(tmp_path / "config.json"))["experiment"] == "identity"


def test_linear_extrapolates_and_saturating_activations_do_not(tmp_path):
    config = load_config("identity", "seeds=3,steps=2000")
    config.seed_block = 3
    config.train.lr = 1e-2
    config.identity.activations = ("linear", "relu6", "sigmoid", "tanh")
    acts = train_and_evaluate(config, str(tmp_path), progress=False)["activations"]
    assert acts["linear"]["mae_outside"]["mean"] < 1e-2
    for name in ("relu6", "sigmoid", "tanh"):
        inside, outside = acts[name]["mae_inside"]["mean"], acts[name]["mae_outside"]["mean"]
        assert inside < 0.1 and outside > 50 * inside, (name, inside, outside)
        assert acts[name]["diverged"] == 0


@pytest.mark.parametrize(
    "field, value",
    [("activations", ("relu", "nope")), ("hidden_layers", (8, 0)), ("train_range", (5.0, -5.0))],
)
def test_bad_values_are_config_errors(tmp_path, field, value):
    config = load_config("identity", "smoke")
    config.identity[field] = value
    with pytest.raises(ConfigError, match=f"identity.{field}"):
        train_and_evaluate(config, str(tmp_path), progress=False)


def test_lr_is_a_traced_sweep_axis_like_the_other_experiments(tmp_path):
    config = load_config("identity", "smoke")
    config.sweep.lr = (1e-3, 1e-2)
    summary = train_and_evaluate(config, str(tmp_path / "sweep"), progress=False)
    assert [s["setting"] for s in summary["settings"]] == ["lr=0.001", "lr=0.01"]
    alone = load_config("identity", "smoke")
    alone.train.lr = 1e-2
    train_and_evaluate(alone, str(tmp_path / "alone"), progress=False)
    swept = open(tmp_path / "sweep" / "settings" / "001" / "seeds.csv").read()
    assert swept == open(tmp_path / "alone" / "seeds.csv").read()  # seed k: same numbers
    first = open(tmp_path / "sweep" / "settings" / "000" / "seeds.csv").read()
    assert first != swept


def test_median_curve_leaves_a_point_no_live_seed_holds_as_a_gap_without_a_warning():
    import warnings

    import numpy as np

    from nalu_jax.experiments.identity import _median_curve

    errors = np.array([[1.0, np.inf, 3.0], [2.0, np.nan, 5.0], [9.0, 9.0, 9.0]])
    r = {"errors": errors, "diverged": np.array([False, False, True])}  # the third diverged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curve = _median_curve(r)
    np.testing.assert_array_equal(curve[[0, 2]], [1.5, 4.0])  # medians of the two live seeds
    assert np.isnan(curve[1])
