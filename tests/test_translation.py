"""Number translation: spelling, vocabulary, padding, the fixed split and a smoke run."""

import csv
import json

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import load_config
from flax import nnx

from nalu_jax.config import ConfigError
from nalu_jax.experiments import number_translation, train_and_evaluate
from nalu_jax.models.sequence import NumberTranslationModel
from nalu_jax.tasks import translation as tr


@pytest.mark.parametrize(
    "n, text",
    [
        (1, "one"),
        (14, "fourteen"),
        (40, "forty"),
        (105, "one hundred and five"),
        (234, "two hundred and thirty four"),
        (999, "nine hundred and ninety nine"),
        (300, "three hundred"),
        (310, "three hundred and ten"),
    ],
)
def test_spelled_numbers(n, text):
    assert tr.spell(n) == text


def test_vocabulary_and_padding():
    assert len(tr.VOCAB) == 30 and len(set(tr.VOCAB)) == 30 and tr.VOCAB[0] == tr.PAD
    used = {w for n in range(1, 1000) for w in tr.words(n)}
    assert used == set(tr.VOCAB) - {tr.PAD}
    np.testing.assert_array_equal(tr.encode(40), [tr.TOKEN_IDS["forty"], 0, 0, 0, 0])
    ids = [tr.TOKEN_IDS[w] for w in ("two", "hundred", "and", "thirty", "four")]
    np.testing.assert_array_equal(tr.encode(234), ids)
    tokens, values = tr.dataset([7, 777])
    assert tokens.shape == (2, 5) and tokens.dtype == np.int32 and values.tolist() == [7.0, 777.0]
    for bad in (0, 1000, 2.5):
        with pytest.raises(ValueError, match="1–999"):
            tr.encode(bad)


def test_split_sizes_coverage_and_determinism():
    s = tr.split(0)
    assert {k: len(v) for k, v in s.items()} == {"train": 169, "valid": 200, "test": 630}
    everything = np.concatenate([s["train"], s["valid"], s["test"]])
    assert sorted(everything.tolist()) == list(range(1, 1000))
    assert set(range(1, 20)) <= set(s["train"].tolist())
    train_tokens = {i for n in s["train"] for i in tr.encode(int(n)).tolist()}
    assert train_tokens == set(range(30))
    again, other = tr.split(0), tr.split(1)
    assert all(np.array_equal(s[k], again[k]) for k in s)
    assert not np.array_equal(s["test"], other["test"])


def test_padding_never_changes_the_value():
    model = NumberTranslationModel(30, "nau", rngs=nnx.Rngs(0))
    tokens = jnp.asarray(tr.dataset([234, 5])[0])
    value, regs = model(tokens)
    short, _ = model(tokens[:, :1])  # "five" alone vs "five" + 4 pads
    assert value.shape == (2,) and "sparse" in regs
    np.testing.assert_allclose(value[1], short[1], rtol=1e-6)


def test_smoke_run_resumes_and_writes_outputs(tmp_path, monkeypatch, figures_on):
    config = load_config("number_translation", "model=nau,smoke")
    config.num_steps, config.eval_every, config.checkpoint_every = 20, 10, 10

    def interrupt(*args):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:  # stop right after the step-10 checkpoint
        m.setattr(number_translation, "metrics_jsonl", interrupt)
        with pytest.raises(KeyboardInterrupt):
            train_and_evaluate(config, str(tmp_path), progress=False)
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert summary["resumed_from_step"] == 10
    assert [g["split"] for g in summary["splits"]] == ["valid", "test"]
    assert 0 <= summary["splits"][1]["solved"] <= 2
    lines = [json.loads(x) for x in open(tmp_path / "metrics.jsonl")]
    assert [x["step"] for x in lines] == [0, 10, 20] and "test_acc" in lines[0]
    rows = list(csv.DictReader(open(tmp_path / "seeds.csv")))
    assert [r["seed"] for r in rows] == ["0", "1"]
    assert {"solved", "best_step", "test_mse", "test_mae", "test_acc", "diverged"} <= set(rows[0])
    for r in rows:  # √(MSE/n) ≤ MAE ≤ √MSE (Cauchy–Schwarz and Jensen) over the 630 test numbers
        mse, mae = float(r["test_mse"]), float(r["test_mae"])
        assert np.sqrt(mse / 630) * (1 - 1e-5) <= mae <= np.sqrt(mse) * (1 + 1e-5)
    assert json.load(open(tmp_path / "summary.json"))["model"] == "nau"
    assert "| test |" in open(tmp_path / "summary.md").read()
    assert open(tmp_path / "curves.png", "rb").read(4) == b"\x89PNG"
    again = train_and_evaluate(config, str(tmp_path), progress=False)  # finished: reports only
    assert again["resumed_from_step"] == 20 and again["splits"] == summary["splits"]
    config.model.name = "nosuchunit"
    with pytest.raises(ConfigError, match="model.name must be one of"):
        train_and_evaluate(config, str(tmp_path), progress=False)


def test_authors_setup_config():
    config = load_config("number_translation", "setup=authors")
    assert config.model.embedding_size == 256 and config.model.hidden_size == 10
    assert config.model.output == "last"
    spec = load_config("number_translation")  # the default stays the spec's small set-up
    assert (spec.model.embedding_size, spec.model.hidden_size) == (2, 2)
    assert spec.model.output == "recurrent"
    assert load_config("number_translation", "setup=spec").to_dict() == spec.to_dict()


def _lstm_by_hand(model, tokens):
    """The LSTM outputs ``[B, T, H]`` stepped in a Python loop over the raw nnx.LSTMCell."""
    x = model.embedding(tokens)
    h = jnp.zeros((tokens.shape[0], model.lstm.hidden_size))
    carry, outs = (h, h), []
    for t in range(tokens.shape[1]):
        carry, y = model.lstm.core(carry, x[:, t])
        outs.append(y)
    return np.stack([np.asarray(y) for y in outs], axis=1)


@pytest.mark.parametrize("name", ["nau", "nalu", "lstm"])
def test_last_output_is_the_head_on_the_last_real_token(name):
    numbers = [7, 21, 300, 105, 234, 40]  # 1, 2, 2, 4, 5, 1 words: pads at the end
    lengths = [len(tr.words(n)) for n in numbers]
    tokens = jnp.asarray(tr.dataset(numbers)[0])
    assert sorted(set(lengths)) == [1, 2, 4, 5]
    model = NumberTranslationModel(
        len(tr.VOCAB), name, rngs=nnx.Rngs(3), embedding_size=8, hidden_size=4, output="last"
    )
    assert not hasattr(model, "cell")
    features = _lstm_by_hand(model, tokens)
    last = features[np.arange(len(numbers)), np.asarray(lengths) - 1]  # [B, H]
    value, regs = model(tokens)
    assert value.shape == (len(numbers),)
    if name == "nau":  # y = h W, W clamped to [-1, 1]
        expected = last @ np.clip(np.asarray(model.head.w[...]), -1, 1)
        assert set(regs) == {"sparse", "z"}
        assert np.isfinite(model.sparsity_error())
    elif name == "lstm":  # the LSTM baseline: a plain linear layer y = h W + b
        expected = last @ np.asarray(model.head.w[...]) + np.asarray(model.head.b[...])
        assert regs == {} and np.isnan(model.sparsity_error())
    else:
        expected = np.asarray(model.head(jnp.asarray(last)))
        assert np.isfinite(model.sparsity_error())
    np.testing.assert_allclose(value, expected[:, 0], rtol=1e-5, atol=1e-6)
    # Pads after the last word change nothing: the one-word rows alone give the same value.
    short = np.asarray(model(tokens[:, :1])[0])
    np.testing.assert_allclose(short[[0, 5]], np.asarray(value)[[0, 5]], rtol=1e-6)
    model.project()  # the head's projection runs (NAU: W clamped to [-1, 1])


@pytest.mark.parametrize("name", ["nmu", "lstm"])
def test_readout_is_a_dense_layer_between_the_lstm_and_the_head(name):
    """``readout=True`` (the authors' set-up with a dense readout, docs/reproductions.md): the
    head sees ``h W_r + b_r`` of the last real token's LSTM output, unbounded."""
    numbers = [7, 21, 300, 105, 234, 40]
    lengths = [len(tr.words(n)) for n in numbers]
    tokens = jnp.asarray(tr.dataset(numbers)[0])
    model = NumberTranslationModel(
        len(tr.VOCAB),
        name,
        rngs=nnx.Rngs(5),
        embedding_size=8,
        hidden_size=4,
        output="last",
        readout=True,
    )
    model.readout.kernel[...] = 50.0 * model.readout.kernel[...]  # outputs far outside (−1, 1)
    last = _lstm_by_hand(model, tokens)[np.arange(len(numbers)), np.asarray(lengths) - 1]
    r = last @ np.asarray(model.readout.kernel[...]) + np.asarray(model.readout.bias[...])
    assert np.abs(r).max() > 1.0
    value, _ = model(tokens)
    if name == "lstm":  # linear head on the readout
        expected = r @ np.asarray(model.head.w[...]) + np.asarray(model.head.b[...])
    else:  # NMU head: ∏_i (W_i r_i + 1 − W_i), W clamped to [0, 1]
        w = np.clip(np.asarray(model.head.w[...]), 0, 1)[:, 0]
        expected = np.prod(w * r + 1 - w, axis=1)[:, None]
    np.testing.assert_allclose(value, expected[:, 0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("output", ["last", "recurrent"])
def test_table_projection_has_the_per_token_gradients(output):
    """features() projects the embedding table and gathers (4-gate LSTM steps): the value and
    every parameter's gradient equal flax's LSTM over each token's embedding."""
    from nalu_jax.units.recurrent import unroll

    tokens = jnp.asarray(tr.dataset([7, 21, 300, 105, 234, 999])[0])
    model = NumberTranslationModel(
        len(tr.VOCAB), "nalu", rngs=nnx.Rngs(5), embedding_size=6, hidden_size=3, output=output
    )
    per_token = lambda m: unroll(m.lstm, m.embedding(tokens))[0]
    np.testing.assert_allclose(model.features(tokens), per_token(model), rtol=1e-5, atol=1e-6)

    def grads(features):
        loss = lambda m: jnp.sum(jnp.sin(features(m)))
        return dict(nnx.to_flat_state(nnx.state(nnx.grad(loss)(model))))

    fast, slow = grads(lambda m: m.features(tokens)), grads(per_token)
    assert fast.keys() == slow.keys()
    for k in fast:
        np.testing.assert_allclose(fast[k][...], slow[k][...], rtol=1e-4, atol=1e-6, err_msg=k)
    emb = fast[("embedding", "embedding")][...]
    unused = np.setdiff1d(np.arange(len(tr.VOCAB)), np.asarray(tokens))
    assert np.all(emb[unused] == 0) and np.any(emb != 0)  # only the tokens used get a gradient


def test_authors_setup_smoke_run(tmp_path):
    config = load_config("number_translation", "setup=authors,smoke")
    config.num_steps, config.eval_every, config.checkpoint_every = 100, 50, 100
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert summary["output"] == "last" and summary["num_seeds"] == 2
    assert "nau layer on the last token" in open(tmp_path / "summary.md").read()
    rows = list(csv.DictReader(open(tmp_path / "seeds.csv")))
    assert [r["seed"] for r in rows] == ["0", "1"]
    for row in rows:
        for key in ("valid_mse", "valid_acc", "test_mse", "test_acc"):
            assert np.isfinite(float(row[key])), (key, row)
        assert row["diverged"] == "0"
    for group in summary["splits"]:
        assert np.isfinite(group["mse_mean"]) and np.isfinite(group["acc_mean"])


def test_bad_setup_or_output_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"setup must be one of \['spec', 'authors'\]"):
        load_config("number_translation", "setup=paper")
    config = load_config("number_translation", "setup=authors,smoke")
    config.model.output = "first"
    with pytest.raises(ConfigError, match=r"model.output must be one of \['recurrent', 'last'\]"):
        train_and_evaluate(config, str(tmp_path / "a"), progress=False)
    config.model.output, config.model.learn_initial_state = "last", True
    with pytest.raises(ConfigError, match="model.learn_initial_state applies only to"):
        train_and_evaluate(config, str(tmp_path / "b"), progress=False)
