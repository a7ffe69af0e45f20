"""Where the arithmetic training step's time goes, per model (a benchmark, not a test).

    python -m benchmarks.profile_step --models nalu,nmu        # the breakdown table
    python -m benchmarks.profile_step --models all --seeds 50
    python -m benchmarks.profile_step --task single_module --models all --seeds 10

For each model of ``nalu_jax.models.MODELS`` on the standard arithmetic configuration (op mul,
n = 100, batch 128) — or, with ``--task single_module``, each unit of the single-module
benchmark (one unit, 2 inputs, range 7; × units on ×, NAC₊/NAU on +) — it times, on one CPU
device with ``--seeds`` seeds (default 50, the per-device share of the 2-device benchmark at 100
seeds, rounded up to a multiple of the seed block) vmapped in blocks of the config's
``seed_block`` as the engine runs them (``--set seed_block=N`` to change it), scans of
``--steps`` steps of nested parts of the step and reports µs per seed-step:

  data      sampling the batch and its targets;
  forward   + the model's forward pass, regularisers and the loss;
  grad      + the backward pass (``value_and_grad`` of the loss);
  step      the whole training step (+ optimiser, projection, divergence guard), the
            ``Trainer.train`` of the experiment;
  eval      one evaluation (both 10,000-sample sets + sparsity error), per seed, divided by
            ``eval_every`` (its share of a step).

The differences between consecutive columns are the cost of each part. Each scan is compiled
first and timed as the best of ``--repeat``.

``--kernels N`` also traces one run of the whole step with ``jax.profiler`` and prints the
number of XLA:CPU kernels (thunks) one step launches and the N costliest, in µs per
seed-step (traced times run ~1.5× the untraced ones: read them as shares).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time

from benchmarks import refuse_non_positive
from benchmarks.throughput import (  # the benchmarks' configs, --models and --set overrides
    TASKS,
    benchmark_config,
    refuse_bad_configs,
)


def _best(fn, args, repeat):
    import jax

    jax.block_until_ready(fn(*args))  # compile
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def kernel_breakdown(fn, args, steps: int, seeds: int, top: int) -> dict:
    """Trace one call of ``fn`` (compiled already: a scan of ``steps`` steps over ``seeds``
    seeds): the kernels launched once per step and the ``top`` costliest, µs per seed-step."""
    import collections
    import glob
    import gzip
    import tempfile

    import jax

    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d):
            jax.block_until_ready(fn(*args))
        (path,) = glob.glob(os.path.join(d, "**", "*.trace.json.gz"), recursive=True)
        with gzip.open(path) as f:
            events = json.load(f)["traceEvents"]
    total, count = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and "dur" in e and not e["name"].startswith("end: "):
            total[e["name"]] += e["dur"]
            count[e["name"]] += 1
    # launched once per step per seed block (or a multiple of that): the per-step kernels
    per_step = {k: t / (seeds * steps) for k, t in total.items() if count[k] % steps == 0}
    ranked = sorted(per_step.items(), key=lambda kv: -kv[1])
    return {
        "kernels_per_step": len(per_step),
        "kernel_us": round(sum(per_step.values()), 3),
        "under_1us": sum(1 for v in per_step.values() if v < 1.0),
        "top": [(k, round(v, 3)) for k, v in ranked[:top]],
    }


def engine_block(config, seeds: int) -> int:
    """The seed block the engine would run ``seeds`` seeds of ``config`` with here
    (``config.seed_block``; "auto" resolved for this platform by ``engine.blocks``)."""
    from nalu_jax.engine.blocks import resolve_seed_block

    config.num_seeds = seeds
    return int(resolve_seed_block(config).seed_block)


DEFAULT_SEEDS = 50  # the per-device share of the 2-device benchmark at 100 seeds


def default_seeds(config) -> int:
    """``DEFAULT_SEEDS`` rounded up to a multiple of the seed block ``config`` runs with here
    (50 on the arithmetic task's block of 10; 52 on the single-module units' 13)."""
    block = engine_block(config, DEFAULT_SEEDS)
    return block * -(-DEFAULT_SEEDS // block)


def seeds_off_block(model: str, seeds: int, block: int) -> str:
    """The sentence for a seed count that is not a multiple of the seed block ("" if it is):
    the profile vmaps ``block`` seeds at a time."""
    if seeds % block == 0:
        return ""
    nearest = block * max(1, round(seeds / block))
    return (
        f"--seeds must be a multiple of {model}'s seed block ({block}) for this task; "
        f"{seeds} is not (e.g. --seeds {nearest})."
    )


def profile(model: str, seeds: int, steps: int, repeat: int, settings=(), kernels=0,
            task: str = "arithmetic") -> dict:  # fmt: skip
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from nalu_jax.engine import train
    from nalu_jax.engine.loop import blocked, compiler_options
    from nalu_jax.experiments import arithmetic as exp
    from nalu_jax.tasks import arithmetic as task_lib
    from nalu_jax.tasks import eval_sets
    from nalu_jax.units import training_needs

    config = benchmark_config(model, settings, task)
    block = engine_block(config, seeds)
    if message := seeds_off_block(model, seeds, block):
        raise ValueError(message)

    options = compiler_options(config, jax.default_backend()) or None  # as the engine's

    def vmapped(fn):
        return jax.jit(blocked(fn, block, (0,)), compiler_options=options)

    task = exp.build_task(config)
    factory, names = exp.build_model_factory(config, task)
    recipe = exp.make_recipe(
        config, task, factory, names,
        input_shape=(task.input_size,),
        target_fn=functools.partial(task_lib.target, task),
        eval_data=eval_sets.evaluation_inputs(task, int(config.eval_size)),
    )  # fmt: skip
    hp = exp.build_hparams(config, names)
    trainer = train.make_train(recipe, config, hp, training_needs(names))
    keys = train.seed_keys(int(config.seed), jnp.arange(seeds))
    states = jax.jit(jax.vmap(trainer.init))(keys)
    graphdef = trainer.graphdef
    batch = int(config.train.batch_size)

    def scan_part(part):
        def one_seed(state):
            def step_material(i):
                # the step's random material derived before the scan, for all its steps
                # (Trainer.train draws it train.MATERIAL_STEPS steps at a time; the parts'
                # figures are then those of the material drawn whole, "step" the core's)
                key = jax.random.fold_in(jax.random.wrap_key_data(state.key), i)
                return recipe.step_randomness(key)

            def body(carry, xs):
                i, material = xs
                if part == "data":
                    rng = task.interpolation_range
                    x = task_lib.sample_inputs(
                        material[0], (batch, task.input_size), rng,
                        sampler=str(config.train.sampler),
                    )  # fmt: skip
                    t = task_lib.target(task, x, task_lib.subset_masks(task, state.aux.offset))
                    return carry + jnp.sum(x[:, :1]) + jnp.sum(t), None

                def loss(params):
                    model_ = nnx.merge(graphdef, params)
                    s = state.replace(step=i)
                    return recipe.loss(model_, hp, s, material, trainer.train_data)

                if part == "forward":
                    return carry + loss(state.params)[0], None
                g = jax.grad(lambda p: loss(p)[0])(state.params)
                return carry + sum(jnp.sum(v) for v in jax.tree.leaves(g)), None

            steps_ = jnp.arange(steps)
            xs = (steps_, jax.vmap(step_material)(steps_))
            return jax.lax.scan(body, jnp.zeros(()), xs)[0]

        return vmapped(one_seed)

    out = {"model": model, "task": str(config.task.kind), "seeds": seeds, "steps": steps}
    out["seed_block"] = block
    for part in ("data", "forward", "grad"):
        out[part] = _best(scan_part(part), (states,), repeat) / (seeds * steps) * 1e6
    every = int(config.eval_every)
    chunks = max(1, steps // every)

    def run_chunks(s):
        def body(s, _):
            return trainer.train(s, hp, trainer.train_data)[0], None

        return jax.lax.scan(body, s, None, length=chunks)[0]

    step = vmapped(run_chunks)  # compiled once: timed, then traced
    out["step"] = _best(step, (states,), repeat) / (seeds * chunks * every) * 1e6
    if kernels:
        out["kernels"] = kernel_breakdown(step, (states,), chunks * every, seeds, kernels)
    ev = vmapped(lambda s: trainer.evaluate(s, hp, trainer.eval_data)[1])
    out["eval"] = _best(ev, (states,), repeat) / (seeds * every) * 1e6
    out["total"] = out["step"] + out["eval"]
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def main() -> None:
    from nalu_jax.runtime.hostenv import configure_host_devices

    configure_host_devices()  # the engine's XLA:CPU flags (the profile uses one device)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="nmu,nalu", help="comma list or 'all'")
    parser.add_argument("--task", choices=TASKS, default="arithmetic", help="benchmark task")
    parser.add_argument(
        "--seeds", type=int, default=None,
        help=f"seeds per model (default: {DEFAULT_SEEDS}, rounded up to the model's seed block)",
    )  # fmt: skip
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], help="config override k=v")
    parser.add_argument("--kernels", type=int, default=0, help="trace: list the N costliest")
    args = parser.parse_args()
    refuse_non_positive(args, ("seeds", "steps", "repeat"))
    if args.kernels < 0:
        parser.error(f"--kernels must be an integer >= 0 (0: no trace), got {args.kernels}.")
    models = refuse_bad_configs(parser, args.models, args.set, args.task)
    seeds = {}
    for m in models:  # before any compile: a bad --seeds is one sentence, exit status 2
        # a fresh config for each call: engine_block resolves its seed block in place, and
        # on an accelerator "auto" depends on the seed count
        seeds[m] = args.seeds or default_seeds(benchmark_config(m, args.set, args.task))
        block = engine_block(benchmark_config(m, args.set, args.task), seeds[m])
        if message := seeds_off_block(m, seeds[m], block):
            parser.error(message)
    rows = []
    for m in models:
        rows.append(
            profile(m, seeds[m], args.steps, args.repeat, args.set, args.kernels, args.task)
        )
        print(json.dumps(rows[-1]), flush=True)
    cols = ("data", "forward", "grad", "step", "eval", "total")
    print("| model | " + " | ".join(f"{c} µs" for c in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for r in rows:
        print(f"| {r['model']} | " + " | ".join(f"{r[c]:.2f}" for c in cols) + " |")
    for r in rows:
        if "kernels" in r:
            k = r["kernels"]
            print(
                f"{r['model']}: {k['kernels_per_step']} kernels per step ({k['under_1us']} under "
                f"1 µs/seed-step), {k['kernel_us']:.1f} µs/seed-step traced; costliest: "
                + ", ".join(f"{name} {us:.1f}" for name, us in k["top"])
            )


if __name__ == "__main__":
    main()
