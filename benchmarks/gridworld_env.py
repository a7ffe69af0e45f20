"""Grid-world environment throughput: env steps/s for 1, 64 and 512 parallel agents.

    python -m benchmarks.gridworld_env [--agents 1 64 512] [--steps 2000] [--repeats 3]

Each measurement is one jitted ``lax.scan`` of ``--steps`` steps of ``vmap(env.step)`` (gymnax
auto-reset included) with uniformly random actions, timed after compilation; the best of
``--repeats`` runs is reported. Not a test.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp

from benchmarks import refuse_non_positive
from nalu_jax.envs import GridWorld


def env_steps_per_s(agents: int, steps: int, repeats: int, auto_reset: bool = True):
    """``(steps/s, compile s)`` for ``agents`` environments stepped ``steps`` times, with
    ``step`` (auto-reset, a fresh episode drawn every step and selected where done) or
    ``step_env`` (no reset: what the A2C trainer's fixed-length rollouts use)."""
    env, params = GridWorld(5), GridWorld(5).default_params

    @jax.jit
    def run(key):
        keys = jax.random.split(key, agents)
        _, states = jax.vmap(env.reset, (0, None))(keys, params)

        def body(carry, t):
            states, total = carry
            k = jax.random.fold_in(key, t)
            actions = jax.random.randint(k, (agents,), 0, env.num_actions)
            if auto_reset:
                step_keys = jax.random.split(jax.random.fold_in(k, 1), agents)
                step = jax.vmap(env.step, (0, 0, 0, None))
            else:
                step_keys, step = None, jax.vmap(env.step_env, (None, 0, 0, None))
            _, states, reward, _, _ = step(step_keys, states, actions, params)
            return (states, total + reward.sum()), None

        return jax.lax.scan(body, (states, jnp.zeros(())), jnp.arange(steps))[0][1]

    t0 = time.perf_counter()
    run(jax.random.key(0)).block_until_ready()
    compile_s = time.perf_counter() - t0
    best = float("inf")
    for r in range(repeats):
        t0 = time.perf_counter()
        run(jax.random.key(r + 1)).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return agents * steps / best, compile_s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--agents", type=int, nargs="+", default=[1, 64, 512])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    refuse_non_positive(args, ("agents", "steps", "repeats"))
    print(f"devices: {jax.devices()}")
    print("| agents | steps/s, step (auto-reset) | steps/s, step_env | compile s |")
    print("|---|---|---|---|")
    for n in args.agents:
        rate, compile_s = env_steps_per_s(n, args.steps, args.repeats, auto_reset=True)
        raw, _ = env_steps_per_s(n, args.steps, args.repeats, auto_reset=False)
        print(f"| {n} | {rate:,.0f} | {raw:,.0f} | {compile_s:.1f} |", flush=True)


if __name__ == "__main__":
    main()
