"""The grid world's dynamics and reward on scripted episodes, and jit/vmap equivalence."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nalu_jax.envs import EnvParams, GridWorld
from nalu_jax.envs.gridworld import DOWN, LEFT, RIGHT, STAY, UP

ENV = GridWorld(5)
STEP = jax.jit(ENV.step_env)


def play(start, target, t, actions, grace=0):
    """Scripted episode → list of (agent, reward, done) after each action."""
    state = ENV.episode_from(start, target, t)
    params = EnvParams(t_min=t, t_max=t, grace=grace)
    out = []
    for a in actions:
        _, state, reward, done, info = STEP(None, state, a, params)
        out.append((tuple(np.asarray(state.agent).tolist()), float(reward), bool(done)))
        assert bool(info["success"]) == (float(reward) == 1.0)
    return out


def test_exact_time_reward_and_termination():
    steps = play((2, 2), (2, 4), 3, [STAY, RIGHT, RIGHT])
    assert steps == [((2, 2), 0.0, False), ((2, 3), 0.0, False), ((2, 4), 1.0, True)]


def test_early_arrival_ends_the_episode_without_reward():
    steps = play((2, 2), (2, 4), 5, [RIGHT, RIGHT])
    assert steps == [((2, 3), 0.0, False), ((2, 4), 0.0, True)]


def test_late_arrival_and_timeout_earn_nothing():
    late = play((2, 2), (2, 4), 2, [STAY, STAY, RIGHT, RIGHT], grace=2)
    assert late == [
        ((2, 2), 0.0, False),
        ((2, 2), 0.0, False),  # T = 2 passed, grace 2 keeps it running
        ((2, 3), 0.0, False),
        ((2, 4), 0.0, True),  # on target at step 4 > T
    ]
    timeout = play((2, 2), (2, 4), 2, [STAY, RIGHT])  # grace 0: ends at T, short of the target
    assert timeout == [((2, 2), 0.0, False), ((2, 3), 0.0, True)]


def test_walls_keep_the_agent_on_the_grid():
    assert play((0, 0), (4, 4), 9, [UP, LEFT]) == [((0, 0), 0.0, False), ((0, 0), 0.0, False)]
    assert play((4, 4), (0, 0), 9, [DOWN, RIGHT]) == [((4, 4), 0.0, False), ((4, 4), 0.0, False)]
    assert play((0, 4), (4, 0), 9, [RIGHT, UP, DOWN]) == [
        ((0, 4), 0.0, False),
        ((0, 4), 0.0, False),
        ((1, 4), 0.0, False),
    ]


def test_observation_encoding():
    obs = ENV.get_obs(ENV.episode_from((1, 3), (4, 0), 7))
    expected = np.zeros(21, np.float32)
    expected[[1, 5 + 3, 10 + 4, 15 + 0]] = 1.0
    expected[20] = 7.0
    np.testing.assert_array_equal(np.asarray(obs), expected)
    assert ENV.observation_space().contains(obs)
    assert obs.shape == ENV.observation_space().shape


@pytest.mark.parametrize("t_min,t_max", [(1, 1), (5, 12)])
def test_reset_draws_winnable_episodes_in_range(t_min, t_max):
    params = EnvParams(t_min=t_min, t_max=t_max, grace=0)
    keys = jax.random.split(jax.random.key(3), 2000)
    obs, s = jax.jit(jax.vmap(ENV.reset_env, (0, None)))(keys, params)
    t, dist = np.asarray(s.target_time), np.abs(np.asarray(s.agent - s.target)).sum(-1)
    assert t.min() == t_min and t.max() == t_max
    assert np.all((dist >= 1) & (dist <= t)) and np.all(np.asarray(s.time) == 0)
    assert np.all((np.asarray(s.agent) >= 0) & (np.asarray(s.agent) < 5))
    np.testing.assert_array_equal(np.asarray(obs[:, 20]), t)
    if t_min == 1:  # the start is a neighbour of the target: all four directions occur
        assert len({tuple(d) for d in np.asarray(s.agent - s.target).tolist()}) == 4


def test_step_auto_resets_when_done():
    state = ENV.episode_from((2, 2), (2, 3), 1)
    obs, new, reward, done, _ = ENV.step(jax.random.key(0), state, RIGHT, EnvParams(1, 1, 0))
    assert float(reward) == 1.0 and bool(done)
    assert int(new.time) == 0 and int(new.target_time) == 1  # a fresh episode
    np.testing.assert_array_equal(np.asarray(obs), np.asarray(ENV.get_obs(new)))


def test_jit_vmap_scan_equal_python_loop():
    params = EnvParams(t_min=1, t_max=9, grace=1)
    keys = jax.random.split(jax.random.key(7), 6)
    actions = np.asarray(jax.random.randint(jax.random.key(8), (12, 6), 0, 5))

    @jax.jit
    def batched(keys):
        _, states = jax.vmap(ENV.reset, (0, None))(keys, params)

        def body(states, inp):
            t, a = inp
            step_keys = jax.vmap(lambda k: jax.random.fold_in(k, t))(keys)
            obs, states, r, d, _ = jax.vmap(ENV.step, (0, 0, 0, None))(step_keys, states, a, params)
            return states, (obs, r, d)

        return jax.lax.scan(body, states, (jnp.arange(12), actions))[1]

    obs_b, r_b, d_b = batched(keys)
    for i in range(6):  # one episode at a time, eagerly
        _, state = ENV.reset(keys[i], params)
        for t in range(12):
            obs, state, r, d, _ = ENV.step(
                jax.random.fold_in(keys[i], t), state, actions[t, i], params
            )
            np.testing.assert_array_equal(np.asarray(obs), np.asarray(obs_b[t, i]))
            assert float(r) == float(r_b[t, i]) and bool(d) == bool(d_b[t, i])
    assert np.asarray(d_b).any()  # the script crossed episode boundaries


def test_spaces_and_invalid_size():
    assert ENV.action_space().n == 5 and ENV.num_actions == 5
    assert bool(ENV.action_space().contains(4)) and not bool(ENV.action_space().contains(5))
    with pytest.raises(ValueError, match="size"):
        GridWorld(1)
