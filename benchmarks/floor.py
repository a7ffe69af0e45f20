"""The floor under the slow units' single-module speed (a benchmark, not a test).

The single-module benchmark's speed target compares every unit with NAC₊, y = xW. NAC₊'s
step is little more than drawing its batch (``benchmarks/profile_step.py``: data 0.7 of
0.8 µs per seed-step). A slower unit's step holds NAC₊'s (a batch draw, a thin matmul and its
gradient, Adam, the guards) plus arithmetic its definition cannot do without. Each probe here
is NAC₊ plus one such piece of arithmetic and nothing else, added as ``y = xW + 0·f``: the
outputs, gradients and so every trained value are NAC₊'s, but XLA evaluates ``f`` and its
derivative on every step (it does not fold ``0·f`` for floats: f may be NaN). A probe's
seed-steps/s, measured as the benchmark measures a unit (``benchmarks/throughput.py --task
single_module``, 2 inputs, 25 seeds, evaluation included), bound from above those of every
unit whose step contains its arithmetic; NAC₊ / probe is then a lower bound on the unit's
ratio to NAC₊:

- ``cos``: a cosine of the [batch, out] phase and, for its derivative, its sine (XLA:CPU's
  scalar libm calls, ~2.5 ns per element). NPU, RealNPU (cos(k @ W)) and NMRU (its sign,
  cos(π·(x<0) @ W)) evaluate at least this.
- ``noise``: U[1, 5] noise of the input's shape on every step, drawn for the step chunk ahead
  as the sNMU's is (threefry, ``SNMU.draw_noise``): the sNMU draws exactly this.
- ``noise_hash``: the same noise from the batch's hash sampler (``nalu_jax.rng.uniform``):
  what the sNMU's draw would cost with the cheaper generator (another noise stream).
- ``noise_in_step``: the sNMU's noise drawn inside each step from the step's key (threefry,
  the same values) and computed once (``_base.computed_once``), not for the chunk ahead.
- ``log_exp``: exp(log(|x| + ε) @ W), NAC•'s path: NALU and iNALU evaluate it beside NAC₊'s.
- ``inalu_mul``: iNALU's multiplicative path, exp(min(log(max(|x|, ε)) @ W, ω)) times the sign
  product ∏ᵢ(|Wᵢ|·sign(xᵢ) + 1 − |Wᵢ|) (``inalu.multiplicative_path``): iNALU evaluates it
  beside NAC₊'s path, a gate and a second weight.

    python -m benchmarks.floor --seeds 25 --steps 20000 --repeat 2

Prints one JSON line per probe (throughput.py's record) and a table of NAC₊ / probe.
"""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp

from benchmarks import refuse_non_positive, throughput
from nalu_jax import rng
from nalu_jax.units import NAC, SNMU
from nalu_jax.units._base import TrainingNeeds, computed_once, cos
from nalu_jax.units.inalu import OMEGA, multiplicative_path
from nalu_jax.units.nac import log_space_matmul


class _Probe(NAC):
    """NAC₊ with ``0 · extra(x, z)`` added to its training output (z = xW)."""

    single_module_reg_scale = 0.0  # NAC₊'s: no regulariser

    def extra(self, x, z, key):
        raise NotImplementedError

    def __call__(self, x, *, training: bool = False, key=None):
        z = super().__call__(x)
        if not training:
            return z
        return z + 0.0 * self.extra(x, z, key)


class CosProbe(_Probe):
    """+ cos(z): its cosine, and its sine in the backward pass (``_base.cos``, as the NPUs)."""

    def extra(self, x, z, key):
        return cos(z)


class NoiseProbe(_Probe):
    """+ the sNMU's noise n ~ U[1, 5] of x's shape, drawn as the sNMU draws it."""

    training = TrainingNeeds(noise=True)
    noise = SNMU.noise
    draw_noise = staticmethod(SNMU.draw_noise)

    def extra(self, x, z, key):
        return jnp.sum(x * self.noise(x, key), axis=-1, keepdims=True)


class HashNoiseProbe(NoiseProbe):
    """+ the same noise from the hash sampler (another stream)."""

    @staticmethod
    def draw_noise(key, shape, dtype):
        return rng.uniform(key, shape, 1.0, 5.0).astype(dtype)


class InStepNoiseProbe(_Probe):
    """+ the sNMU's noise drawn inside the step (no ``draw_noise``: the core hands a key)."""

    training = TrainingNeeds(noise=True)

    def extra(self, x, z, key):
        n = computed_once(jax.random.uniform(key, x.shape, x.dtype, 1.0, 5.0))
        return jnp.sum(x * n, axis=-1, keepdims=True)


class LogExpProbe(_Probe):
    """+ exp(log(|x| + ε) @ W): NAC•'s path, on NAC₊'s own W."""

    def extra(self, x, z, key):
        return log_space_matmul(x, self.weight())


class INALUMulProbe(_Probe):
    """+ iNALU's multiplicative path m ⊙ s (``inalu.multiplicative_path``) on NAC₊'s own W:
    the log/exp path as NAC•'s (with iNALU's ε and ω clamps) and the sign product."""

    def extra(self, x, z, key):
        m, s = multiplicative_path(x, self.weight(), OMEGA)
        return m * s


PROBES = {
    "cos": ("benchmarks.floor:CosProbe", "npu, real_npu, nmru"),
    "noise": ("benchmarks.floor:NoiseProbe", "snmu"),
    "noise_hash": ("benchmarks.floor:HashNoiseProbe", "snmu with a hashed noise stream"),
    "noise_in_step": ("benchmarks.floor:InStepNoiseProbe", "snmu with its noise drawn in-step"),
    "log_exp": ("benchmarks.floor:LogExpProbe", "nalu, inalu"),
    "inalu_mul": ("benchmarks.floor:INALUMulProbe", "inalu"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=1, help="best of R runs per probe")
    parser.add_argument("--rounds", type=int, default=1, help="NAC₊ and the probes, R times")
    parser.add_argument("--probes", default=",".join(PROBES), help="comma list")
    parser.add_argument("--set", action="append", default=[], help="config override k=v")
    args = parser.parse_args()
    refuse_non_positive(args, ("seeds", "steps", "repeat", "rounds"))
    probes = [p for p in args.probes.split(",") if p]
    unknown = sorted(set(probes) - set(PROBES))
    if unknown:
        parser.error(f"--probes: unknown {unknown}; choose from {sorted(PROBES)}.")
    # the probes share NAC₊'s config but for the unit, a fixed class of this module (naming
    # one here would import and register it in UNITS before anything is asked to run)
    throughput.refuse_bad_configs(parser, "nac_add", args.set, "single_module", [args.steps])
    best: dict[str, dict] = {}
    for _ in range(args.rounds):  # NAC₊ beside each round's probes: the rounds' noise is large
        for name in ["nac_add", *probes]:
            model = name if name == "nac_add" else PROBES[name][0]
            record = throughput.best_of(
                model, args.seeds, args.steps, args.set, "single_module", args.repeat
            )
            record["probe"] = name
            print(json.dumps(record), flush=True)
            if name not in best or record["seed_steps_per_s"] > best[name]["seed_steps_per_s"]:
                best[name] = record
    base = best["nac_add"]["seed_steps_per_s"]
    print("| probe | seed-steps/s | NAC₊ / probe | bounds from below the ratio of |")
    print("|---|---|---|---|")
    print(f"| nac_add | {base:,.0f} | 1.00 | |")
    for name in probes:
        rate = best[name]["seed_steps_per_s"]
        print(f"| {name} | {rate:,.0f} | {base / rate:.2f} | {PROBES[name][1]} |")


if __name__ == "__main__":
    main()
