"""Identity-extrapolation failure (docs/protocols.md, "Identity-extrapolation failure"): MLP autoencoders of a scalar, per activation.

    python -m nalu_jax.main --config=configs/identity.py --workdir=runs/identity

Variants (comma-separated in the config string):
  seeds=N      seeds per activation (a vmap axis)
  steps=N      Adam steps per seed
  smoke        a tiny run (2 seeds, 300 steps, 3 activations) for tests and CI

Defaults follow Fig. 1 of the NALU paper: 3 hidden layers of 8 units, trained on U[−5, 5),
tested on a 401-point grid over [−20, 20]; Adam 1e-3, batch 128, 10,000 steps, 100 seeds.
"""

import math

import ml_collections

from nalu_jax.config import parse_config_arg, run_config

ACTIVATIONS = (
    "relu", "sigmoid", "tanh", "relu6", "leaky_relu", "elu", "selu", "prelu", "swish",
    "softsign", "linear", "nac_add", "nau",
)  # fmt: skip


def get_config(arg=None):
    v = parse_config_arg(arg, {"seeds": 100, "steps": 10_000})
    c = run_config("identity", num_seeds=v["seeds"], num_steps=v["steps"], seed_block=16)
    c.eval_every = math.gcd(v["steps"], 1_000)  # grid errors every E steps; judged at the last
    c.checkpoint_every = 5_000

    c.identity = ml_collections.ConfigDict()
    c.identity.activations = ACTIVATIONS  # unit names: activations, linear, nac_add, nau
    c.identity.hidden_layers = (8, 8, 8)
    c.identity.train_range = (-5.0, 5.0)
    c.identity.test_range = (-20.0, 20.0)
    c.identity.grid_size = 401

    c.train = ml_collections.ConfigDict()
    c.train.lr = 1e-3
    c.train.batch_size = 128
    c.train.beta1 = 0.9
    c.train.beta2 = 0.999
    c.train.adam_eps = 1e-8
    if v["smoke"]:
        c.num_seeds = 2
        c.num_steps = 300
        c.eval_every = 100
        c.checkpoint_every = 100
        c.identity.activations = ("relu", "tanh", "nau")
        c.identity.grid_size = 81
    return c
