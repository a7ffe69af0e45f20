"""A table of one's own: experiment "abc" (abc_task.py) for two networks, run, committed and
tabulated by ``launch.reproduce`` as a published table is (docs/own_experiment.md).
``--plugin=abc_table`` registers the table (and, by importing abc_task, the experiment).
"""

import os

import abc_task  # noqa: F401 - registers experiment "abc"

from nalu_jax.config import load_config
from nalu_jax.reproduce import TableSpec, Variant, register_table

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "abc_config.py")


def stack(*units):
    """A row of the table: the network of these units, in order (``model.units``)."""
    name = "-".join(units)
    return Variant(name, " → ".join(units), name, overrides=(("model.units", units),))


def cell_config(cell):
    """Every cell starts from abc_config.py; the table sets its seeds and steps, the row its
    units."""
    return load_config(CONFIG)


register_table(
    TableSpec(
        name="abc-stacks",
        kind="experiment",
        ops=("abc",),  # one cell per row: the task
        variants=(stack("nau", "nmu", "nau"), stack("nac_add", "nac_mul", "nac_add")),
        num_seeds=20,
        num_steps=200_000,
        source="t = a·b + c over three subsets of 100 inputs (docs/own_experiment.md)",
        published=None,  # no published figures: the overlap columns say n/a
        config=cell_config,
    )
)
