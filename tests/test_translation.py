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
from nalu_jax.sequence_models import NumberTranslationModel
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


def test_smoke_run_resumes_and_writes_outputs(tmp_path, monkeypatch):
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
    assert {"solved", "best_step", "test_mse", "test_acc", "diverged"} <= set(rows[0])
    assert json.load(open(tmp_path / "summary.json"))["model"] == "nau"
    assert "| test |" in open(tmp_path / "summary.md").read()
    assert open(tmp_path / "curves.png", "rb").read(4) == b"\x89PNG"
    again = train_and_evaluate(config, str(tmp_path), progress=False)  # finished: reports only
    assert again["resumed_from_step"] == 20 and again["splits"] == summary["splits"]
    config.model.name = "nosuchunit"
    with pytest.raises(ConfigError, match="model.name must be one of"):
        train_and_evaluate(config, str(tmp_path), progress=False)
