"""Acceptance check for a new machine: run it first on a GPU or TPU (README, "On a GPU or TPU").

    python -m tools.accelerator_check            # about 6 minutes on one GPU
    python -m tools.accelerator_check --smoke    # seconds of training: CI, and a CPU

Prints the device and library versions, then one table:

* **precision audit**: every experiment's programs and every registered unit's forward and
  gradient, lowered for this device, hold no contraction below full float32 precision
  (``tools.precision_audit``; ``--smoke``: two experiments and the units);
* **unit parity**: every registered unit's float32 forward, input gradient and parameter
  gradients on the device against the committed float64 reference fixtures
  (``tests/parity/*.npz``), within ``PARITY_TOL`` of each array's largest magnitude (TF32
  products miss it by an order of magnitude);
* **simple ×**: the ``simple`` arithmetic variant, t = (x₁+x₂+x₃+x₄)(x₁+x₂), with its ten
  parameters (4 × 2 first layer, 2 × 1 second), NMU, NALU and NAC•, 100 seeds × 2·10⁵ steps,
  judged against ``PUBLISHED_SIMPLE`` (``--smoke``: 4 seeds × 2,000 steps, not judged);
* **throughput** of the arithmetic task (× NMU) at 100, 1,000 and 10,000 seeds in one block
  (``--smoke``: 2 and 4 seeds), seed-steps per second after compilation;
* **run loop**: whole runs through the engine's loop (evaluations, checkpoints), 25 seeds ×
  20,000 steps: the interpolation-range figure's × NMU program (7 ranges, 175 runs) evaluated
  every 1,000 steps and only at both ends, and the plain × NMU task at 175 runs every 1,000
  (``--smoke``: 1 seed × 2,000 steps), and the plain rows' program alone at their config and runs;
  what the loop, the evaluations and a sweep add to a step.

Exit status 1 when a check fails (throughput is measured, not judged).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: float32 tolerance of the unit parity, as a fraction of each array's largest magnitude; the
#: NMRU's terms x and 1/(x + ε) cancel near 0 (tests/test_units_parity.py), hence its own
PARITY_TOL, PARITY_TOL_NMRU = 1e-4, 1e-2

#: published success on the simple × task t = (x₁+x₂)(x₁+x₂+x₃+x₄), 100 seeds each: the rate
#: and its 95% interval as the authors print them (Madsen & Johansen's ICLR 2020 slides' table,
#: "tab:very-simple-function-results", AndreasMadsen/stable-nalu b3296ac,
#: paper/results/simple_mul.tex: NMU 94% +3/−6, NALU 26% +9/−8, NAC• 13% +8/−5). Those are the
#: Wilson intervals of 94, 26 and 13 of 100, which ``overlaps`` recomputes from the rate.
PUBLISHED_SIMPLE = {"nmu": 0.94, "nalu": 0.26, "nac_mul": 0.13}
PUBLISHED_SIMPLE_INTERVALS = {"nmu": (0.88, 0.97), "nalu": (0.18, 0.35), "nac_mul": (0.08, 0.21)}
SIMPLE_SEEDS, SIMPLE_STEPS = 100, 200_000

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "parity"


def _unpack(path):
    """A parity fixture's arrays by ``"combo/field"`` key, and its metadata."""
    with np.load(path) as npz:
        meta, flat = json.loads(str(npz["meta"])), npz["data"]
    return {
        k: flat[o : o + int(np.prod(s))].reshape(s) for k, (s, o) in meta["layout"].items()
    }, meta


def _get(module, dotted: str):
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


@functools.cache
def _forward():
    """The unit's forward as one jitted function of ``(graphdef, state, x, training, noise)``,
    ``graphdef`` and ``training`` static: the combinations of a fixture that share a unit's
    structure and shapes share one compiled program (a fresh closure per combination compiled
    each anew: ~0.25 s each, 390 combinations; the same numbers either way)."""
    import jax
    from flax import nnx

    def forward(graphdef, state, x, training, noise):
        m = nnx.merge(graphdef, state)
        return m.noised(x, noise) if noise is not None else m(x, training=training)

    return jax.jit(forward, static_argnums=(0, 3))


def parity(path) -> tuple[str, float, float]:
    """``(unit, worst error / largest magnitude, tolerance)`` of one fixture in float32: the
    forward output, input gradient and parameter gradients of every combination (a NaN of the
    reference is skipped: the NRU's 0^W, documented in the unit)."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from nalu_jax.units import make_unit

    data, meta = _unpack(path)
    worst = 0.0
    for combo in meta["combos"]:
        f = lambda k, c=combo: data[f"{c}/{k}"]  # noqa: E731
        x, dy = jnp.asarray(f("x"), jnp.float32), jnp.asarray(f("dy"), jnp.float32)
        unit = make_unit(
            meta["unit"], x.shape[-1], dy.shape[-1], rngs=nnx.Rngs(0), **meta["options"]
        )
        for name in meta["params"]:
            _get(unit, name)[...] = jnp.asarray(f(f"param:{name}"), jnp.float32)
        graphdef, state = nnx.split(unit)
        noise = jnp.asarray(f("noise"), jnp.float32) if meta["noise"] else None

        y, vjp = jax.vjp(lambda s, x: _forward()(graphdef, s, x, meta["training"], noise), state, x)
        grad_state, grad_x = vjp(dy)
        grads = nnx.merge(graphdef, grad_state)
        pairs = [(y, f("y")), (grad_x, f("grad:x"))]
        pairs += [(_get(grads, n)[...], f(f"grad:{n}")) for n in meta["params"]]
        for actual, expected in pairs:
            keep = np.isfinite(expected)
            if keep.any():
                err = np.abs(np.asarray(actual, np.float64) - expected)[keep]
                worst = max(worst, float(err.max() / (np.abs(expected[keep]).max() + 1e-30)))
    tol = PARITY_TOL_NMRU if meta["unit"].startswith("nmru") else PARITY_TOL
    return meta["unit"], worst, tol


def simple_table(smoke: bool, workdir: str) -> list[tuple[str, int, int]]:
    """``[(model, solved, seeds)]`` of the simple × task for NMU, NALU and NAC•, each
    population in one block, trained by the engine as ``nalu_jax.main`` trains it."""
    from nalu_jax.config import load_config
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of

    rows = []
    for model in PUBLISHED_SIMPLE:
        arg = f"model={model},op=mul,simple" + (",smoke" if smoke else "")
        config = load_config("arithmetic", arg)
        if not smoke:
            config.num_seeds, config.num_steps = SIMPLE_SEEDS, SIMPLE_STEPS
        config.seed_block, config.tensorboard = config.num_seeds, False
        out = os.path.join(workdir, f"simple-{model}")
        summary = run(experiment_of(config), config, out, progress=False)
        rows.append((model, int(summary["solved"]), int(summary["num_seeds"])))
    return rows


def throughput(seeds: int, steps: int, config=None) -> float:
    """Seed-steps/s of the arithmetic task's training program (× NMU; ``config``: the task's
    default) for ``seeds`` seeds in one block, ``steps`` steps per call, after a first call
    that compiles."""
    import jax

    from nalu_jax.config import load_config
    from nalu_jax.engine.loop import blocked
    from nalu_jax.engine.train import seed_keys
    from nalu_jax.experiments.arithmetic import trainer_for

    config = load_config("arithmetic", "model=nmu,op=mul") if config is None else config
    config.eval_every = steps
    trainer = trainer_for(config)
    states = jax.jit(jax.vmap(trainer.init))(seed_keys(0, np.arange(seeds)))
    train = jax.jit(blocked(trainer.train, seeds, (0, None, None)), donate_argnums=0)
    states, _ = train(states, trainer.hparams, trainer.train_data)
    jax.block_until_ready(states)
    t0 = time.perf_counter()
    states, losses = train(states, trainer.hparams, trainer.train_data)
    jax.block_until_ready(losses)
    return seeds * steps / (time.perf_counter() - t0)


def loop_config(sweep: bool, seeds: int, steps: int, eval_every: int):
    """The run-loop rows' config: the interpolation-range figure's × NMU cell (``sweep``: its
    seven ranges, ``7 × seeds`` runs) or the same task at U[1,2] → U[2,6] with as many runs."""
    from nalu_jax.reproduce import cells, specs

    spec = specs.table("iclr2020-range")
    (cell,) = [c for c in specs.cells(spec) if c.variant.key == "nmu"]
    config = cells.configs(spec, [cell], seeds, steps)[cell.key]
    if not sweep:  # one setting, as many runs (one block on an accelerator, as the sweep's)
        config.sweep.range_pair = None
        config.num_seeds = seeds * len(spec.axis.points)
    config.eval_every, config.tensorboard = eval_every, False
    return config


def loop_throughput(workdir: str, sweep: bool, seeds: int, steps: int, eval_every: int) -> float:
    """Seed-steps/s (compilation aside) of a whole run through the engine's loop, evaluations
    and checkpoints included: the interpolation-range figure's × NMU program (``sweep``: its
    seven ranges as one program of ``7 × seeds`` runs) or the plain × NMU task at as many runs.
    Beside ``throughput`` (the training program alone) it tells what the loop, the evaluations
    and a sweep each add to a step."""
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of
    from nalu_jax.reproduce.results import _timing

    config = loop_config(sweep, seeds, steps, eval_every)
    out = os.path.join(workdir, f"loop-{'sweep' if sweep else 'plain'}-{eval_every}")
    return float(
        _timing(run(experiment_of(config), config, out, progress=False))["seed_steps_per_s"]
    )


def overlaps(solved: int, n: int, rate: float, n_published: int = SIMPLE_SEEDS) -> bool:
    """Whether the Wilson 95% intervals of ``solved``/``n`` and of the published rate (at
    ``n_published`` seeds) overlap."""
    from nalu_jax.reporting.metrics import wilson_interval

    lo, hi = wilson_interval(solved, n)
    plo, phi = wilson_interval(round(rate * n_published), n_published)
    return lo <= phi and plo <= hi


def checks(smoke: bool, workdir: str):
    """Yield the table's rows ``(check, measured, expected, verdict)``; verdict "ok", "FAIL"
    or "—" (measured, not judged)."""
    from nalu_jax.reproduce.figures_iclr import RANGE_PAIRS
    from nalu_jax.units import UNITS
    from tools import precision_audit

    cases = ["arithmetic_nmu", "sequential_mnist_sum"] if smoke else list(precision_audit.CASES)
    found = precision_audit.audit(cases, "highest")
    total = sum(n for n, _ in found.values())
    weak = sum(len(lines) for _, lines in found.values())
    yield (
        "precision audit",
        f"{weak} of {total} contractions in {len(found)} programs below highest",
        "0",
        "ok" if weak == 0 and total > 0 else "FAIL",
    )
    covered = set()
    for path in sorted(FIXTURES.glob("*.npz")):
        unit, worst, tol = parity(path)
        covered.add(unit)
        yield (
            f"parity {path.stem}",
            f"{worst:.1e}",
            f"< {tol:.0e}",
            "ok" if worst < tol else "FAIL",
        )
    uncovered = sorted(n for n in UNITS if UNITS.spec(n).reference and n not in covered)
    if uncovered:
        yield ("parity fixtures", f"none for {uncovered}", "every unit", "FAIL")
    for model, solved, n in simple_table(smoke, workdir):
        rate = PUBLISHED_SIMPLE[model]
        verdict = "—" if smoke else ("ok" if overlaps(solved, n, rate) else "FAIL")
        expected = f"{rate:.0%} of {SIMPLE_SEEDS}"
        yield (f"simple × {model}", f"{solved}/{n}", expected, verdict)
    for seeds in (2, 4) if smoke else (100, 1_000, 10_000):
        rate = throughput(seeds, 100 if smoke else 1_000)
        yield (f"throughput {seeds:,} seeds", f"{rate:,.0f} seed-steps/s", "", "—")
    (seeds, steps), points = ((1, 2_000) if smoke else (25, 20_000)), len(RANGE_PAIRS)
    for sweep, every in ((False, steps // 20), (True, steps // 20), (True, steps)):
        rate = loop_throughput(workdir, sweep, seeds, steps, every)
        what = f"range sweep {seeds} × {points}" if sweep else f"plain × NMU {seeds * points}"
        yield (f"run loop, {what} runs, evaluated every {every:,}", f"{rate:,.0f} seed-steps/s",
               "", "—")  # fmt: skip
    # the plain rows' program alone: the loop's config, one block of its runs, no loop (what
    # the run loop itself adds to a step, beside the row above at the same runs)
    runs, every = seeds * points, steps // 20
    rate = throughput(runs, every, loop_config(False, seeds, steps, every))
    yield (f"program alone, plain × NMU {runs} runs (the loop's config)",
           f"{rate:,.0f} seed-steps/s", "", "—")  # fmt: skip


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI, a CPU)")
    opts = parser.parse_args(argv)
    import jax

    from nalu_jax.reproduce.results import machine, versions

    m = machine()
    print(f"device: {m['device_kind']} ({m['platform']}, {m['devices']} device(s)); "
          f"host CPU: {m['cpu']}, {m['cores']} cores")  # fmt: skip
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()))
    print(f"jax_default_matmul_precision: {jax.config.jax_default_matmul_precision}")
    print()
    print("| check | measured | expected | result |")
    print("|---|---|---|---|")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="nalu-accelerator-check-") as workdir:
        for check, measured, expected, verdict in checks(opts.smoke, workdir):
            failed += verdict == "FAIL"
            print(f"| {check} | {measured} | {expected} | {verdict} |", flush=True)
    print()
    print(f"{failed} check(s) failed" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
