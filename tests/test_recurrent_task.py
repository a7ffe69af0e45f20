"""The recurrent arithmetic task: data, threshold, engine run end to end, and learning."""

import csv
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import load_config
from flax import nnx

from nalu_jax.config import ConfigError
from nalu_jax.engine.train import seed_keys
from nalu_jax.experiments import recurrent, train_and_evaluate
from nalu_jax.experiments.arithmetic import build_task
from nalu_jax.tasks import ArithmeticTask, subset_masks, success_threshold


def test_target_is_the_op_on_time_summed_subsets():
    task = ArithmeticTask("mul", input_size=4, subset_ratio=0.5, overlap_ratio=0.5)
    masks = subset_masks(task, 1)  # subsets {1, 2} and {2, 3}
    xs = jnp.array([[[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]]])  # [batch 1, T 2, n 4]
    a = (2 + 3) + (20 + 30)
    b = (3 + 4) + (30 + 40)
    got = jax.jit(recurrent.sequence_target, static_argnums=0)("mul", xs, masks)
    np.testing.assert_allclose(got, [a * b])
    np.testing.assert_allclose(recurrent.sequence_target("sub", xs, masks), [a - b])


def test_training_batches_are_sequences_with_their_targets():
    config = load_config("recurrent", "smoke")
    trainer = recurrent.trainer_for(config)
    assert trainer.eval_data["valid"].shape == (100, 10, 10)
    assert trainer.eval_data["test"].shape == (100, config.task.test_length, 10)
    assert float(trainer.eval_data["test"].min()) >= 2.0  # extrapolation range U[2, 6)
    state = trainer.init(seed_keys(0, [0])[0])
    model = nnx.merge(trainer.graphdef, state.params)
    assert model(trainer.eval_data["valid"]).shape == (100, 1)
    assert model.readout.__class__.__name__ == "NAU"  # op add → NAU readout


def test_threshold_is_positive_finite_and_larger_for_mul(monkeypatch):
    task = lambda op: ArithmeticTask(op, input_size=10)
    add = recurrent.recurrent_threshold(task("add"), 50, num_samples=2000)
    mul = recurrent.recurrent_threshold(task("mul"), 50, num_samples=2000)
    assert 0 < add < mul < np.inf
    # A length-1 "sequence" is the static task's construction (other draws: ~equal values).
    one = recurrent.recurrent_threshold(task("add"), 1, num_samples=2000)
    assert one == pytest.approx(success_threshold(task("add"), num_samples=2000), rel=0.1)

    def fail(*args, **kwargs):
        raise AssertionError("simulated despite a cached value")

    monkeypatch.setattr(recurrent.thr, "simulate_mean", fail)
    again = recurrent.recurrent_threshold(task("add"), 50, num_samples=2000)
    assert again == add  # cached: read back, not simulated again


def test_smoke_config_runs_through_the_engine(tmp_path, figures_on):
    summary = train_and_evaluate(load_config("recurrent", "smoke"), str(tmp_path), progress=False)
    assert summary["task"] == "recurrent" and summary["num_seeds"] == 2
    assert summary["threshold"] > 0
    rows = list(csv.DictReader(open(tmp_path / "seeds.csv")))
    assert [r["seed"] for r in rows] == ["0", "1"]
    assert json.load(open(tmp_path / "summary.json"))["model"] == "nau"
    assert os.path.exists(tmp_path / "curves.png")


@pytest.mark.parametrize("model", ["lstm", "nac_mul"])
def test_baseline_and_log_space_cells_build(model):
    config = load_config("recurrent", f"model={model},op=mul,smoke")
    trainer = recurrent.trainer_for(config)
    state = trainer.init(seed_keys(0, [0])[0])
    y = nnx.merge(trainer.graphdef, state.params)(trainer.eval_data["valid"])
    assert y.shape == (100, 1) and bool(jnp.all(jnp.isfinite(y)))


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("model.name", "lstmm", "model.name"),
        ("task.train_length", 0, "task.train_length"),
        ("task.test_length", -3, "task.test_length"),
        ("model.readout", "bogus", "model.readout"),
        ("model.recurrent_init", "eye", "model.recurrent_init"),
    ],
)
def test_bad_config_values_are_config_errors(field, value, match):
    config = load_config("recurrent", "smoke")
    section, name = field.split(".")
    config[section][name] = value
    with pytest.raises(ConfigError, match=match):
        recurrent.validate(config)
        recurrent.trainer_for(config)


@pytest.mark.slow  # 32 seeds × 10,000 steps: 25 s on 2 idle cores, 2 min on busy ones
def test_nau_cell_learns_the_sum_and_extrapolates_to_length_1000(tmp_path):
    # One accumulator (hidden 1) over 4 inputs, two single-input subsets and 2 irrelevant ones:
    # small enough to converge in 10,000 steps. The spec's hidden-2, 10-input model needs far
    # longer budgets (see nalu_jax/experiments/recurrent.py).
    config = load_config("recurrent", "model=nau,op=add,seeds=32")
    config.seed_block = 4
    # 10,000 steps: with the reference implementations' gradient conventions at the clamp bound
    # and at W = 0/±1, XLA:CPU solves 20 of seeds 0–31: a rate near 0.6, at which >= 5 of 8
    # seeds fails a third of the time (seeds 16–23 solve 3). An untrained cell solves none. At
    # >= 8 of 32, a rate of 0.6 fails by chance with probability 1.3·10⁻⁵ (binomial), 0.5 with
    # 10⁻³.
    config.num_steps, config.eval_every, config.checkpoint_every = 10_000, 100, 10_000
    config.eval_size, config.task.threshold_samples = 100, 5000
    config.task.input_size, config.task.overlap_ratio = 4, 0.0
    config.model.hidden_size = 1
    config.train.lr = 1e-2
    config.train.reg_scale, config.train.reg_schedule = 1.0, "linear"
    config.train.reg_start, config.train.reg_end = 1000.0, 3000.0
    assert build_task(config).subset_size == 1
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert summary["num_seeds"] == 32
    assert summary["solved"] >= 8, summary


def test_reproduce_protocol_departs_from_the_spec_only_where_documented():
    spec = load_config("recurrent", "model=nau")
    rep = load_config("recurrent", "model=nau,protocol=reproduce")
    assert (spec.num_steps, rep.num_steps) == (100_000, 50_000)
    # the departures (configs/recurrent.py, docs/reproductions/recurrent.md)
    assert (rep.train.reg_scale, rep.train.reg_schedule) == (10.0, "linear")
    assert (rep.train.reg_start, rep.train.reg_end) == (0.0, 20_000.0)
    assert (rep.train.lr_decay_from, rep.train.lr_decay_to) == (25_000.0, 1e-4)
    assert tuple(rep.task.extrapolation_range) == tuple(rep.task.interpolation_range)
    assert spec.train.lr_decay_from is None and spec.train.reg_schedule == "exp"
    # everything that fixes the task and the judgement stays the spec's
    for field in ("input_size", "train_length", "test_length", "threshold_samples", "op"):
        assert rep.task[field] == spec.task[field], field
    assert rep.task.threshold_epsilon == spec.task.threshold_epsilon
    assert rep.model.hidden_size == spec.model.hidden_size == 2
    assert spec.model.recurrent_init == "random"
    # +: the hidden-to-hidden block starts at the identity; − keeps the random
    assert rep.model.recurrent_init == "identity" and rep.train.reg_scale == 10.0
    sub = load_config("recurrent", "model=nau,op=sub,protocol=reproduce")
    assert (sub.model.recurrent_init, sub.train.reg_scale) == ("random", 10.0)
    # ×: a stronger regulariser and the identity hidden-to-hidden block
    mul = load_config("recurrent", "model=nau,op=mul,protocol=reproduce")
    assert (mul.train.reg_scale, mul.model.recurrent_init) == (1_000.0, "identity")
    assert load_config("recurrent", "model=nau,op=mul").model.recurrent_init == "random"
    with pytest.raises(ConfigError, match="protocol must be spec or reproduce"):
        load_config("recurrent", "protocol=paper")


def test_reproduce_protocol_smoke_runs_with_the_lr_decay(tmp_path):
    config = load_config("recurrent", "model=nau,protocol=reproduce,smoke")
    assert config.train.lr_decay_from == 100.0  # half of the smoke's 200 steps
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert summary["num_steps"] == 200 and summary["threshold"] > 0


def test_readout_regularisers_count_from_readout_reg_from():
    from nalu_jax.models.arithmetic import REG_KEYS
    from nalu_jax.units.recurrent import final_output

    config = load_config("recurrent", "smoke")
    config.model.readout_reg_from = 100
    trainer = recurrent.trainer_for(config)
    model = nnx.merge(trainer.graphdef, trainer.init(seed_keys(0, [0])[0]).params)
    assert model.readout_reg_from == 100
    xs = trainer.eval_data["valid"][:16]
    # Independently: the cell's regularisers (averaged over time) and the readout's on h_T.
    h, _, cell_regs = final_output(model.cell, xs)
    readout_regs = model.readout.regularizers(h)
    assert float(readout_regs["sparse"]) > 0  # the test distinguishes with and without
    for step, with_readout in ((0, False), (99, False), (100, True), (5_000, True), (None, True)):
        _, regs = model.apply_with_regularizers(xs, step=None if step is None else jnp.int32(step))
        for k in REG_KEYS:
            want = cell_regs.get(k, 0.0) + (readout_regs.get(k, 0.0) if with_readout else 0.0)
            np.testing.assert_allclose(regs[k], want, rtol=1e-6, atol=1e-9, err_msg=f"{k} {step}")
    config.model.readout_reg_from = -1
    with pytest.raises(ConfigError, match="model.readout_reg_from must be a step >= 0"):
        recurrent.trainer_for(config)
