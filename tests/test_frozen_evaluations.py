"""The two facts that let the loop repeat the frozen states' evaluation rather than compute it
(``nalu_jax.engine.loop``, module doc): whether an evaluation reads the step, and whether two
states are the same bits."""

import jax.numpy as jnp
import numpy as np
from conftest import load_config, tiny
from flax import struct

from nalu_jax.engine.loop import evaluation_reads_step, same_bits
from nalu_jax.engine.train import seed_keys
from nalu_jax.experiments import arithmetic


@struct.dataclass
class State:
    step: jnp.ndarray
    params: jnp.ndarray
    aux: jnp.ndarray


STATE = State(jnp.int32(7), jnp.arange(3.0), jnp.float32(0.0))


def test_an_evaluation_of_the_params_alone_does_not_read_the_step():
    def evaluate(state, scale):
        mse = jnp.mean((state.params * scale) ** 2)
        return state.replace(aux=mse), {"mse": mse}

    assert not evaluation_reads_step(evaluate, STATE, 2.0)


def test_a_step_in_the_metrics_or_the_returned_state_is_read():
    def in_metrics(state, scale):
        return state, {"mse": jnp.mean(state.params) * state.step}

    def in_aux(state, scale):
        return state.replace(aux=state.step.astype(jnp.float32)), {"mse": jnp.mean(state.params)}

    def multiplied_by_zero(state, scale):  # a use the tracer cannot rule out: counted as read
        return state, {"mse": jnp.mean(state.params) + 0 * state.step}

    for evaluate in (in_metrics, in_aux, multiplied_by_zero):
        assert evaluation_reads_step(evaluate, STATE, 2.0), evaluate.__name__


def test_the_arithmetic_evaluation_does_not_read_the_step():
    config = tiny(load_config("arithmetic", "model=gated_nau_nmu,op=div"))
    trainer = arithmetic.trainer_for(config)
    state = trainer.init(seed_keys(0, [3])[0], trainer.hparams)
    assert not evaluation_reads_step(trainer.evaluate, state, trainer.hparams, trainer.eval_data)


def test_same_bits_by_hand():
    a = {"w": np.array([1.0, np.nan], np.float32), "s": np.int32(3)}
    assert same_bits(a, {"w": np.array([1.0, np.nan], np.float32), "s": np.int32(3)})
    assert not same_bits(a, {"w": np.array([1.0, 2.0], np.float32), "s": np.int32(3)})
    assert not same_bits(a, {"w": np.array([1.0, np.nan], np.float64), "s": np.int32(3)})
    assert not same_bits(a, {"w": np.array([1.0, np.nan], np.float32), "s": np.int32(4)})
    assert not same_bits(a, {"w": np.array([1.0, np.nan], np.float32)})
    assert not same_bits(np.float32(0.0), np.float32(-0.0))  # equal as numbers, not as bits
    assert not same_bits(np.zeros(2), np.zeros((2, 1)))
