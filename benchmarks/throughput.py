"""Seed-steps per second of the standard arithmetic configuration (a benchmark, not a test).

    python -m benchmarks.throughput                     # S = 1, 10, 100, 1000
    python -m benchmarks.throughput --seeds 100 --steps 20000
    python -m benchmarks.throughput --models all --seeds 100 --steps 10000   # every model
    python -m benchmarks.throughput --models nalu,nmu --seeds 1000 --steps 3000
    python -m benchmarks.throughput --task single_module --models all --seeds 25 --steps 20000

Model nmu, op mul, n = 100, batch 128, hidden 2, evaluation every 1,000 steps on the two
10,000-sample sets — through ``nalu_jax.experiments.train_and_evaluate``, the code path of
``nalu_jax.main``. Each size runs in its own process so that peak resident memory is its own.
Prints one JSON line per size: seeds, steps, seconds (compile excluded), compile_seconds,
seed_steps_per_s, peak_rss_mib, device. With ``--models`` (a comma list of
``nalu_jax.models.MODELS`` names, or ``all``) it runs each model at each size instead — one JSON
line per (model, size), with ``model`` — and then prints a table of seed-steps/s per model.
``--task single_module``: the single-module benchmark instead (one unit, 2 inputs, range 7;
``--models all`` = every unit of the benchmark, × units on ×, NAC₊/NAU on +).
``--set field=value`` overrides a config field, parsed with the field's type.
Every measurement is its own process, so ``--repeat R`` keeps the best of R.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

from benchmarks import refuse_non_positive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


TASKS = ("arithmetic", "single_module")


def single_module_op(model: str) -> str:
    """The op a unit is benchmarked on in the single-module task: × where it is benchmarked
    on ×, else + (NAC₊, NAU)."""
    from nalu_jax.tasks.single_module import MODELS_BY_OP

    return "mul" if model in MODELS_BY_OP["mul"] else "add"


def benchmark_config(model: str, settings=(), task: str = "arithmetic"):
    """The benchmark's config with ``--set field=value`` overrides applied (each value parsed
    with the field's own type: ``nalu_jax.config.apply_overrides``).

    ``task="arithmetic"``: ``configs/arithmetic.py:model=M,op=mul`` (n = 100, two layers);
    ``task="single_module"``: ``configs/single_module.py:model=M,op=OP`` (one unit, 2 inputs,
    range 7, 25 seeds; OP = × for the units benchmarked on ×, else +).
    """
    from nalu_jax.config import apply_overrides, load_config

    if task == "single_module":
        config = load_config("single_module", f"model={model},op={single_module_op(model)}")
    else:
        config = load_config("arithmetic", f"model={model},op=mul")
    apply_overrides(config, settings)
    return config


def arithmetic_config(model: str, settings=()):
    """``configs/arithmetic.py:model=M,op=mul`` with ``--set`` overrides (``benchmark_config``)."""
    return benchmark_config(model, settings, "arithmetic")


def measure(
    seeds: int, steps: int, extra: list[str], model: str = "nmu", task: str = "arithmetic"
) -> dict:
    """Train ``seeds`` seeds for ``steps`` steps in this process; the JSON record."""
    from nalu_jax.runtime.hostenv import configure_host_devices

    configure_host_devices()  # as nalu_jax.main does
    import jax
    from absl import logging

    from nalu_jax.experiments import train_and_evaluate

    logging.set_verbosity(logging.WARNING)
    config = benchmark_config(model, extra, task)
    config.num_seeds = seeds
    config.num_steps = steps
    config.checkpoint_every = steps
    with tempfile.TemporaryDirectory() as workdir:
        summary = train_and_evaluate(config, workdir, progress=False)
    loop_s = summary["wall_time_s"] - summary["compile_time_s"]
    return {
        "model": model,
        "task": task,
        "seeds": seeds,
        "steps": steps,
        "seconds": round(loop_s, 3),
        "compile_seconds": round(summary["compile_time_s"], 3),
        "seed_steps_per_s": round(summary["seed_steps_per_s"], 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "device": f"{jax.devices()[0].platform}:{jax.device_count()}x{jax.devices()[0].device_kind}",
        "settings": extra,
    }


def _run_one(model: str, seeds: int, steps: int, settings: list[str], task: str) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.throughput",
        "--inline",
        "--seeds",
        str(seeds),
        "--steps",
        str(steps),
    ]
    cmd += ["--task", task]
    cmd += ["--models", model] + [f"--set={s}" for s in settings]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"model {model}, size {seeds} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def best_of(model: str, seeds: int, steps: int, settings: list[str], task: str, repeat: int = 1):
    """The record of the fastest of ``repeat`` runs of ``model``, each in its own process."""
    runs = [_run_one(model, seeds, steps, settings, task) for _ in range(max(1, repeat))]
    return max(runs, key=lambda r: r["seed_steps_per_s"])


#: the units of the single-module benchmark (× and +), in the order of its tables
SINGLE_MODULE_UNITS = ("nac_add", "nmu", "nau", "nac_mul", "nalu", "inalu", "g_nalu", "npu",
                       "real_npu", "nru", "nmru", "snmu")  # fmt: skip


def model_names(arg: str | None, task: str = "arithmetic") -> list[str]:
    """``--models``: ``all`` (every ``MODELS`` entry in its order; for the single-module task
    every unit of the benchmark) or a comma list."""
    from nalu_jax.models import MODELS
    from nalu_jax.units import UNITS

    known = UNITS if task == "single_module" else MODELS
    if arg is None:
        return ["nmu"]
    if arg == "all":
        return list(SINGLE_MODULE_UNITS if task == "single_module" else MODELS)
    names = [n for n in arg.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        from nalu_jax.config import ConfigError

        raise ConfigError(f"--models: unknown {unknown}; choose from {sorted(known)} or 'all'.")
    return names


def refuse_bad_configs(
    parser, models: str | None, sets, task: str = "arithmetic", steps=()
) -> list[str]:
    """``model_names(models, task)``, each name's config built with every ``--set`` override
    (``benchmark_config``) and validated at each step budget of ``steps`` as ``measure`` runs
    it: argparse's one error line, status 2, for the first unknown name, bad override or
    budget its evaluation interval does not divide, before anything is compiled or run."""
    from nalu_jax.config import ConfigError
    from nalu_jax.engine import sweep
    from nalu_jax.experiments import experiment_of

    try:
        names = model_names(models, task)
        for model in names:
            config = benchmark_config(model, sets, task)
            for budget in steps:
                config.num_steps = config.checkpoint_every = budget
                sweep.validate(experiment_of(config), config)
    except ConfigError as e:
        parser.error(str(e))
    return names


def table(records: list[dict]) -> str:
    """Markdown: one row per model, one column per seed count (best seed-steps/s)."""
    sizes = sorted({r["seeds"] for r in records})
    models = list(dict.fromkeys(r["model"] for r in records))
    head = "| model | " + " | ".join(f"{s} seeds" for s in sizes) + " | compile s | peak MiB |"
    lines = [head, "|" + "---|" * (len(sizes) + 3)]
    for m in models:
        rows = {r["seeds"]: r for r in records if r["model"] == m}
        cells = [f"{rows[s]['seed_steps_per_s']:,.0f}" if s in rows else "" for s in sizes]
        last = rows[max(rows)]
        lines.append(
            f"| {m} | "
            + " | ".join(cells)
            + f" | {last['compile_seconds']:.1f} | {last['peak_rss_mib']:,.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, help="one size only (default: 1, 10, 100, 1000)")
    parser.add_argument("--steps", type=int, help="step budget (default: by size)")
    parser.add_argument("--models", help="comma list of model names, or 'all' (default nmu)")
    parser.add_argument("--task", choices=TASKS, default="arithmetic", help="benchmark task")
    parser.add_argument("--repeat", type=int, default=1, help="best of R runs per measurement")
    parser.add_argument("--set", action="append", default=[], help="config override k=v")
    parser.add_argument("--inline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    refuse_non_positive(args, ("seeds", "steps", "repeat"))
    if args.inline:
        record = measure(args.seeds, args.steps, args.set, args.models, args.task)
        print(json.dumps(record), flush=True)
        return
    budgets = [args.steps] if args.steps else [20_000, 10_000]  # the loop's, by size
    models = refuse_bad_configs(parser, args.models, args.set, args.task, budgets)
    sizes = [args.seeds] if args.seeds else [1, 10, 100, 1000]
    records = []
    for model in models:
        for seeds in sizes:
            steps = args.steps or (20_000 if seeds <= 100 else 10_000)
            best = best_of(model, seeds, steps, args.set, args.task, args.repeat)
            records.append(best)
            print(json.dumps(best), flush=True)
    if args.models is not None:
        print(table(records), flush=True)


if __name__ == "__main__":
    main()
