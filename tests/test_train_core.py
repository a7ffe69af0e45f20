"""The training core's schedules, update and per-seed mechanics, against hand computation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_same_bits_on_cpu, load_config, tiny

from nalu_jax.engine.loop import blocked, init_in_blocks
from nalu_jax.engine.train import HParams, npu_beta, reg_schedule, seed_keys
from nalu_jax.experiments.arithmetic import trainer_for


def hp(**kw):
    base = dict(lr=1e-3, reg_scale=1.0, reg_start=1e4, reg_end=2e4, lambda_z=0.0,
                beta_start=1e-7, beta_end=1e-5)  # fmt: skip
    base.update(kw)
    return HParams(**{k: jnp.float32(v) for k, v in base.items()})


@pytest.mark.parametrize(
    "step, expected", [(0, 0.0), (10_000, 0.0), (15_000, 0.5), (20_000, 1.0), (90_000, 1.0)]
)
def test_linear_regulariser_ramp(step, expected):
    value = jax.jit(lambda t: reg_schedule(t, hp(), "linear"))(jnp.int32(step))
    assert float(value) == pytest.approx(expected, abs=1e-6)


def test_exponential_regulariser_ramp():
    value = jax.jit(lambda t: reg_schedule(t, hp(), "exp"))(jnp.int32(50_000))
    assert float(value) == pytest.approx(1 - np.exp(-0.5), rel=1e-6)


@pytest.mark.parametrize(
    "start, end, step, expected",
    [
        (1e-7, 1e-5, 0, 1e-7),
        (1e-7, 1e-5, 9_999, 1e-7),
        (1e-7, 1e-5, 10_000, 1e-6),
        (1e-7, 1e-5, 20_000, 1e-5),
        (1e-7, 1e-5, 70_000, 1e-5),  # never beyond β_end once reached
        (1e-9, 1e-7, 25_000, 1e-7),
        (1e-7, 5e-6, 40_000, 1e-5),  # multiplied while below β_end: 1e-6 < 5e-6 → 1e-5
    ],
)
def test_npu_beta_schedule(start, end, step, expected):
    value = jax.jit(lambda t: npu_beta(t, hp(beta_start=start, beta_end=end)))(jnp.int32(step))
    assert float(value) == pytest.approx(expected, rel=1e-5)


def train_periods(config, periods: int, seeds: int = 2):
    """``seeds`` seeds of ``config`` initialised and trained ``periods`` evaluation periods,
    in one block; their states."""
    trainer = trainer_for(config)
    states = jax.vmap(trainer.init)(seed_keys(0, np.arange(seeds)))
    train = jax.jit(blocked(trainer.train, seeds, (0, None, None)))
    for _ in range(periods):
        states, _ = train(states, trainer.hparams, trainer.train_data)
    return states


def assert_same_states(a, b):
    """Every leaf of two state trees bit for bit equal on XLA:CPU (close elsewhere: the two
    programs compared are fused and ordered by each platform its own way)."""
    assert_same_bits_on_cpu(a, b, rtol=1e-4, atol=1e-6)


def one_step(config, w0):
    """One update of a single NAU from ``w0``; the new weights (2 seeds, both from ``w0``)."""
    trainer = trainer_for(config)
    states = jax.vmap(trainer.init)(seed_keys(0, np.arange(2)))
    w = jnp.broadcast_to(jnp.asarray(w0, jnp.float32), (2, 2, 1))
    states.params["layers"][0]["w"][...] = w
    train = jax.jit(jax.vmap(trainer.train, in_axes=(0, None, None)))
    states, _ = train(states, trainer.hparams, trainer.train_data)
    return np.asarray(states.params["layers"][0]["w"][...])


def nau_add_config(lr):
    config = tiny(load_config("single_module", "op=add,model=nau"))
    config.eval_every = 1
    config.num_steps = 1
    config.train.lr = lr
    return config


def test_first_adam_step_moves_each_weight_by_lr_towards_the_sum():
    # y = 0.5·(x1 + x2) undershoots t = x1 + x2 for x > 0, so dL/dW < 0 for both weights;
    # Adam's first step is lr·m̂/(√v̂ + ε) = lr·g/(|g| + ε) ≈ lr·sign(g): W → 0.5 + lr.
    w = one_step(nau_add_config(1e-3), [[0.5], [0.5]])
    np.testing.assert_allclose(w, 0.501, atol=1e-6)


def test_projection_clamps_after_the_update():
    w = one_step(nau_add_config(1e-2), [[0.995], [0.995]])  # 0.995 + 0.01 → clamp to 1
    assert np.all(w == 1.0)


def test_inalu_reinitialises_stalled_seeds_per_seed():
    # Large-range multiplication with a tiny learning rate: the loss stays far above 1 and
    # flat, so after 5,000 stored losses the stall test fires and the seed is redrawn.
    config = tiny(load_config("single_module", "op=mul,model=inalu,range=9"), seeds=2)
    config.train.lr = 1e-7
    config.eval_every = 500
    before = np.asarray(train_periods(config, 0).params["layers"][0]["w_hat_a"][...])
    states = train_periods(config, 11)  # 5,500 steps: the first test after 5,000 losses is at 5,010
    assert np.all(np.asarray(states.aux.reinits) >= 1)
    assert np.all(np.asarray(states.aux.hist_count) < 5_000)  # the store was cleared
    after = np.asarray(states.params["layers"][0]["w_hat_a"][...])
    assert not np.allclose(after, before, atol=1e-3)  # redrawn, not merely nudged
    assert not np.allclose(after[0], after[1])  # each seed draws its own parameters


def test_inalu_stall_test_only_on_its_steps_equals_the_test_every_step(monkeypatch):
    # The engine hands iNALU's hook ``due`` (every 10th step, unbatched) so the stall test
    # runs only where it can fire; with ``after_update_every=None`` it runs on every step.
    # Same seeds through a re-initialisation: every state leaf bit for bit equal (on XLA:CPU).
    from nalu_jax.engine import train as train_lib

    config = tiny(load_config("single_module", "op=mul,model=inalu,range=9"), seeds=2)
    config.train.lr = 1e-7
    config.eval_every = 500
    make_train = train_lib.make_train

    def run(every_step):
        if every_step:
            monkeypatch.setattr(train_lib, "make_train", lambda r, *a, **k: make_train(
                r._replace(after_update_every=None), *a, **k))  # fmt: skip
        else:
            monkeypatch.setattr(train_lib, "make_train", make_train)
        return train_periods(config, 11)

    phased, every = run(False), run(True)
    assert np.all(np.asarray(phased.aux.reinits) >= 1)
    assert_same_states(phased, every)


@pytest.mark.parametrize(
    "name, arg, precision",
    [("single_module", "op=mul,model=snmu", 32), ("arithmetic", "model=snmu,op=mul", 32),
     ("arithmetic", "model=snmu,op=mul", 64)],
)  # fmt: skip
def test_snmu_noise_drawn_ahead_equals_noise_drawn_in_the_step(monkeypatch, name, arg, precision):
    # The arithmetic recipe draws the sNMU's noise per chunk (ArithmeticNetwork.layer_noise);
    # without it each step draws from its key: every state leaf bit for bit equal (on XLA:CPU).
    from nalu_jax.models.arithmetic import ArithmeticNetwork

    config = tiny(load_config(name, arg), seeds=2)
    config.precision = precision
    config.eval_every = 50
    layer_noise, made = ArithmeticNetwork.layer_noise, []

    def ahead_noise(*args, **kwargs):
        made.append(layer_noise(*args, **kwargs))
        return made[-1]

    def run(ahead):
        monkeypatch.setattr(ArithmeticNetwork, "layer_noise", staticmethod(
            ahead_noise if ahead else lambda *a, **k: None))  # fmt: skip
        return train_periods(config, 4)

    from nalu_jax.config import apply_precision

    before = jax.config.jax_enable_x64
    try:
        apply_precision(config)
        ahead, in_step = run(True), run(False)
    finally:
        jax.config.update("jax_enable_x64", before)  # never leak x64 into other tests
    assert made and made[0] is not None  # the ahead path ran
    if precision == 64:
        assert jax.tree.leaves(ahead.params)[0].dtype == np.float64
    assert_same_states(ahead, in_step)


def test_lr_decay_is_off_by_default_and_linear_to_the_final_factor():
    import ml_collections

    from nalu_jax.config import ConfigError, arithmetic_config
    from nalu_jax.engine.train import lr_decay

    config = arithmetic_config()
    assert lr_decay(config) is None  # the update is then exactly p − lr·d, as before
    config.num_steps = 1_000
    config.train.lr_decay_from, config.train.lr_decay_to = 600.0, 0.01
    factor = lr_decay(config)
    steps = jnp.array([0, 600, 800, 1_000, 5_000], jnp.int32)
    got = np.asarray(jax.vmap(factor)(steps))
    # hand-computed: 1 until 600, then 1 − (t − 600)/400 · 0.99
    np.testing.assert_allclose(got, [1.0, 1.0, 0.505, 0.01, 0.01], rtol=1e-6)
    for field, value in (("lr_decay_from", 1_000.0), ("lr_decay_from", -1.0), ("lr_decay_to", 0.0)):
        bad = ml_collections.ConfigDict(config.to_dict())
        bad.train[field] = value
        with pytest.raises(ConfigError, match=f"train.{field}"):
            lr_decay(bad)


def test_empty_history_and_checkpoint_tree_are_the_layout_checkpoints_store():
    from nalu_jax.engine.loop import checkpoint_tree, empty_history

    shapes = {"valid_mse": jax.ShapeDtypeStruct((3,), jnp.float32),
              "per_layer": jax.ShapeDtypeStruct((3, 2), jnp.float32)}  # fmt: skip
    h = empty_history(shapes, num_evals=4, n=3)
    assert set(h) == {"valid_mse", "per_layer", "train_loss", "step"}
    assert h["valid_mse"].shape == (4, 3) and h["per_layer"].shape == (4, 3, 2)
    assert h["train_loss"].shape == (4, 3) and np.all(np.isnan(h["train_loss"]))
    assert h["step"].dtype == np.int64 and np.all(h["step"] == -1)
    tree = checkpoint_tree({"w": np.ones(3)}, h)
    assert set(tree) == {"states", "history", "clock"}
    np.testing.assert_array_equal(tree["clock"], np.zeros(3))
    assert tree["clock"].dtype == np.float64


@pytest.mark.parametrize("block", [1, 3, 6])
def test_init_in_blocks_is_one_vmap_over_every_seed(block):
    # The run loop initialises seed_block seeds per call (a vmap over every seed at once hung
    # XLA:CPU for a sequential-MNIST LSTM with a 32-unit readout): on XLA:CPU the bits must
    # not move.
    trainer = trainer_for(tiny(load_config("arithmetic", "model=nalu,op=mul"), seeds=6))
    keys = seed_keys(0, np.arange(6))
    whole = jax.jit(jax.vmap(trainer.init))(keys)
    parts = init_in_blocks(trainer.init, keys, block)
    assert_same_bits_on_cpu(whole, parts)
    # and not every seed alike: each block draws its own seeds' parameters
    w = np.asarray(parts.params["layers"][0]["w_hat"][...])
    assert not np.allclose(w[0], w[-1])


@pytest.mark.parametrize(
    ("name", "arg", "every", "periods"),
    [("single_module", "op=mul,model=snmu", 50, 4),  # the noise drawn ahead, in parts
     ("arithmetic", "model=nalu,op=mul", 50, 4),  # the 100-input task's words
     ("single_module", "op=mul,model=inalu,range=9", 520, 11)],  # phases; a re-initialisation
    # at step 5,000, inside a period and off the parts' own starts
)  # fmt: skip
def test_step_material_in_parts_equals_the_period_drawn_whole(
    monkeypatch, name, arg, every, periods
):
    # Trainer.train draws its steps' random material MATERIAL_STEPS steps at a time (a scan
    # of scans, then the rest); drawn for the whole period at once: every state leaf and every
    # step's training MSE bit for bit equal on XLA:CPU, with a part size that leaves a
    # remainder.
    from nalu_jax.engine import train as train_lib

    config = tiny(load_config(name, arg), seeds=2)
    config.eval_every = every
    if "inalu" in arg:
        config.train.lr = 1e-7  # the stall test fires within 5,500 steps (test above)

    def run(part):
        monkeypatch.setattr(train_lib, "MATERIAL_STEPS", part)
        trainer = trainer_for(config)
        states = jax.vmap(trainer.init)(seed_keys(0, np.arange(2)))
        train = jax.jit(blocked(trainer.train, 2, (0, None, None)))
        losses = []
        for _ in range(periods):
            states, mse = train(states, trainer.hparams, trainer.train_data)
            losses.append(np.asarray(mse))
        return states, np.stack(losses)

    (whole, whole_mse), (parts, parts_mse) = run(every), run(7)
    assert parts_mse.shape == whole_mse.shape == (periods, 2, every)
    assert_same_bits_on_cpu(parts_mse, whole_mse, rtol=1e-4, atol=1e-6)
    assert_same_states(parts, whole)
    if "inalu" in arg:
        assert np.all(np.asarray(parts.aux.reinits) >= 1)


@pytest.mark.parametrize(
    ("name", "arg"),
    [("single_module", "op=mul,model=nmu"), ("single_module", "op=add,model=nac_add,range=4"),
     ("single_module", "op=mul,model=snmu")],
)  # fmt: skip
def test_small_batch_drawn_ahead_equals_the_batch_drawn_in_the_step(monkeypatch, name, arg):
    # A chunk's batches of at most DRAW_AHEAD_ELEMENTS are drawn before the scan (rng.units);
    # with the limit at 0 each step hashes its own: the same values, and for these units
    # (no exp/log) the same bits on XLA:CPU.
    from nalu_jax import rng as rng_lib
    from nalu_jax.experiments import arithmetic as exp

    config = tiny(load_config(name, arg), seeds=2)
    config.eval_every = 50
    units, drawn = rng_lib.units, []

    def spy(*args, **kwargs):
        drawn.append(units(*args, **kwargs))
        return drawn[-1]

    monkeypatch.setattr(rng_lib, "units", spy)
    ahead = train_periods(config, 4)
    assert drawn and drawn[0].units.shape[-2:] == (128, 2)
    monkeypatch.setattr(exp, "DRAW_AHEAD_ELEMENTS", 0)
    drawn.clear()
    in_step = train_periods(config, 4)
    assert not drawn  # the words path ran
    assert_same_states(ahead, in_step)


def test_which_tasks_draw_their_batches_ahead():
    from nalu_jax.experiments.arithmetic import draws_batch_ahead

    single, arith = load_config("single_module", "model=nmu"), load_config("arithmetic", "")
    assert draws_batch_ahead(single, (2,))  # 128 × 2 × 1,000
    assert not draws_batch_ahead(single, (100,))  # the redundant-input variant
    assert not draws_batch_ahead(arith, (100,))  # Table 1's task keeps the two words
    single.train.sampler = "threefry"
    assert not draws_batch_ahead(single, (2,))
