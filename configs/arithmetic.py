"""The static arithmetic task (docs/protocols.md, "Static arithmetic"): a two-layer network, many seeds in one program.

    python -m nalu_jax.main --config=configs/arithmetic.py:model=nmu,op=mul --workdir=runs/nmu_mul

Variants (comma-separated in the config string):
  model=NAME   a model of ``nalu_jax.models.MODELS`` (nmu, nau, nac_mul, nalu, relu, …)
  op=OP        add, sub, mul, div, squared, root
  seeds=N      number of seeds (a vmap axis; never swept)
  steps=N      iteration budget (published runs: 5_000_000)
  simple       the 4-input ``simple`` variant of the task
  no_clamp     both layers' ``clamp_w=False`` (NAU/NMU without projection: the reference's
               ``--oob-mode regualized --regualizer-oob 0``, ICLR 2020 ablation "no W-clamp")
  smoke        a tiny run (4 seeds, 2,000 steps, small evaluation sets) for tests and CI

Any field can also be set on the command line, e.g. ``--config.task.input_size=10``.
"""

from nalu_jax.config import arithmetic_config, parse_config_arg, smoke


def get_config(arg=None):
    v = parse_config_arg(
        arg,
        {"model": "nmu", "op": "mul", "seeds": 100, "steps": 100_000},
        ("smoke", "simple", "no_clamp"),
    )
    c = arithmetic_config()
    c.model.name = v["model"]
    c.task.op = v["op"]
    c.task.simple = v["simple"]
    if v["simple"]:
        c.task.input_size = 4
    if v["no_clamp"]:
        c.model.layer1_options.clamp_w = False
        c.model.layer2_options.clamp_w = False
    c.num_seeds = v["seeds"]
    c.num_steps = v["steps"]
    if v["smoke"]:
        smoke(c)
    return c
