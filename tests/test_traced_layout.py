"""Subset and overlap ratios swept in one program (``config.sweep.subset_ratio`` /
``overlap_ratio``): the subsets are traced (``tasks.arithmetic.Layout`` in ``HParams.layout``),
and every setting of such a sweep trains as its own run would, bit for bit."""

import jax
import numpy as np
import pytest

from nalu_jax import tasks as task_lib
from nalu_jax.config import ConfigError, arithmetic_config, load_config, with_added_fields
from nalu_jax.engine import sweep
from nalu_jax.engine.run import run
from nalu_jax.experiments import EXPERIMENTS, arithmetic
from nalu_jax.tasks import eval_sets


def _task(subset, overlap):
    return task_lib.ArithmeticTask("mul", subset_ratio=subset, overlap_ratio=overlap)


def test_a_layout_holds_the_tasks_subsets():
    task = _task(0.05, 0.75)  # S = 5, O = 3: starts 0 and 2, span 7, offsets 0…93
    lay = task_lib.layout(task, 3)
    assert lay.starts.tolist() == [0, 2] and lay.sizes.tolist() == [5, 5]
    assert int(lay.max_offset) == 93 and int(lay.index) == 3


@pytest.mark.parametrize(("subset", "overlap"), [(0.05, 0.75), (0.25, 0.5), (0.5, 0.0)])
def test_traced_masks_and_offsets_are_the_static_ones(subset, overlap):
    task = _task(subset, overlap)
    program = _task(0.25, 0.5)  # the program's own (static) task differs
    lay = task_lib.layout(task)
    keys = jax.random.split(jax.random.key(7), 64)
    static = jax.vmap(lambda k: task_lib.sample_offset(task, k))(keys)
    traced = jax.jit(jax.vmap(lambda k, lay: task_lib.sample_offset(program, k, lay),
                              in_axes=(0, None)))(keys, lay)  # fmt: skip
    np.testing.assert_array_equal(static, traced)
    assert int(static.max()) <= task.max_offset
    for offset in (0, 1, task.max_offset):
        want = np.zeros((2, 100), np.float32)
        for k, (s, n) in enumerate(zip(task.subset_starts, task.subset_sizes, strict=True)):
            want[k, offset + s : offset + s + n] = 1.0
        np.testing.assert_array_equal(task_lib.subset_masks(task, offset), want)
        got = jax.jit(lambda o, lay: task_lib.subset_masks(program, o, lay))(offset, lay)
        np.testing.assert_array_equal(got, want)


def test_the_evaluation_sets_hold_each_layouts_sums():
    tasks = [_task(0.05, 0.75), _task(0.5, 0.1)]  # 94 and 56 offsets
    data = eval_sets.evaluation_inputs(tasks[0], 50, layouts=tasks)
    assert data["valid_usums"].shape == (2, 50, 94, 2)
    for i, task in enumerate(tasks):
        own = eval_sets.evaluation_inputs(task, 50)
        lay = task_lib.layout(task, i)
        for offset in (0, task.max_offset):
            x, sums = eval_sets.range_inputs(task, own, "test", (2.0, 6.0), offset)
            got_x, got = eval_sets.range_inputs(tasks[0], data, "test", (2.0, 6.0), offset, lay)
            np.testing.assert_array_equal(got_x, x)
            np.testing.assert_array_equal(got, sums)
            # the stored sums are the inputs' own: a hand computation from the masks
            u = np.asarray(own["test_u"], np.float64)
            masks = np.asarray(task_lib.subset_masks(task, offset), np.float64)
            np.testing.assert_allclose(got, 2.0 * masks.sum(1) + 4.0 * u @ masks.T, rtol=1e-6)


def _config(**task):
    c = load_config("arithmetic", "smoke")
    c.model.name, c.task.op = "nac_mul", "mul"
    c.num_seeds, c.num_steps, c.eval_every, c.checkpoint_every = 3, 400, 100, 400
    for k, v in task.items():
        c.task[k] = v
    return c


@pytest.mark.cpu_only(
    "a sweep's program and a one-setting program share last bits on XLA:CPU; an H100 fused "
    "them each its own way (one seed's printed digit apart)"
)
def test_each_setting_of_a_layout_sweep_is_its_own_run_bit_for_bit(tmp_path):
    c = _config(overlap_ratio=0.75)
    c.sweep.subset_ratio = (0.05, 0.5)  # other sizes, starts and largest offsets
    c.sweep.lr = (1e-3, 3e-3)  # a grid with another traced field: layouts shared by index
    run(EXPERIMENTS["arithmetic"], c, str(tmp_path / "sweep"), progress=False)
    settings = sweep.expand(c)
    assert [s.values for s in settings][1] == {"lr": 1e-3, "subset_ratio": 0.5}
    for h in (1, 2):
        own = _config(overlap_ratio=0.75, subset_ratio=settings[h].values["subset_ratio"])
        own.train.lr = settings[h].values["lr"]
        run(EXPERIMENTS["arithmetic"], own, str(tmp_path / f"own{h}"), progress=False)
        for name in ("seeds.csv", "metrics.jsonl"):
            swept = (tmp_path / "sweep" / "settings" / f"{h:03d}" / name).read_bytes()
            assert swept == (tmp_path / f"own{h}" / name).read_bytes(), (h, name)


def test_a_layout_sweep_keeps_the_number_of_subsets_and_the_input_size():
    c = arithmetic_config()
    c.sweep.overlap_ratio = (0.0, 1.0)
    tasks = [arithmetic.build_task(s.config) for s in sweep.expand(c)]
    assert tasks[0].subset_starts != tasks[1].subset_starts
    with pytest.raises(ConfigError, match="task.subset_starts"):
        sweep.check_static(sweep.expand(c), tasks)  # static subsets cannot differ
    sweep.check_static(sweep.expand(c), tasks, traced_layout=True)
    other = task_lib.ArithmeticTask("mul", input_size=50)
    with pytest.raises(ConfigError, match="task.input_size"):
        sweep.check_static(sweep.expand(c), [tasks[0], other], traced_layout=True)
    fewer = task_lib.ArithmeticTask("mul", num_subsets=3, subset_ratio=0.2)
    with pytest.raises(ConfigError, match="task.num_subsets"):
        sweep.check_static(sweep.expand(c), [tasks[0], fewer], traced_layout=True)


def test_the_recurrent_task_refuses_a_layout_sweep(tmp_path):
    c = load_config("recurrent", "smoke")
    c.sweep.overlap_ratio = (0.0, 0.5)
    with pytest.raises(ConfigError, match="sweep.overlap_ratio is not sweepable here"):
        run(EXPERIMENTS["recurrent"], c, str(tmp_path / "w"), progress=False)


def test_a_config_written_before_the_layout_slots_compares_equal():
    new = arithmetic_config().to_dict()
    old = {**new, "sweep": {k: v for k, v in new["sweep"].items() if k not in
                            ("subset_ratio", "overlap_ratio")}}  # fmt: skip
    assert with_added_fields(old) == with_added_fields(new)
