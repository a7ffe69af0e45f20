"""What a run shows explains itself: the model column is named for what it holds, a column has
one number format, summary.md says what its threshold bounds, curves.png is titled and its
bands named, and a finished workdir keeps no lock."""

import io
import os
import re

import matplotlib.image
import numpy as np
import pytest
from conftest import load_config, tiny

from nalu_jax.experiments import train_and_evaluate
from nalu_jax.experiments.arithmetic_report import combined_markdown
from nalu_jax.reporting import plots


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("run"))
    config = tiny(load_config("arithmetic", "model=nmu,op=mul"), seeds=2, steps=1000)
    config.tensorboard = False
    with pytest.MonkeyPatch.context() as mp:  # its curves.png is read below
        mp.setenv("NALU_JAX_FIGURES", "1")
        return workdir, train_and_evaluate(config, workdir, progress=False)


def test_a_finished_run_leaves_no_lock(finished):
    workdir, _ = finished
    assert not os.path.exists(os.path.join(workdir, ".lock"))
    assert os.path.exists(os.path.join(workdir, "seeds.csv"))


def test_summary_says_what_the_threshold_bounds(finished):
    workdir, summary = finished
    text = open(os.path.join(workdir, "summary.md")).read()
    row = next(ln for ln in text.splitlines() if ln.startswith("| threshold"))
    assert "extrapolation MSE" in row and "best validation step" in row
    assert f"{summary['threshold']:.4g}" in row


def test_curves_png_is_titled_with_model_op_steps_and_seeds(finished):
    workdir, _ = finished
    with open(os.path.join(workdir, "curves.png"), "rb") as f:
        data = f.read()
    title = re.search(rb"tEXtTitle\x00([^\x00]*?)\x00\x00\x00", data)
    assert title is not None
    text = title.group(1).decode()
    assert text.startswith("nmu, arithmetic / mul") and "1,000 steps, 2 seeds" in text
    assert matplotlib.image.imread(io.BytesIO(data)).ndim == 3  # still a readable image


def test_curves_png_names_its_bands(monkeypatch):
    labels = []
    real = plots.png

    def spy(fig, title=None):
        labels.extend(t.get_text() for ax in fig.axes if ax.get_legend() for t in
                      ax.get_legend().get_texts())  # fmt: skip
        return real(fig, title)

    monkeypatch.setattr(plots, "png", spy)
    history = {"step": np.arange(3) * 500.0, "valid_mse": np.ones((3, 2)),
               "test_mse": np.ones((3, 2))}  # fmt: skip
    plots.curves_png(history, 3, 0.5, lambda v, t, th: np.zeros(3), "nmu")
    assert sum("25%–75%" in label for label in labels) == 2  # interpolation and extrapolation


def test_curves_png_draws_an_evaluation_no_seed_survived_as_a_gap_without_a_warning():
    import warnings

    # the second evaluation: every seed's MSE overflowed (the gated NAU/NMU's at 5·10⁶ steps)
    mse = np.array([[1.0, 2.0], [np.inf, np.nan], [0.5, 0.25]])
    history = {"step": np.arange(3) * 500.0, "valid_mse": mse, "test_mse": mse}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = plots.curves_png(history, 3, 0.5, lambda v, t, th: np.zeros(3), "gated")
    assert matplotlib.image.imread(io.BytesIO(data)).ndim == 3


def _row(model, setting, solved_at, sparsity, values=None):
    return {"model": model, "setting": setting, "setting_values": values or {}, "solved": 1,
            "num_seeds": 2, "success_rate": 0.5, "success_interval": (0.1, 0.9),
            "solved_at_median": solved_at, "sparsity_error_mean": sparsity, "diverged": 0,
            "task": "arithmetic", "op": "mul", "num_steps": 50_000}  # fmt: skip


def test_the_model_column_is_named_for_what_it_holds():
    compared = combined_markdown(
        [_row("nmu", "nmu", 2000.0, 1e-5), _row("nalu", "nalu", 36000.0, 0.012)]
    )
    assert compared.startswith("| # | model | success")
    one = combined_markdown([_row("nmu", "nmu", 2000.0, 1e-5)])  # compare_models --models=nmu
    assert one.startswith("| # | model | success")
    swept = combined_markdown([_row("nmu", "range_index=1", 2000.0, 1e-5, {"range_index": 1}),
                               _row("nmu", "range_index=2", 36000.0, 0.012, {"range_index": 2})])  # fmt: skip
    assert swept.startswith("| # | setting | success")
    both = combined_markdown([_row("nmu", "nmu range_index=1", 2000.0, 1e-5, {"range_index": 1}),
                              _row("nalu", "nalu range_index=1", 3.0, 0.5, {"range_index": 1})])  # fmt: skip
    assert both.startswith("| # | model and setting | success")


def test_one_number_format_per_column():
    table = combined_markdown(
        [_row("nmu", "nmu", 2000.0, 1e-5), _row("nalu", "nalu", 36000.0, 0.012)]
    )
    rows = [ln.split(" | ") for ln in table.splitlines()[2:4]]
    assert [r[4] for r in rows] == ["2,000", "36,000"]  # solved at: whole steps
    assert [r[5] for r in rows] == ["1.00e-05", "1.20e-02"]  # sparsity: e-notation
