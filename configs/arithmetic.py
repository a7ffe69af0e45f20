"""The static arithmetic task (docs/protocols.md, "Static arithmetic"): a two-layer network, many seeds in one program.

    python -m nalu_jax.main --config=configs/arithmetic.py:model=nmu,op=mul --workdir=runs/nmu_mul

Variants (comma-separated in the config string):
  model=NAME   a model of ``nalu_jax.models.MODELS`` (nmu, nau, nac_mul, nalu, relu, …)
  op=OP        add, sub, mul, div, squared, root
  seeds=N      number of seeds (a vmap axis; never swept)
  steps=N      iteration budget (published runs: 5_000_000)
  simple       the 4-input ``simple`` variant of the task
  smoke        a tiny run (4 seeds, 2,000 steps, small evaluation sets) for tests and CI

Any field can also be set on the command line, e.g. ``--config.task.input_size=10``.
"""

from nalu_jax.config import base_config, parse_config_arg, smoke


def get_config(arg=None):
    v = parse_config_arg(
        arg, {"model": "nmu", "op": "mul", "seeds": 100, "steps": 100_000}, ("smoke", "simple")
    )
    c = base_config()
    c.model.name = v["model"]
    c.task.op = v["op"]
    c.task.simple = v["simple"]
    if v["simple"]:
        c.task.input_size = 4
    c.num_seeds = v["seeds"]
    c.num_steps = v["steps"]
    if v["smoke"]:
        smoke(c)
    return c
