"""``config.precision``: 64 switches on ``jax_enable_x64`` and trains a float64 model."""

import jax
import numpy as np
import pytest
from conftest import load_config, tiny

from nalu_jax.config import ConfigError, apply_precision
from nalu_jax.engine.train import seed_keys
from nalu_jax.experiments.arithmetic import trainer_for
from nalu_jax.experiments.arithmetic import validate as validate_run


@pytest.fixture
def restore_x64():
    before = jax.config.jax_enable_x64
    yield
    jax.config.update("jax_enable_x64", before)  # never leak x64 into other tests


@pytest.mark.filterwarnings("error::FutureWarning")  # e.g. JAX's float64 → float32 scatter
@pytest.mark.parametrize("model", ["nmu", "inalu"])
def test_precision_64_trains_float64_params(restore_x64, model):
    config = tiny(load_config("single_module", f"op=mul,model={model}"), steps=20, eval_every=10)
    config.precision = 64
    validate_run(config)
    apply_precision(config)
    trainer = trainer_for(config)
    states = jax.vmap(trainer.init)(seed_keys(0, np.arange(2)))
    train = jax.jit(jax.vmap(trainer.train, in_axes=(0, None, None)))
    states, metrics = train(states, trainer.hparams, trainer.train_data)
    leaves = jax.tree.leaves(states.params)
    assert leaves and all(leaf.dtype == np.float64 for leaf in leaves)
    assert all(v.dtype == np.float64 for v in jax.tree.leaves(states.opt_state) if v.ndim > 1)
    assert np.all(np.isfinite(np.asarray(jax.tree.leaves(states.params)[0])))


def test_precision_32_is_the_default_and_float32(restore_x64):
    config = tiny(load_config("single_module", "op=mul,model=nmu"), steps=20, eval_every=10)
    assert config.precision == 32
    apply_precision(config)
    trainer = trainer_for(config)
    states = jax.vmap(trainer.init)(seed_keys(0, np.arange(2)))
    assert all(leaf.dtype == np.float32 for leaf in jax.tree.leaves(states.params))


@pytest.mark.parametrize("value", [16, 0, 128])
def test_bad_precision_is_one_sentence(value):
    config = load_config("single_module", "op=mul,model=nmu")
    config.precision = value  # (the ConfigDict field is an int: 32.5 or "64" fail earlier)
    with pytest.raises(ConfigError, match=r"^precision must be 32 or 64, got .*\.$"):
        validate_run(config)
