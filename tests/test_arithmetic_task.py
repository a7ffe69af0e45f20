"""The arithmetic task and the single-module benchmark: layouts, targets, sampling, validation."""

import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nalu_jax.tasks import (
    MODELS_BY_OP,
    OPS,
    RANGE_PAIRS,
    ArithmeticTask,
    range_pair,
    sample_batch,
    sample_inputs,
    sample_offset,
    single_module_task,
    subset_masks,
    target,
    target_from_sums,
)


def test_default_layout():
    task = ArithmeticTask("add")
    assert (task.subset_size, task.overlap) == (25, 12)
    assert task.subset_starts == (0, 13)
    assert (task.span, task.max_offset) == (38, 62)
    masks = np.asarray(subset_masks(task, 0))
    assert masks.shape == (2, 100)
    np.testing.assert_array_equal(np.flatnonzero(masks[0]), np.arange(0, 25))
    np.testing.assert_array_equal(np.flatnonzero(masks[1]), np.arange(13, 38))
    shifted = np.asarray(subset_masks(task, 62))
    np.testing.assert_array_equal(np.flatnonzero(shifted[1]), np.arange(75, 100))


def test_three_subsets_and_float_rounding():
    task = ArithmeticTask("add", input_size=20, subset_ratio=0.4, overlap_ratio=0.25, num_subsets=3)
    assert (task.subset_size, task.overlap, task.subset_starts, task.span) == (8, 2, (0, 6, 12), 20)
    assert task.max_offset == 0
    assert ArithmeticTask("add", subset_ratio=0.29).subset_size == 29


def test_simple_layout():
    task = ArithmeticTask("mul", simple=True)
    assert (task.input_size, task.num_subsets, task.max_offset, task.span) == (4, 2, 0, 4)
    np.testing.assert_array_equal(subset_masks(task, 0), [[1, 1, 1, 1], [1, 1, 0, 0]])
    assert int(sample_offset(task, jax.random.key(3))) == 0
    x = jnp.array([[1.0, 2.0, 3.0, 4.0]])
    np.testing.assert_allclose(target(task, x, subset_masks(task, 0)), [10.0 * 3.0])


@pytest.mark.parametrize(
    "op, expected",
    [
        ("add", 10.0 + 5.0),
        ("sub", 10.0 - 5.0),
        ("mul", 10.0 * 5.0),
        ("div", 10.0 / 5.0),
        ("squared", 100.0),
        ("root", np.sqrt(10.0)),
    ],
)
def test_targets_by_hand(op, expected):
    # n = 6, subsets [0, 4) and [2, 6) (S = 4, O = 2): a = 1+2+3+4, b = 3+4-1-1
    task = ArithmeticTask(op, input_size=6, subset_ratio=4 / 6, overlap_ratio=0.5)
    assert task.subset_starts == (0, 2)
    x = jnp.array([[1.0, 2.0, 3.0, 4.0, -1.0, -1.0]])
    got = jax.jit(target, static_argnums=0)(task, x, subset_masks(task, 0))
    np.testing.assert_allclose(got, [expected], rtol=1e-6)


def test_target_from_sums_batch_shapes():
    sums = jnp.arange(1.0, 25.0).reshape(3, 4, 2)
    assert target_from_sums("mul", sums).shape == (3, 4)
    np.testing.assert_allclose(target_from_sums("add", sums), sums.sum(-1))
    with pytest.raises(ValueError, match="op"):
        target_from_sums("pow", sums)


def test_sample_batch_matches_target():
    task = ArithmeticTask("mul")
    x, t = jax.jit(sample_batch, static_argnums=(0, 2, 4))(
        task, jax.random.key(0), 64, jnp.int32(7), task.interpolation_range
    )
    assert x.shape == (64, 100) and t.shape == (64,)
    assert x.dtype == jnp.float32 and t.dtype == jnp.float32
    xn = np.asarray(x, np.float64)
    np.testing.assert_allclose(t, xn[:, 7:32].sum(1) * xn[:, 20:45].sum(1), rtol=1e-5)
    assert 1.0 <= xn.min() and xn.max() < 2.0


def test_two_interval_sampling():
    x = np.asarray(sample_inputs(jax.random.key(1), (100_000,), ((-6.0, -2.0), (2.0, 6.0))))
    assert x.dtype == np.float32
    assert np.all((x >= -6) & (x < 6)) and not np.any((x > -2) & (x < 2))
    assert abs(np.mean(x < 0) - 0.5) < 0.01
    for lo in (-6, -4, 2, 4):
        assert abs(np.mean((x >= lo) & (x < lo + 2)) - 0.25) < 0.01


def test_two_interval_sampling_traced_bounds():
    sample = jax.jit(lambda b: sample_inputs(jax.random.key(2), (1000,), b))
    x = np.asarray(sample(jnp.array([[10.0, 11.0], [20.0, 21.0]])))
    assert np.all(((x >= 10) & (x < 11)) | ((x >= 20) & (x < 21)))


def test_offset_distribution():
    task = ArithmeticTask("add")
    keys = jax.random.split(jax.random.key(0), 2000)
    offsets = np.asarray(jax.vmap(lambda k: sample_offset(task, k))(keys))
    assert offsets.dtype == np.int32
    assert offsets.min() >= 0 and offsets.max() <= 62
    assert len(np.unique(offsets)) > 50
    assert offsets.min() == 0 and offsets.max() == 62


def test_masks_with_traced_offset():
    task = ArithmeticTask("add", input_size=10, subset_ratio=0.3, overlap_ratio=0.0)
    masks_of = jax.jit(lambda o: subset_masks(task, o))
    expected = np.zeros((2, 10))
    expected[0, 2:5] = expected[1, 5:8] = 1
    np.testing.assert_array_equal(masks_of(jnp.int32(2)), expected)
    stacked = jax.jit(jax.vmap(lambda o: subset_masks(task, o)))(jnp.arange(5))
    assert stacked.shape == (5, 2, 10)
    for o in range(5):
        np.testing.assert_array_equal(stacked[o], subset_masks(task, o))


def test_task_is_hashable_and_normalises_ranges():
    a = ArithmeticTask("add", interpolation_range=[1, 2], extrapolation_range=[[-6, -2], [2, 6]])
    b = ArithmeticTask("add", extrapolation_range=((-6.0, -2.0), (2.0, 6.0)))
    assert a == b and hash(a) == hash(b)
    assert a.extrapolation_range == ((-6.0, -2.0), (2.0, 6.0))


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"op": "pow"}, "op"),
        ({"op": "add", "interpolation_range": (2, 1)}, "interpolation_range"),
        ({"op": "add", "extrapolation_range": (3, 3)}, "extrapolation_range"),
        ({"op": "add", "extrapolation_range": ((-6, -2), (2, 7))}, "extrapolation_range"),
        ({"op": "add", "extrapolation_range": (1, 2, 3)}, "extrapolation_range"),
        ({"op": "add", "extrapolation_range": "1-2"}, "extrapolation_range"),
        ({"op": "add", "interpolation_range": ((1, 2), 3)}, "interpolation_range"),
        ({"op": "root", "extrapolation_range": (-1, 2)}, "extrapolation_range"),
        ({"op": "root", "interpolation_range": ((-2, -1), (1, 2))}, "interpolation_range"),
        ({"op": "add", "input_size": 0}, "input_size"),
        ({"op": "add", "input_size": 2.5}, "input_size"),
        ({"op": "add", "subset_ratio": 0.0}, "subset_ratio"),
        ({"op": "add", "subset_ratio": 1.5}, "subset_ratio"),
        ({"op": "add", "overlap_ratio": -0.1}, "overlap_ratio"),
        ({"op": "add", "overlap_ratio": 1.1}, "overlap_ratio"),
        ({"op": "add", "input_size": 3}, "subset_ratio"),
        ({"op": "add", "subset_ratio": 0.8}, "num_subsets"),
        ({"op": "add", "num_subsets": 0}, "num_subsets"),
        ({"op": "sub", "num_subsets": 1}, "num_subsets"),
        ({"op": "div", "num_subsets": 1}, "num_subsets"),
        ({"op": "add", "simple": "yes"}, "simple"),
    ],
)
def test_validation_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ArithmeticTask(**kwargs)


def test_valid_edge_configurations():
    # √ may extrapolate from 0 (its edge, where the root is defined); ÷ over a union that
    # leaves out zero; one subset of every input; three subsets that coincide entirely.
    root = ArithmeticTask("root", extrapolation_range=(0.0, 6.0))
    assert root.extrapolation_range == (0.0, 6.0)
    div = ArithmeticTask("div", extrapolation_range=((-6, -2), (2, 6)))
    assert div.extrapolation_range == ((-6.0, -2.0), (2.0, 6.0))
    squared = ArithmeticTask("squared", num_subsets=1, subset_ratio=1.0)
    assert (squared.subset_size, squared.subset_starts, squared.max_offset) == (100, (0,), 0)
    add = ArithmeticTask("add", num_subsets=3, overlap_ratio=1.0)
    # 25 of 100 inputs per subset, all three at the same start; the window may move 100 − 25
    assert (add.subset_size, add.subset_starts, add.max_offset) == (25, (0, 0, 0), 75)


def test_single_module_tasks():
    assert len(RANGE_PAIRS) == 9
    assert range_pair(5) == ((-2.0, 2.0), ((-6.0, -2.0), (2.0, 6.0)))
    task = single_module_task("mul", 7)
    assert (task.input_size, task.subset_starts, task.max_offset) == (2, (0, 1), 0)
    assert task.interpolation_range == (1.0, 2.0) and task.extrapolation_range == (2.0, 6.0)
    x = jnp.array([[3.0, 4.0]])
    np.testing.assert_allclose(target(task, x, subset_masks(task, 0)), [12.0])
    wide = single_module_task("div", 1, input_size=100)
    assert (wide.subset_size, wide.overlap, wide.span, wide.max_offset) == (1, 0, 2, 98)
    assert single_module_task("add", 9, input_size=10).span == 2
    assert "snmu" in MODELS_BY_OP["mul"] and "nau" in MODELS_BY_OP["sub"]
    assert set(OPS) >= set(MODELS_BY_OP)


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: range_pair(0), "range_index"),
        (lambda: range_pair(10), "range_index"),
        (lambda: single_module_task("squared", 1), "op"),
        (lambda: single_module_task("add", 1, input_size=5), "input_size"),
    ],
)
def test_single_module_errors(call, field):
    with pytest.raises(ValueError, match=field):
        call()


def test_sample_batch_vmapped_over_seeds():
    task = ArithmeticTask("sub")
    seed_keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.key(0), s))(jnp.arange(4))

    def one_seed(key):
        offset = sample_offset(task, key)
        return offset, *sample_batch(task, key, 8, offset, task.extrapolation_range)

    offsets, x, t = jax.jit(jax.vmap(one_seed))(seed_keys)
    assert offsets.shape == (4,) and x.shape == (4, 8, 100) and t.shape == (4, 8)
    for s in range(4):
        o = int(offsets[s])
        xs = np.asarray(x[s], np.float64)
        expected = xs[:, o : o + 25].sum(1) - xs[:, o + 13 : o + 38].sum(1)
        np.testing.assert_allclose(t[s], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("op", "bounds"),
    [
        (op, bounds)
        for bounds in [(1.0, 2.0), (2.0, 6.0), (-2.0, 2.0), (0.1, 0.2), (10.0, 20.0)]
        for op in OPS
        if not (op == "root" and bounds[0] < 0)  # √ of a negative sum is no target
    ],
)
def test_exact_targets_are_float64_rounded_once(op, bounds):
    # stable-nalu's generator: the sums and the op in float64, the target rounded to float32
    # once; ours from the float32 inputs by error-free transformations, checked here against
    # numpy's float64 on the same inputs, every sample to the bit
    from nalu_jax.tasks import exact_target

    task = ArithmeticTask(op)
    masks = subset_masks(task, 2 + 9 * OPS.index(op))  # offsets 2…47, one per op
    seed = zlib.crc32(f"{op} {bounds}".encode())
    draws = np.random.default_rng(seed).uniform(*bounds, (2048, 100))
    x = jnp.asarray(draws, jnp.float32)
    sums = np.asarray(x, np.float64) @ np.asarray(masks, np.float64).T
    a, b = sums[:, 0], sums[:, 1]
    f64 = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "squared": a * a,
           "root": np.sqrt(np.abs(a))}[op]  # fmt: skip
    got = np.asarray(jax.jit(lambda x: exact_target(task, x, masks))(x))
    np.testing.assert_array_equal(got, f64.astype(np.float32))
    # the float32 target rounds each addition: it misses the float64 value on many samples
    plain = np.asarray(target(task, x, masks))
    assert np.mean(plain != f64.astype(np.float32)) > 0.1


def test_exact_targets_per_seed_offsets_and_the_simple_layout():
    # under vmap each seed's masks carry its own offset; the simple task's subsets [0,4), [0,2)
    from nalu_jax.tasks import exact_target

    rng = np.random.default_rng(3)
    for task, offsets in (
        (ArithmeticTask("mul"), (0, 31, 62)),
        (ArithmeticTask("mul", simple=True), (0,)),
    ):
        x = jnp.asarray(rng.uniform(1.0, 2.0, (len(offsets), 256, task.input_size)), jnp.float32)
        masks = jnp.stack([subset_masks(task, o) for o in offsets])
        got = np.asarray(jax.jit(jax.vmap(lambda x, m, t=task: exact_target(t, x, m)))(x, masks))
        sums = np.einsum("sbn,skn->sbk", np.asarray(x, np.float64), np.asarray(masks, np.float64))
        np.testing.assert_array_equal(got, (sums[..., 0] * sums[..., 1]).astype(np.float32))


def test_exact_targets_only_for_the_static_task_builtin_ops():
    from conftest import load_config

    from nalu_jax.config import ConfigError
    from nalu_jax.experiments import arithmetic, recurrent

    config = load_config("recurrent", "model=nau,op=add,smoke")
    config.task.exact_targets = True
    with pytest.raises(ConfigError, match="task.exact_targets applies to the static task"):
        recurrent.trainer_for(config)
    config = load_config("arithmetic", "model=nmu,op=mul,smoke")
    config.task.exact_targets, config.sweep.overlap_ratio = True, (0.25, 0.5)
    with pytest.raises(ConfigError, match="no sweep of subset_ratio or overlap_ratio"):
        arithmetic.trainer_for(config)


def test_a_run_with_exact_targets_trains_on_them(tmp_path):
    # the same seeds with targets rounded once: another run (its losses differ), same shapes
    from conftest import load_config, tiny

    from nalu_jax.experiments import train_and_evaluate

    losses = {}
    for exact in (False, True):
        config = tiny(load_config("arithmetic", "model=nmu,op=squared"), seeds=2, steps=1000)
        config.task.exact_targets, config.tensorboard = exact, False
        out = tmp_path / str(exact)
        train_and_evaluate(config, str(out), progress=False)
        rows = (out / "metrics.jsonl").read_text().splitlines()
        losses[exact] = [line for line in rows if '"train_loss"' in line]
    assert len(losses[True]) == len(losses[False]) > 1
    assert losses[True][1:] != losses[False][1:]
