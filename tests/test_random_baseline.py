"""The NALU paper's random baseline (``launch.random_baseline``): each seed's untrained network
on the run's own evaluation sets.

The independent computation: a run at a learning rate of 10⁻³⁰ does not move its parameters
(each Adam step, about the learning rate, is far below a float32 ulp of theirs), so every
evaluation it makes — and the best-step MSEs its ``seeds.csv`` records — is its untrained
network's. The baseline written for that run's cell must equal them seed by seed (scaled error
exactly 100).
"""

import csv
import os

import numpy as np
import pytest
from conftest import load_config

from launch import random_baseline as launcher
from nalu_jax.engine.run import run
from nalu_jax.experiments import EXPERIMENTS
from nalu_jax.experiments.random_baseline import scaled_errors


def _rows(path):
    with open(path) as f:
        return {int(r["seed"]): r for r in csv.DictReader(f)}


@pytest.mark.parametrize(
    ("name", "arg"),
    [("arithmetic", "smoke,model=nac_add,op=add"), ("recurrent", "smoke,op=add,model=nac_add")],
)
def test_baseline_is_the_untrained_networks_error(tmp_path, name, arg):
    config = load_config(name, arg)
    with config.unlocked():
        config.num_seeds = 3
        config.first_seed = 5  # the seed numbers, not the positions, pick the keys
        config.train.lr = 1e-30
    workdir = str(tmp_path / "cell")
    run(EXPERIMENTS[name], config, workdir, progress=False, warn_budget=False)
    assert launcher.main([workdir]) == 0

    seeds = _rows(os.path.join(workdir, "seeds.csv"))
    base = _rows(os.path.join(workdir, "random_baseline.csv"))
    assert sorted(base) == sorted(seeds) == [5, 6, 7]
    trained = [float(seeds[k]["extrapolation_mse"]) for k in sorted(seeds)]
    random = [float(base[k]["test_mse"]) for k in sorted(base)]
    np.testing.assert_allclose(random, trained, rtol=1e-5)
    np.testing.assert_allclose(
        [float(base[k]["valid_mse"]) for k in sorted(base)],
        [float(seeds[k]["interpolation_mse"]) for k in sorted(seeds)],
        rtol=1e-5,
    )
    np.testing.assert_allclose(scaled_errors(trained, random), 100.0, rtol=1e-5)
    # the seeds differ from one another (the baseline is per seed, not one network)
    assert len(set(random)) == 3


def test_scaled_errors_hand_computed():
    s = scaled_errors([1.0, 4.0, float("nan"), 2.0], [100.0, 10.0, 5.0, 0.0])
    np.testing.assert_array_equal(s[:2], [1.0, 40.0])
    assert np.isnan(s[2]) and np.isnan(s[3])  # a diverged seed; a zero baseline


def test_a_cell_of_another_experiment_is_refused(tmp_path, capsys):
    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / "config.json").write_text('{"experiment": "identity"}')
    assert launcher.main([str(cell)]) == 2
    assert "needs recurrent or arithmetic" in capsys.readouterr().err
    assert launcher.main([str(tmp_path / "missing")]) == 2
    capsys.readouterr()
    # a flag is not a cell: --help prints the usage, any other is refused
    assert launcher.main([str(cell), "--help"]) == 0
    assert capsys.readouterr().out.startswith("The NALU paper's random baseline")
    assert launcher.main(["--workdir=x", str(cell)]) == 2
    assert capsys.readouterr().err == (
        "--workdir=x: this command takes no flags, only results/ cell directories.\n"
    )


def test_a_cell_extended_by_a_batch_gets_the_new_seeds_baseline(tmp_path):
    """``results.merge`` of a batch into a cell holding ``random_baseline.csv``: the committed
    rows stay as they were and the new seeds' rows follow, as the baseline of one run of all
    the seeds gives them; a cell without the file gets none."""
    from nalu_jax.reproduce import results as results_lib

    def seeds(first, n, name):
        config = load_config("arithmetic", "smoke,model=nac_add,op=add")
        with config.unlocked():
            config.first_seed, config.num_seeds = first, n
        workdir = str(tmp_path / name)
        run(EXPERIMENTS["arithmetic"], config, workdir, progress=False, warn_budget=False)
        return workdir

    cell, bare, whole = (str(tmp_path / n) for n in ("cell", "bare", "whole"))
    first, more = seeds(0, 2, "first"), seeds(2, 2, "more")
    results_lib.commit(first, cell)
    results_lib.commit(first, bare)
    assert launcher.main([cell]) == 0
    committed = open(os.path.join(cell, "random_baseline.csv")).read()

    results_lib.merge(cell, more)
    results_lib.merge(bare, more)
    os.rename(seeds(0, 4, "run"), whole)
    assert launcher.main([whole]) == 0
    extended = open(os.path.join(cell, "random_baseline.csv")).read()
    assert extended.startswith(committed) and extended != committed
    assert extended == open(os.path.join(whole, "random_baseline.csv")).read()
    assert sorted(_rows(os.path.join(cell, "random_baseline.csv"))) == [0, 1, 2, 3]
    assert not os.path.exists(os.path.join(bare, "random_baseline.csv"))
