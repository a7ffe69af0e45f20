"""Grid-world time tracking (Trask et al. 2018, §4.5): LSTM vs LSTM + NAC-memory agents, A2C.

    python -m nalu_jax.main --config=configs/gridworld.py --workdir=runs/gridworld

Variants (comma-separated in the config string):
  agent=A      both (default: the LSTM and the memory agent, one population each), lstm, memory
  unit=NAME    the memory agent's unit (nac_add, the paper's NAC; nau; any unit of the registry)
  seeds=N      seeds per agent (a vmap axis)
  steps=N      A2C updates per seed (each on train.batch_size fresh episodes)
  smoke        a short run (25 s on 2 idle CPU cores, under a minute with cold caches, most of it
               compiling the two agents' programs): 2 seeds, 40 updates of 8 episodes, 8
               evaluation episodes per T

Training draws T ~ U{env.train_t_min, …, env.train_t_max} (5…12, the paper's); evaluation is
greedy on ``env.eval_episodes`` fixed episodes per T in ``env.test_times`` (1…25). Any field can
be set on the command line, e.g. ``--config.train.lr=3e-3``.
"""

import ml_collections

from nalu_jax.config import parse_config_arg, run_config

AGENT_SETS = {"both": ("lstm", "memory"), "lstm": ("lstm",), "memory": ("memory",)}


def get_config(arg=None):
    v = parse_config_arg(arg, {"agent": "both", "unit": "nac_add", "seeds": 64, "steps": 5_000})
    c = run_config("gridworld", num_seeds=v["seeds"], num_steps=v["steps"], seed_block=8)
    c.eval_every = 500
    c.checkpoint_every = 1_000

    c.env = ml_collections.ConfigDict()
    c.env.size = 5
    c.env.train_t_min = 5
    c.env.train_t_max = 12
    c.env.grace = 0  # steps after T before an unfinished episode ends
    c.env.test_times = tuple(range(1, 26))
    c.env.eval_episodes = 100  # fixed greedy episodes per test T

    c.model = ml_collections.ConfigDict()
    c.model.agents = AGENT_SETS.get(v["agent"], (v["agent"],))
    c.model.hidden = 32  # LSTM size
    c.model.unit = v["unit"]  # the memory agent's unit
    c.model.memory_size = 1
    c.model.unit_options = ml_collections.ConfigDict()

    c.train = ml_collections.ConfigDict()
    c.train.batch_size = 32  # episodes per update
    c.train.lr = 5e-3
    c.train.entropy_coef = 0.01
    c.train.value_coef = 0.5
    c.train.gamma = 0.99
    c.train.gae_lambda = 0.95
    c.train.grad_clip = 1.0  # global norm; 0 or None: off

    # Traced hyperparameters to sweep in one program (a tuple of values each): lr.
    c.sweep = ml_collections.ConfigDict()
    c.sweep.lr = ml_collections.FieldReference(None, field_type=tuple)

    c.judge = ml_collections.ConfigDict()
    c.judge.master_rate = 0.9  # a seed "masters" T when its success rate at T is at least this

    if v["smoke"]:
        c.num_seeds = 2
        c.cpu_seed_block = 2
        c.num_steps = 40
        c.eval_every = 20
        c.checkpoint_every = 20
        c.env.eval_episodes = 8
        c.train.batch_size = 8
    return c
