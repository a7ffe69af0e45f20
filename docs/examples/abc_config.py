"""The config of experiment "abc" (abc_task.py): ``--config=abc_config.py:seeds=20,steps=200000``.

Everything a static task reads, with a stack of units instead of a model name: NAU (100 → 3)
gives a, b, c; NMU (3 → 2) gives a·b and c; NAU (2 → 1) adds them. Any field can be set on
the command line too, e.g. ``--config.train.lr=3e-3``.
"""

from nalu_jax.config import parse_config_arg, static_task_config


def get_config(arg=None):
    v = parse_config_arg(arg, {"seeds": 20, "steps": 200_000})
    c = static_task_config(
        "abc",  # the experiment abc_task.py registers
        units=("nau", "nmu", "nau"),
        widths=(3, 2),
        reg_scale=10.0,  # λ̂ of R_sparse, ramped in over steps 50,000-100,000
        reg_start=50_000,
        reg_end=100_000,
    )
    c.task.num_subsets = 3
    c.train.lr = 1e-2  # Adam's step size (None: 1e-3)
    c.num_seeds = v["seeds"]
    c.num_steps = v["steps"]
    c.seed_block = 10  # seeds run in blocks of this many (results independent of num_seeds)
    return c
