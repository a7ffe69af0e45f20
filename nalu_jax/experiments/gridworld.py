"""Grid-world time tracking (Trask et al. 2018, §4.5): many A2C agents at once, judged per T.

``train_and_evaluate(config, workdir)`` trains one population per agent in
``config.model.agents`` ("lstm": the plain LSTM agent; "memory": the LSTM with a
``config.model.unit`` memory, NAC₊ by default) through the shared population loop
(``nalu_jax.loop.run_population``: seed blocks, every local device, checkpoints in
``<workdir>/<agent>/checkpoints``, resume, progress bar). Seed k's key is
``fold_in(key(config.seed), k)`` for every agent, so seed k of one agent is seed k alone or
among others.

Judgement: per seed and per test T, the greedy success rate on ``env.eval_episodes`` fixed
episodes (on the target at exactly T); a diverged seed counts 0. Per agent and T the population
summary gives the mean success rate with a Wilson interval over all evaluation episodes, and the
share of seeds that master T (success ≥ ``judge.master_rate``) with a Wilson interval over
seeds. Writes ``config.json``, ``seeds.csv``, ``metrics.jsonl``, ``summary.json``/``summary.md``
and ``success.png`` (``nalu_jax.gridworld_report``).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax import gridworld_report as report
from nalu_jax.config_utils import ConfigError, positive_int, validate_common
from nalu_jax.envs.gridworld import EnvParams, GridWorld
from nalu_jax.loop import PerRun, run_population
from nalu_jax.rl.a2c import A2CHParams, evaluation_episodes, make_a2c, random_policy_success
from nalu_jax.rl.agents import AGENTS, make_agent
from nalu_jax.train import seed_keys
from nalu_jax.units import UNITS
from nalu_jax.workdir import prepare_workdir

format_summary = report.format_summary
RANDOM_POLICY_KEY = 0x5EED_0DD


def validate(config) -> None:
    """Every field a user may get wrong, as one ``ConfigError`` sentence."""
    e, m, tr = config.env, config.model, config.train
    validate_common(
        config,
        positive=(
            ("env.train_t_min", e.train_t_min),
            ("env.eval_episodes", e.eval_episodes),
            ("model.hidden", m.hidden),
            ("model.memory_size", m.memory_size),
        ),
    )
    positive_int("env.size", e.size, 2)
    positive_int("env.grace", e.grace, 0)
    positive_int("env.train_t_max", e.train_t_max, e.train_t_min)
    times = list(e.test_times)
    if not times or any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in times):
        raise ConfigError(f"env.test_times must be positive integers, got {times!r}.")
    agents = list(m.agents)
    if not agents or any(a not in AGENTS for a in agents) or len(set(agents)) < len(agents):
        raise ConfigError(
            f"model.agents must be distinct names of {sorted(AGENTS)}, got {agents!r}."
        )
    if "memory" in agents and m.unit not in UNITS:
        raise ConfigError(f"model.unit must be one of {sorted(UNITS)}, got {m.unit!r}.")
    for name in ("entropy_coef", "value_coef"):
        if not tr[name] >= 0:
            raise ConfigError(f"train.{name} must be a number >= 0, got {tr[name]!r}.")
    for name in ("gamma", "gae_lambda"):
        if not 0 <= tr[name] <= 1:
            raise ConfigError(f"train.{name} must be in [0, 1], got {tr[name]!r}.")
    if tr.grad_clip is not None and not tr.grad_clip >= 0:
        raise ConfigError(f"train.grad_clip must be >= 0 or None, got {tr.grad_clip!r}.")
    if not 0 < config.judge.master_rate <= 1:
        raise ConfigError(f"judge.master_rate must be in (0, 1], got {config.judge.master_rate!r}.")


def hparams_from_config(config) -> A2CHParams:
    f = lambda v: jnp.asarray(v, jnp.float32)
    tr = config.train
    return A2CHParams(
        lr=f(tr.lr),
        entropy_coef=f(tr.entropy_coef),
        value_coef=f(tr.value_coef),
        gamma=f(tr.gamma),
        gae_lambda=f(tr.gae_lambda),
    )


def agent_label(config, agent: str) -> str:
    return "LSTM" if agent == "lstm" else f"LSTM + {config.model.unit} memory"


def make_trainer(config, agent: str):
    """The per-seed ``A2CTrainer`` of ``agent`` under ``config`` (shapes from the config)."""
    e, m = config.env, config.model
    env = GridWorld(int(e.size))
    options = {}
    if agent == "memory":
        options = dict(unit=m.unit, memory_size=int(m.memory_size), **dict(m.unit_options))

    def factory(rngs):
        return make_agent(agent, env.obs_size, env.num_actions, int(m.hidden), rngs=rngs, **options)

    train_params = EnvParams(t_min=int(e.train_t_min), t_max=int(e.train_t_max), grace=int(e.grace))
    try:
        return env, make_a2c(
            env, factory, hparams_from_config(config), train_params=train_params,
            batch_size=int(config.train.batch_size), horizon=int(e.train_t_max + e.grace),
            eval_horizon=int(max(e.test_times) + e.grace), eval_every=int(config.eval_every),
            grad_clip=config.train.grad_clip or None,
        )  # fmt: skip
    except (ValueError, TypeError) as err:
        raise ConfigError(f"model: {err}") from None


def run_agent(config, agent: str, workdir: str, progress: bool):
    """Train ``config.num_seeds`` seeds of ``agent``; the loop's ``PopulationResult``."""
    env, trainer = make_trainer(config, agent)
    e = config.env
    data = evaluation_episodes(env, list(e.test_times), int(e.eval_episodes), int(e.grace))
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    hp = per_run(trainer.hparams, len(seeds))

    def postfix(history, done):
        return {"train_success": f"{np.nanmean(history['train_success'][done - 1]):.2f}"}

    return run_population(
        init=trainer.init,
        keys=seed_keys(config.seed, seeds),
        train=trainer.train,
        evaluate=trainer.evaluate,
        train_args=(PerRun(hp),),
        eval_args=(PerRun(hp), data),
        config=config,
        checkpoint_dir=os.path.join(os.path.abspath(workdir), agent, "checkpoints"),
        progress=progress,
        desc=agent,
        postfix=postfix,
    )


def per_run(hparams, n: int):
    """``hparams`` with a leading run axis ``[n]`` (every run the same values)."""
    return jax.tree.map(lambda v: np.full((n,), v, np.float32), hparams)


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Train every agent's population, judge per seed and T, write the workdir; the summary."""
    validate(config)
    for agent in config.model.agents:  # model errors before the workdir exists
        make_trainer(config, agent)
    prepare_workdir(workdir, config, overwrite)
    results = {a: run_agent(config, a, workdir, progress) for a in config.model.agents}
    return report.write_all(config, workdir, results, agent_label, random_success(config))


def random_success(config):
    """``[n_T]`` success rate of the uniform random policy on the evaluation episodes."""
    e = config.env
    env = GridWorld(int(e.size))
    data = evaluation_episodes(env, list(e.test_times), int(e.eval_episodes), int(e.grace))
    horizon = int(max(e.test_times) + e.grace)
    return random_policy_success(env, data, horizon, jax.random.key(RANDOM_POLICY_KEY))
