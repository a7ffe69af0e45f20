"""``config.seed_block = "auto"`` (``nalu_jax.engine.blocks``): each config's own block on the
CPU, so every committed CPU result keeps its config and bits; all of a device's runs in one
block on an accelerator (simulated here by naming the platform)."""

import json
import os
import subprocess
import sys

import jax
import pytest
from conftest import ROOT, load_config, subprocess_env, tiny

from nalu_jax.config import ConfigError, apply_overrides
from nalu_jax.engine.blocks import padding_note, resolve_seed_block, seed_block_for

#: the blocks the configs had at e7ba609, before "auto" (``git show e7ba609:configs/...``)
CPU_BLOCKS = [
    ("arithmetic", "model=nmu,op=mul", 10),
    ("single_module", "op=mul,model=nmu", 13),
    ("recurrent", "model=nau,op=add", 10),
    ("identity", "", 16),
    ("sequential_mnist", "task=sum,model=nau", 1),
    ("sequential_mnist", "task=sum,model=nau,smoke", 2),
    ("number_translation", "model=nau", 5),
    ("number_translation", "model=nau,smoke", 2),
    ("gridworld", "", 8),
    ("gridworld", "smoke", 2),
]


@pytest.mark.parametrize(("name", "arg", "block"), CPU_BLOCKS)
def test_auto_on_the_cpu_is_the_configs_block_as_before(name, arg, block):
    config = load_config(name, arg)
    assert config.seed_block == "auto" and config.cpu_seed_block == block
    resolved = resolve_seed_block(config, platform="cpu", devices=2, processes=1)
    assert resolved.seed_block == block and type(resolved.seed_block) is int
    assert "cpu_seed_block" not in resolved  # the recorded config is the one from before


def test_auto_on_an_accelerator_puts_a_devices_runs_in_one_block():
    # 100 seeds: one device holds them all; 8 devices 13 each (ceil), 2 processes × 4 devices
    # split 50 per process, 13 per device
    for devices, processes, block in ((1, 1, 100), (8, 1, 13), (4, 2, 13), (1, 4, 25)):
        config = load_config("arithmetic", "model=nmu,op=mul,seeds=100")
        got = resolve_seed_block(config, platform="gpu", devices=devices, processes=processes)
        assert got.seed_block == block, (devices, processes)
    # a program's runs are seeds × sweep settings: 25 seeds × 9 ranges on 2 TPU cores
    config = load_config("single_module", "op=mul,model=nmu")
    config.sweep.range_index = tuple(range(1, 10))
    assert resolve_seed_block(config, platform="tpu", devices=2, processes=1).seed_block == 113
    # a zipped sweep is one axis of the grid: the interpolation-range figure's 7 range pairs
    # × 25 seeds in one block of 175 (not 7 blocks of 25), as many runs as expand() makes
    from nalu_jax.engine.blocks import num_settings
    from nalu_jax.engine.sweep import expand
    from nalu_jax.reproduce.figures_iclr import RANGE_PAIRS

    config = load_config("arithmetic", "model=nmu,op=mul,seeds=25")
    config.sweep.range_pair = tuple(RANGE_PAIRS)
    config.sweep.lr = (1e-3, 3e-3)
    assert num_settings(config) == len(expand(config)) == 14
    config.sweep.lr = None
    assert resolve_seed_block(config, platform="gpu", devices=1, processes=1).seed_block == 175


def test_an_integer_block_applies_on_every_platform():
    for platform in ("cpu", "gpu"):
        config = load_config("arithmetic", "model=nmu,op=mul")
        apply_overrides(config, ["seed_block=7"])
        assert resolve_seed_block(config, platform=platform, devices=1).seed_block == 7
    # a copied config types the field as "auto" was (str): an override arrives as digits
    copied = load_config("arithmetic", "model=nmu,op=mul").copy_and_resolve_references()
    apply_overrides(copied, ["seed_block=7"])
    assert resolve_seed_block(copied, platform="gpu", devices=1).seed_block == 7


def test_seed_block_for_by_hand():
    assert seed_block_for("auto", 10, platform="cpu", runs=100, devices=2) == 10
    assert seed_block_for("auto", 10, platform="gpu", runs=100, devices=3) == 34
    assert seed_block_for("auto", 10, platform="gpu", runs=1, devices=4) == 1
    assert seed_block_for(4, 10, platform="gpu", runs=100, devices=1) == 4
    assert seed_block_for("12", None, platform="cpu", runs=100, devices=1) == 12


@pytest.mark.parametrize(
    ("value", "cpu", "words"),
    [("ten", 10, "seed_block must be 'auto' or an integer >= 1, got 'ten'."),
     (0, 10, "seed_block must be 'auto' or an integer >= 1, got 0."),
     (True, 10, "got True"),
     ("auto", None, "seed_block 'auto' needs cpu_seed_block"),
     ("auto", "auto", "cpu_seed_block must be an integer >= 1, got 'auto'.")],
)  # fmt: skip
def test_bad_blocks_are_one_sentence(value, cpu, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        seed_block_for(value, cpu, platform="cpu", runs=10, devices=1)


def test_validation_names_the_field():
    from nalu_jax.experiments import experiment_of

    config = load_config("arithmetic", "model=nmu,op=mul")
    apply_overrides(config, ["seed_block=fast"])
    with pytest.raises(ConfigError, match="seed_block must be 'auto' or an integer >= 1"):
        experiment_of(config).validate(config)
    config = load_config("arithmetic", "model=nmu,op=mul")
    apply_overrides(config, ["cpu_seed_block=0"])
    with pytest.raises(ConfigError, match="cpu_seed_block must be an integer >= 1, got 0."):
        experiment_of(config).validate(config)


@pytest.mark.cpu_only("'auto' resolves to this platform's block, and these cells ran on the CPU")
@pytest.mark.parametrize("table", ["iclr2020-arithmetic", "primer-single-module"])
def test_committed_cells_hold_the_configs_resolved_on_the_cpu(table):
    # every committed cell's config.json is what the table's cell config resolves to on the
    # CPU: "auto" changed no committed result's config (status "done": nothing to rerun)
    from nalu_jax.reproduce import cells, results, specs

    spec = specs.table(table)
    checked = 0
    for cell in specs.cells(spec):
        path = os.path.join(ROOT, "results", table, cell.key)
        if cell.variant.unavailable or not os.path.exists(os.path.join(path, "config.json")):
            continue
        have = results.read_json(os.path.join(path, "config.json"))
        cfg = cells.configs(spec, [cell], have["num_seeds"], have["num_steps"])[cell.key]
        assert results.status(path, cfg) == ("done", have["num_seeds"]), cell.key
        checked += 1
    assert checked >= 5


def test_a_run_records_the_resolved_block(tmp_path):
    from nalu_jax.experiments import train_and_evaluate

    config = tiny(load_config("arithmetic", "model=nmu,op=mul"), steps=500)
    config.tensorboard = False
    train_and_evaluate(config, str(tmp_path), progress=False)
    written = json.load(open(tmp_path / "config.json"))
    # the CPU's block for the arithmetic task; elsewhere all of a device's runs in one block
    platform, devices = jax.local_devices()[0].platform, jax.local_device_count()
    block = 10 if platform == "cpu" else -(-config.num_seeds // devices)
    assert written["seed_block"] == block and "cpu_seed_block" not in written


def test_main_refuses_a_bad_block_in_one_sentence(tmp_path):
    cmd = [sys.executable, "-m", "nalu_jax.main", "--config=configs/arithmetic.py:smoke",
           "--config.seed_block=fast", f"--workdir={tmp_path}"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(JAX_PLATFORMS="cpu"),
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "nalu_jax: error: seed_block must be 'auto' or an integer >= 1, got 'fast'."
    )


def test_an_extension_runs_its_own_seeds_in_one_block_on_an_accelerator():
    # a cell resolved for 50 seeds on a GPU (block 50) that holds 10 runs its 40 others in a
    # block of 40 (no padding); on the CPU the block stays, as it decides the seeds' last bits
    from nalu_jax.engine.blocks import fit_seed_block

    for platform, devices, want in (("gpu", 1, 40), ("gpu", 4, 10), ("cpu", 2, 50)):
        config = load_config("arithmetic", "model=nmu,op=mul,seeds=40")
        apply_overrides(config, ["seed_block=50"])
        assert fit_seed_block(config, platform=platform, devices=devices).seed_block == want
    # never raised: a block already below a device's share stays
    config = load_config("arithmetic", "model=nmu,op=mul,seeds=40")
    apply_overrides(config, ["seed_block=8"])
    assert fit_seed_block(config, platform="gpu", devices=1).seed_block == 8


def test_padding_note_names_a_population_mostly_padding_and_the_block_that_fits():
    # 5 seeds in blocks of 10 on 2 CPU devices train as 20; a block of 3 trains 6
    note = padding_note(5, 10, 2)
    assert note.startswith("warning: 5 runs train as 20 (blocks of 10 on each of 2 devices;")
    assert "--config.seed_block=3 trains 6 (" in note
    # one device, 4 seeds in a block of 10: 10 trained, a block of 4 trains 4
    assert "4 runs train as 10 (blocks of 10 on each of 1 device;" in padding_note(4, 10, 1)
    assert "--config.seed_block=4 trains 4 (" in padding_note(4, 10, 1)
    # padding under a third of what is trained: no note (25 seeds, blocks of 13 on 2: 26)
    assert padding_note(25, 13, 2) is None
    assert padding_note(20, 10, 2) is None
    assert padding_note(14, 10, 2) is None  # 20 trained, 6 of them padding (< 1/3)
    assert padding_note(13, 10, 2) is not None  # 20 trained, 7 of them padding (>= 1/3)


def test_a_run_of_few_seeds_in_large_blocks_says_so(tmp_path, capsys):
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of

    config = tiny(load_config("arithmetic", "model=nac_add,op=add"), seeds=2)
    devices = jax.local_device_count()
    with config.unlocked():
        del config["seed_block"]  # a str field ("auto"); an integer block
        config.seed_block = 4
    run(experiment_of(config), config, str(tmp_path / "w"), progress=False)
    out = capsys.readouterr()
    expected = padding_note(2, 4, devices)
    assert expected is not None and expected in out.out + out.err


def test_a_block_whose_every_run_diverged_is_not_computed():
    # fn adds 1 to each run's params: computed, a block shows it; skipped (every run of the
    # block diverged), its params stay, its step goes on by frozen_steps and its losses are NaN
    import jax.numpy as jnp
    import numpy as np

    from nalu_jax.engine.loop import blocked
    from nalu_jax.engine.train import TrainState

    def fn(state, shared):
        new = state.replace(step=state.step + 5, params=state.params + shared)
        return new, jnp.zeros(5, jnp.float32)

    diverged = np.array([True, True, True, False, False, False])  # blocks of 2: skip, mix, run
    state = TrainState(step=jnp.zeros(6, jnp.int32), params=jnp.arange(6.0),
                       opt_state=jnp.zeros(6), key=jnp.zeros((6, 2), jnp.uint32),
                       diverged=jnp.asarray(diverged), diverged_at=jnp.zeros(6, jnp.int32))  # fmt: skip
    new, losses = jax.jit(blocked(fn, 2, (0, None), frozen_steps=5))(state, 1.0)
    np.testing.assert_array_equal(new.params, [0.0, 1.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(new.step, [5] * 6)
    assert np.isnan(losses[:2]).all() and (losses[2:] == 0).all()
    plain, _ = jax.jit(blocked(fn, 2, (0, None)))(state, 1.0)  # no frozen_steps: all computed
    np.testing.assert_array_equal(plain.params, np.arange(6.0) + 1)
