"""Sequential MNIST: IDX files, digit data, cumulative targets, the reference and a smoke run."""

import csv
import gzip
import json
import os

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from conftest import load_config
from flax import nnx

from nalu_jax.config import ConfigError
from nalu_jax.experiments import train_and_evaluate
from nalu_jax.experiments.sequential_mnist import thresholds_from
from nalu_jax.models.sequence import SequentialDigitsModel
from nalu_jax.tasks import digits


def idx_bytes(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
    return header + array.astype(np.uint8).tobytes()


def write_mnist(directory, n_train=5, n_test=3, gz=False, labels_train=None, dotted=False):
    rng = np.random.default_rng(0)
    arrays = {
        "train_images": rng.integers(0, 256, (n_train, 4, 4)),
        "train_labels": rng.integers(0, 10, n_train) if labels_train is None else labels_train,
        "test_images": rng.integers(0, 256, (n_test, 4, 4)),
        "test_labels": rng.integers(0, 10, n_test),
    }
    for key, stem in digits.MNIST_FILES.items():
        data = idx_bytes(np.asarray(arrays[key]))
        name = stem.replace("-idx", ".idx") if dotted else stem
        path = os.path.join(directory, name + (".gz" if gz else ""))
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if gz else data)
    return arrays


def data_config(source="mnist_idx", directory=""):
    c = ml_collections.ConfigDict()
    c.data = ml_collections.ConfigDict(
        {"source": source, "directory": str(directory), "train_size": 1500}
    )
    return c


@pytest.mark.parametrize("gz,dotted", [(False, False), (True, False), (False, True), (True, True)])
def test_idx_reader_and_mnist_loader(tmp_path, gz, dotted):
    arrays = write_mnist(tmp_path, gz=gz, dotted=dotted)
    name = "train-images.idx3-ubyte" if dotted else "train-images-idx3-ubyte"
    read = digits.read_idx(str(tmp_path / (name + (".gz" if gz else ""))))
    np.testing.assert_array_equal(read, arrays["train_images"])
    train_x, train_y, test_x, test_y = digits.load_digits_dataset(data_config(directory=tmp_path))
    assert train_x.shape == (5, 4, 4) and test_x.shape == (3, 4, 4)
    assert train_x.dtype == np.float32 and 0.0 <= train_x.min() and train_x.max() <= 1.0
    np.testing.assert_allclose(train_x * 255, arrays["train_images"], atol=1e-4)
    np.testing.assert_array_equal(train_y, arrays["train_labels"])
    assert test_y.dtype == np.int32


def test_idx_errors_name_the_file(tmp_path):
    path = tmp_path / "broken-idx"
    with pytest.raises(digits.DataError, match="broken-idx.*does not exist"):
        digits.read_idx(str(path))
    path.write_bytes(b"\x01\x02\x08\x01" + b"\x00" * 8)
    with pytest.raises(digits.DataError, match="broken-idx.*bad magic"):
        digits.read_idx(str(path))
    path.write_bytes(idx_bytes(np.zeros((4, 3, 3)))[:-5])
    with pytest.raises(digits.DataError, match="broken-idx.*truncated"):
        digits.read_idx(str(path))
    path.write_bytes(b"\x00\x00\x08\x03\x00\x00")
    with pytest.raises(digits.DataError, match="broken-idx.*truncated"):
        digits.read_idx(str(path))
    write_mnist(tmp_path, labels_train=np.arange(4))  # 5 images, 4 labels
    with pytest.raises(digits.DataError, match="train-labels-idx1-ubyte.*4 labels for 5 images"):
        digits.load_digits_dataset(data_config(directory=tmp_path))
    os.unlink(tmp_path / "t10k-images-idx3-ubyte")
    with pytest.raises(digits.DataError, match="t10k-images-idx3-ubyte"):
        digits.load_digits_dataset(data_config(directory=tmp_path))


def test_sklearn_digits_loader():
    train_x, train_y, test_x, test_y = digits.load_digits_dataset(data_config("sklearn_digits"))
    assert train_x.shape == (1500, 8, 8) and test_x.shape == (297, 8, 8)
    assert train_x.dtype == np.float32 and train_x.min() == 0.0 and train_x.max() == 1.0
    assert set(np.unique(train_y)) == set(range(10)) and train_y.dtype == np.int32
    with pytest.raises(digits.DataError, match="data.source must be one of"):
        digits.load_digits_dataset(data_config("emnist"))


def test_synthetic_source_takes_its_side_and_size_from_the_config():
    # data=synthetic gives MNIST-sized (28×28) images without files: what the 28×28 byte-identity
    # case of tools/check_identity.py and the speed benchmark train on
    config = load_config("sequential_mnist", "task=sum")
    config.data.source = "synthetic"
    assert (config.data.synthetic_side, config.data.synthetic_size) == (8, 200)
    config.data.synthetic_side, config.data.synthetic_size = 28, 30
    train_x, train_y, test_x, test_y = digits.load_digits_dataset(config)
    assert train_x.shape == test_x.shape == (30, 28, 28) and train_x.dtype == np.float32
    assert train_y.shape == test_y.shape == (30,) and set(np.unique(train_y)) <= set(range(10))
    assert 0.0 <= train_x.min() and train_x.max() <= 1.0


def test_cumulative_targets_by_hand():
    seq = jnp.array([[3, 1, 4, 1, 5]])
    np.testing.assert_array_equal(digits.cumulative_targets("sum", seq)[0, :, 0], [3, 4, 8, 9, 14])
    np.testing.assert_array_equal(
        digits.cumulative_targets("product", seq)[0, :, 0], [3, 3, 12, 12, 60]
    )
    counts = digits.cumulative_targets("count", seq)[0]
    assert counts.shape == (5, 10)
    np.testing.assert_array_equal(counts[-1], [0, 2, 0, 1, 1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(counts[1], [0, 1, 0, 1, 0, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("task", digits.TASKS)
def test_solved_accumulator_on_perfect_digits_scores_zero(task):
    labels = np.arange(30) % 10
    # The reference's accumulator has no parameters: an abstract model (no CNN init) suffices.
    model = nnx.eval_shape(
        lambda: SequentialDigitsModel((8, 8), task, "solved_accumulator", rngs=nnx.Rngs(0))
    )
    lengths = (1, 20) if task == "product" else (1, 1000)
    for seqs in digits.eval_sequences(labels, task, lengths, 8):
        d = jnp.asarray(labels[seqs])
        ys, regs = model.accumulate(digits.digit_values(task, d))
        m = digits.sequence_metrics(ys, digits.cumulative_targets(task, d))
        assert regs == {}
        assert float(m["mse_all"]) == 0.0 and float(m["mse_last"]) == 0.0, (task, seqs.shape)
        assert float(m["acc_all"]) == 1.0 and float(m["acc_last"]) == 1.0
    if task == "product":
        assert 0 not in labels[seqs]


def test_reference_threshold_is_mean_plus_t_sd():
    mse = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, np.nan], [np.inf, 40.0]])
    got = thresholds_from(mse)
    # column 0: {1, 2, 3}, t_{0.99, 2} = 6.964557; column 1: {10, 20, 40}, t the same
    assert got[0] == pytest.approx(2.0 + 6.964557 * 1.0 / np.sqrt(3), rel=1e-6)
    sd = np.std([10, 20, 40], ddof=1)
    assert got[1] == pytest.approx(70 / 3 + 6.964557 * sd / np.sqrt(3), rel=1e-6)


def tiny(config):
    config.num_steps, config.eval_every, config.checkpoint_every = 20, 10, 10
    config.train.batch_size, config.task.train_length = 4, 3
    config.task.test_lengths, config.task.eval_sequences = [1, 3, 5], 8
    return config


def test_bad_config_values_are_one_sentence(tmp_path):
    for change, message in (
        (lambda c: setattr(c.task, "name", "div"), "task.name must be one of"),
        (lambda c: setattr(c.task, "test_lengths", [1, 0]), "task.test_lengths must be"),
        (lambda c: setattr(c.model, "name", "transformer"), "model.name must be one of"),
        (lambda c: setattr(c.model, "recurrent_init", "eye"), "model.recurrent_init must be"),
        (lambda c: setattr(c.model, "baseline_hidden", -1), "model.baseline_hidden must be"),
        (lambda c: setattr(c.model, "baseline_hidden", 8), "applies to the recurrent baselines"),
    ):
        config = tiny(load_config("sequential_mnist", "smoke"))
        change(config)
        with pytest.raises(ConfigError, match=message):
            train_and_evaluate(config, str(tmp_path), progress=False)


def test_smoke_run_writes_parsable_outputs(tmp_path, figures_on):
    config = tiny(load_config("sequential_mnist", "task=sum,model=nau,smoke"))
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert [g["length"] for g in summary["per_length"]] == [1, 3, 5]
    ref = json.load(open(tmp_path / "reference.json"))
    assert ref["num_seeds"] == 2 and len(ref["thresholds"]) == 3
    for g, thr in zip(summary["per_length"], ref["thresholds"], strict=True):
        assert g["threshold"] == pytest.approx(thr) and 0 <= g["solved"] <= 2
    # the reference's own seeds: their mean and mean + t·sd/√n are reference.json's figures
    ref_rows = list(csv.DictReader(open(tmp_path / "reference" / "seeds.csv")))
    # trained by the run loop as a program of its own: its config, checkpoints and events
    assert json.load(open(tmp_path / "reference" / "config.json"))["num_seeds"] == 2
    assert (tmp_path / "reference" / "checkpoints").is_dir()
    assert os.listdir(tmp_path / "reference" / "tensorboard")
    assert [r["seed"] for r in ref_rows] == ["0", "1"]
    assert all(0.0 <= float(r["image_accuracy"]) <= 1.0 for r in ref_rows)
    per_seed = np.array([[float(r[f"mse_last_{n}"]) for n in (1, 3, 5)] for r in ref_rows])
    np.testing.assert_allclose(per_seed.mean(axis=0), ref["mse_last_mean"], rtol=1e-6)
    np.testing.assert_allclose(thresholds_from(per_seed), ref["thresholds"], rtol=1e-6)
    lines = [json.loads(x) for x in open(tmp_path / "metrics.jsonl")]
    assert [x["step"] for x in lines] == [0, 10, 20]
    assert set(lines[-1]["lengths"]) == {"1", "3", "5"}
    rows = list(csv.DictReader(open(tmp_path / "seeds.csv")))
    assert [r["seed"] for r in rows] == ["0", "1"]
    assert {"mse_last_5", "acc_all_1", "solved_3", "diverged"} <= set(rows[0])
    summary_json = json.load(open(tmp_path / "summary.json"))
    assert summary_json["task"] == "sum"
    # the NAU cell's sparsity error max |min(|w|, |1 − |w||)| lies in [0, 0.5]
    sparsity = [float(r["sparsity_error"]) for r in rows]
    assert all(0.0 <= v <= 0.5 for v in sparsity)
    assert summary_json["sparsity_error"]["0.5"] == pytest.approx(float(np.median(sparsity)))
    assert "| length |" in open(tmp_path / "summary.md").read()
    assert open(tmp_path / "curves.png", "rb").read(4) == b"\x89PNG"


def test_protocol_variants_size_the_run():
    hour, paper = (
        load_config("sequential_mnist", "task=sum"),
        load_config("sequential_mnist", "task=sum,protocol=paper"),
    )
    assert paper.num_steps == 100_000 and paper.eval_every == 1_000
    assert (paper.train.reg_start, paper.train.reg_end) == (1e4, 1e5)  # the paper's ramp
    assert hour.num_steps < paper.num_steps
    assert hour.train.reg_end == hour.num_steps and hour.train.reg_start == 0.1 * hour.num_steps
    assert hour.num_steps % hour.eval_every == 0 and hour.num_steps // hour.eval_every == 10
    for task in ("sum", "product", "count"):  # 28×28: 1/15 of the 8×8 budget, ten evaluations
        idx = load_config("sequential_mnist", f"task={task},data=mnist_idx")
        eight = load_config("sequential_mnist", f"task={task}")
        assert idx.num_steps == eight.num_steps // 15 // 10 * 10
        assert idx.num_steps % idx.eval_every == 0 and idx.num_steps // idx.eval_every == 10
    odd = load_config("sequential_mnist", "task=sum,steps=123")  # 3 · 41: every 3 steps
    assert (odd.num_steps, odd.eval_every) == (123, 3)
    with pytest.raises(ConfigError, match="protocol must be hour or paper"):
        load_config("sequential_mnist", "protocol=week")


def test_identity_recurrent_init_reaches_the_count_cell():
    # the counting model's NAU cell: 10 CNN outputs + 10 states → 10 states
    from nalu_jax.experiments.sequential_mnist import trainer_for

    config = tiny(load_config("sequential_mnist", "task=count,model=nau,smoke"))
    for init in ("random", "identity"):
        config.model.recurrent_init = init
        trainer = trainer_for(config)
        model = trainer.factory(nnx.Rngs(0))
        w = np.asarray(model.cell.unit.w[...])
        assert w.shape == (20, 10)
        assert np.array_equal(w[10:], np.eye(10)) == (init == "identity")


@pytest.mark.parametrize("cell", ["lstm", "rnn_tanh"])
def test_baseline_hidden_reads_the_state_out_through_a_linear_layer(cell):
    """``baseline_hidden`` H: the baseline runs with H units and y_t = h_t W + b, so outputs
    leave (−1, 1); at the default 0 the state is the output (stable-nalu's network)."""
    from nalu_jax.units.recurrent import unroll

    images = jnp.asarray(np.random.default_rng(0).uniform(0, 1, (3, 4, 8, 8)), jnp.float32)
    plain = SequentialDigitsModel((8, 8), "sum", cell, rngs=nnx.Rngs(1))
    assert plain.head is None
    ys, _ = plain(images)
    assert ys.shape == (3, 4, 1) and float(jnp.max(jnp.abs(ys))) < 1.0

    model = SequentialDigitsModel((8, 8), "sum", cell, rngs=nnx.Rngs(1), baseline_hidden=6)
    model.head.kernel[...] = 40.0 * model.head.kernel[...]
    ys, _ = model(images)
    values = model.digit_values(images.reshape(12, 8, 8)).reshape(3, 4, 1)
    states, _, _ = unroll(model.cell, values)
    assert states.shape == (3, 4, 6)
    expected = np.asarray(states) @ np.asarray(model.head.kernel[...]) + np.asarray(
        model.head.bias[...]
    )
    np.testing.assert_allclose(np.asarray(ys), expected, rtol=1e-5, atol=1e-5)
    assert float(jnp.max(jnp.abs(ys))) > 1.0
    with pytest.raises(ValueError, match="baseline_hidden"):
        SequentialDigitsModel((8, 8), "sum", "nau", rngs=nnx.Rngs(1), baseline_hidden=6)


def test_baseline_hidden_smoke_run_trains(tmp_path):
    config = tiny(load_config("sequential_mnist", "task=sum,model=lstm,smoke"))
    config.model.baseline_hidden = 8
    config.reference.thresholds = (2.0, 20.0, 50.0)
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert summary["diverged"] == 0
    rows = list(csv.DictReader(open(tmp_path / "seeds.csv")))
    assert len(rows) == 2 and all(np.isfinite(float(r["mse_last_3"])) for r in rows)
    assert [r["sparsity_error"] for r in rows] == ["", ""]  # an LSTM has no sparsity error
