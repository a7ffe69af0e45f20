"""A2C learns (beats a random policy), and the experiment runs end to end through the shared
loop: files, resume, and seed k alone equal to seed k among others."""

import csv
import json

import jax
import numpy as np
import pytest
from conftest import load_config
from test_engine import _Interrupt as Interrupt
from test_engine import stop_after_saving

from nalu_jax.engine.train import seed_keys
from nalu_jax.envs import GridWorld
from nalu_jax.experiments import gridworld, train_and_evaluate
from nalu_jax.rl.a2c import random_policy_success
from nalu_jax.runtime import checkpoint as checkpoint_lib


@pytest.mark.slow
def test_a2c_beats_random_policy_on_training_range():
    config = load_config("gridworld", "agent=lstm")  # 32 hidden, lr 5e-3, 32 episodes/update
    config.num_steps = config.eval_every = 1500
    config.env.test_times, config.env.eval_episodes = tuple(range(5, 13)), 25
    trainer = gridworld.trainer_for(config, "lstm")
    data, hp = trainer.eval_data, trainer.hparams
    random = float(np.mean(random_policy_success(GridWorld(5), data, 12, jax.random.key(1))))
    state = jax.jit(trainer.init)(seed_keys(0, [0])[0])
    state, losses = jax.jit(trainer.train)(state, hp, trainer.train_data)
    _, metrics = jax.jit(trainer.evaluate)(state, hp, data)
    trained = float(metrics["train_success"])
    assert np.all(np.isfinite(np.asarray(losses))) and not bool(state.diverged)
    assert random < 0.05
    assert trained > random + 0.15, (trained, random)


def _rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_end_to_end_resume_and_seed_independence(tmp_path, monkeypatch, figures_on):
    config = load_config("gridworld", "smoke,agent=memory")
    config.num_steps, config.eval_every, config.checkpoint_every = 20, 10, 10
    work = str(tmp_path / "run")
    summary = train_and_evaluate(config, work, progress=False)
    (agent,) = summary["agents"]
    assert agent["agent"] == "memory" and agent["num_seeds"] == 2
    assert [r["t"] for r in agent["per_t"]] == list(range(1, 26))
    rows = _rows(f"{work}/seeds.csv")
    assert [r["seed"] for r in rows] == ["0", "1"] and len(rows[0]) == 6 + 25
    assert all(-1.0 <= float(r["memory_self_weight"]) <= 1.0 for r in rows)  # NAC₊: |W| < 1
    for name in ("summary.md", "summary.json", "metrics.jsonl", "success.png"):
        assert (tmp_path / "run" / name).stat().st_size > 0
    with open(f"{work}/summary.json") as f:
        assert json.load(f)["train_range"] == [5, 12]
    assert (tmp_path / "run" / "checkpoints" / "memory").is_dir()

    again = train_and_evaluate(config, work, progress=False)  # resumes at the end
    assert again["agents"][0]["resumed_from_step"] == 20
    assert _rows(f"{work}/seeds.csv") == rows

    # stopped right after its checkpoint at step 10, then resumed from it: the same rows
    real_save = stop_after_saving(monkeypatch, 10)
    with pytest.raises(Interrupt):
        train_and_evaluate(config, str(tmp_path / "stopped"), progress=False)
    monkeypatch.setattr(checkpoint_lib.Checkpointer, "save", real_save)
    resumed = train_and_evaluate(config, str(tmp_path / "stopped"), progress=False)
    assert resumed["agents"][0]["resumed_from_step"] == 10
    assert _rows(f"{tmp_path}/stopped/seeds.csv") == rows

    config.first_seed, config.num_seeds = 1, 1  # seed 1 alone
    train_and_evaluate(config, str(tmp_path / "alone"), progress=False)
    assert _rows(f"{tmp_path}/alone/seeds.csv") == rows[1:]


def test_memory_unit_is_checked_only_when_the_memory_agent_runs():
    from nalu_jax.config import ConfigError

    config = load_config("gridworld", "smoke")
    config.model.unit = "nac_plus"
    config.model.agents = ["lstm", "memory"]
    with pytest.raises(
        ConfigError, match=r"^model\.unit must be one of \[.*'nau'.*\], got 'nac_plus'\.$"
    ):
        gridworld.validate(config)
    config.model.agents = ["lstm"]  # the unit is unused: no error
    gridworld.validate(config)
