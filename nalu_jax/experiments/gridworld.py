"""Grid-world time tracking (Trask et al. 2018, §4.5): many A2C agents at once, judged per T.

An experiment of the shared run loop (``nalu_jax.engine.run``): one program per agent in
``config.model.agents`` ("lstm": the plain LSTM agent; "memory": the LSTM with a
``config.model.unit`` memory, NAC₊ by default), each trained by the one training core
(``nalu_jax.engine.train.make_train``) with an on-policy A2C loss (``nalu_jax.rl.a2c``): every update
rolls out ``train.batch_size`` fresh episodes inside the loss and takes one Adam step
(gradients clipped by global norm). Seed blocks, every local device, checkpoints in
``<workdir>/checkpoints/<agent>``, resume, progress bar, TensorBoard events; ``lr`` is
sweepable. Seed k's key is ``fold_in(key(config.seed), k)`` for every agent, so seed k of one
agent is seed k alone or among others.

Judgement: per seed and per test T, the greedy success rate on ``env.eval_episodes`` fixed
episodes (on the target at exactly T); a diverged seed counts 0. Per agent and T the population
summary gives the mean success rate with a Wilson interval over all evaluation episodes, and the
share of seeds that master T (success ≥ ``judge.master_rate``) with a Wilson interval over
seeds. Writes ``config.json``, ``seeds.csv``, ``metrics.jsonl``, ``summary.json``/``summary.md``
and ``success.png`` (``nalu_jax.experiments.gridworld_report``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nalu_jax.config import ConfigError, choice, positive_int, validate_common
from nalu_jax.engine import train
from nalu_jax.engine.run import Outcome, Population, programs_over
from nalu_jax.envs.gridworld import EnvParams, GridWorld
from nalu_jax.experiments import gridworld_report as report
from nalu_jax.experiments.contract import Experiment
from nalu_jax.rl import a2c
from nalu_jax.rl.a2c import A2CHParams, evaluation_episodes, random_policy_success
from nalu_jax.rl.agents import AGENTS, make_agent
from nalu_jax.units import UNITS

SWEEPABLE = ("lr",)
format_summary = report.format_summary
RANDOM_POLICY_KEY = 0x5EED_0DD


def validate(config) -> None:
    """Every field a user may get wrong, as one ``ConfigError`` sentence."""
    if a2c.rl_packages() is None:
        raise ConfigError(f"the grid world needs the optional RL packages: {a2c.RL_EXTRA}.")
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
    if "memory" in agents:
        choice("model.unit", m.unit, sorted(UNITS))
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


def programs(config) -> list:
    """One compiled program per agent (the networks differ), run one after another; the
    label is the agent's name (``checkpoints/<agent>``)."""
    return programs_over(config, "model", "agent", config.model.agents)


def eval_data(config, env: GridWorld) -> dict:
    e = config.env
    return evaluation_episodes(env, list(e.test_times), int(e.eval_episodes), int(e.grace))


def trainer_for(config, agent: str) -> train.Trainer:
    """The per-seed ``Trainer`` of ``agent`` under ``config`` (shapes from the config): the
    one core's ``make_train`` with the A2C loss, greedy evaluation and A2C's optimiser."""
    e, m = config.env, config.model
    env = GridWorld(int(e.size))
    options = {}
    if agent == "memory":
        options = dict(unit=m.unit, memory_size=int(m.memory_size), **dict(m.unit_options))

    def factory(rngs):
        return make_agent(agent, env.obs_size, env.num_actions, int(m.hidden), rngs=rngs, **options)

    train_params = EnvParams(t_min=int(e.train_t_min), t_max=int(e.train_t_max), grace=int(e.grace))
    batch, horizon = int(config.train.batch_size), int(e.train_t_max + e.grace)
    eval_horizon = int(max(e.test_times) + e.grace)
    train_range = (int(e.train_t_min), int(e.train_t_max))

    def loss(model, hp, state, key, data):
        loss, _ = a2c.episodes_loss(env, model, hp, key, train_params, batch, horizon)
        return loss, loss  # the run's train_loss is the A2C loss

    def evaluate(model, state, hp, data):
        return state.aux, a2c.greedy_metrics(env, model, data, eval_horizon, train_range)

    recipe = train.Recipe(
        factory, loss, evaluate, eval_data=eval_data(config, env),
        optimizer=a2c.optimizer(config.train.grad_clip or None),
    )  # fmt: skip
    try:
        return train.make_train(recipe, config, hparams_from_config(config))
    except (ValueError, TypeError) as err:
        raise ConfigError(f"model: {err}") from None


def population(config, settings) -> Population:
    """The program of ``config.model.agent``; per sweep setting its ``A2CHParams``."""
    trainer = trainer_for(config, config.model.agent)
    return Population(
        trainer, [hparams_from_config(s.config) for s in settings], [{} for _ in settings]
    )


def write_results(workdir, config, outcome: Outcome) -> dict:
    """Judge every agent's population per seed and T; write the workdir's files."""
    results = {agent: outcome.results[agent] for agent in config.model.agents}
    return report.write_all(
        config, workdir, results, outcome.run_seed, agent_label, random_success(config)
    )


def random_success(config):
    """``[n_T]`` success rate of the uniform random policy on the evaluation episodes."""
    e = config.env
    env = GridWorld(int(e.size))
    horizon = int(max(e.test_times) + e.grace)
    key = jax.random.key(RANDOM_POLICY_KEY)
    return random_policy_success(env, eval_data(config, env), horizon, key)


EXPERIMENT = Experiment(
    name="gridworld",
    validate=validate,
    sweepable=SWEEPABLE,
    population=population,
    write_results=write_results,
    format_summary=format_summary,
    programs=programs,
)
