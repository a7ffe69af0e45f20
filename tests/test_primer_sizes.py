"""The single-module benchmark at input sizes 10 and 100: the cells are the config file's runs."""

from conftest import load_config

from nalu_jax.reproduce import cell_config, specs
from nalu_jax.tasks.arithmetic import ArithmeticTask
from nalu_jax.tasks.single_module import single_module_task


def _theirs(arg, steps=None):
    c = load_config("single_module", arg)
    c.sweep.range_index = tuple(range(1, 10))
    if steps:  # the NAU cells' budget and ramp, as the reference script sets them
        c.num_steps = steps
        c.train.reg_start, c.train.reg_end = 50_000.0, 75_000.0
    return c


def test_sizes_cells_are_the_config_file_at_that_size():
    spec = specs.table("primer-single-module-sizes")
    assert [c.key for c in specs.cells(spec)] == [
        "add-inalu_in10", "add-nau_in10", "add-nau_in100", "sub-nau_in10", "sub-nau_in100",
    ]  # fmt: skip
    for key, arg, steps in (
        ("inalu_in10", "model=inalu,op=add,size=10", None),
        ("nau_in100", "model=nau,op=add,size=100", 100_000),
        ("nau_in10", "model=nau,op=sub,size=10", 100_000),
    ):
        cell = next(c for c in specs.cells(spec, [key]) if c.op in arg)
        ours = cell_config(spec, cell)
        theirs = _theirs(arg, steps)
        theirs.checkpoint_every = ours.checkpoint_every
        assert ours.to_dict() == theirs.to_dict(), key


def test_steps_flag_reduces_a_variants_own_budget():
    spec = specs.table("primer-single-module-sizes")
    cell = specs.cells(spec, ["nau_in100"], ["sub"])[0]
    assert cell_config(spec, cell, 5, 10_000).num_steps == 10_000
    assert cell_config(spec, cell).num_steps == 100_000


def test_size_ten_keeps_one_relevant_input_per_operand():
    task = single_module_task("sub", 7, input_size=10)
    assert isinstance(task, ArithmeticTask)
    # n = 10, s = 0.1: one input in a, one in b, none shared (the Primer's sltr-in10 runs)
    assert (task.input_size, task.subset_ratio, task.overlap_ratio) == (10, 0.1, 0.0)
