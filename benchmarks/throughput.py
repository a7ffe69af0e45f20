"""Seed-steps per second of the standard arithmetic configuration (a benchmark, not a test).

    python benchmarks/throughput.py                     # S = 1, 10, 100, 1000
    python benchmarks/throughput.py --seeds 100 --steps 20000

Model nmu, op mul, n = 100, batch 128, hidden 2, evaluation every 1,000 steps on the two
10,000-sample sets — through ``nalu_jax.experiments.train_and_evaluate``, the code path of
``nalu_jax.main``. Each size runs in its own process so that peak resident memory is its own.
Prints one JSON line per size: seeds, steps, seconds (compile excluded), compile_seconds,
seed_steps_per_s, peak_rss_mib, device.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(seeds: int, steps: int, extra: list[str]) -> dict:
    """Train ``seeds`` seeds for ``steps`` steps in this process; the JSON record."""
    sys.path.insert(0, ROOT)
    from nalu_jax.hostenv import configure_host_devices

    configure_host_devices()  # as nalu_jax.main does
    import jax
    from absl import logging

    sys.path.insert(0, ROOT)
    from nalu_jax.experiments import train_and_evaluate

    logging.set_verbosity(logging.WARNING)
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "cfg", os.path.join(ROOT, "configs/arithmetic.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.get_config("model=nmu,op=mul")
    config.num_seeds = seeds
    config.num_steps = steps
    config.checkpoint_every = steps
    for item in extra:  # --set field=value, e.g. seed_block=64
        key, value = item.split("=", 1)
        target = config
        *parents, leaf = key.split(".")
        for p in parents:
            target = target[p]
        target[leaf] = type(target[leaf])(value) if target[leaf] is not None else float(value)
    with tempfile.TemporaryDirectory() as workdir:
        summary = train_and_evaluate(config, workdir, progress=False)
    loop_s = summary["wall_time_s"] - summary["compile_time_s"]
    return {
        "seeds": seeds,
        "steps": steps,
        "seconds": round(loop_s, 3),
        "compile_seconds": round(summary["compile_time_s"], 3),
        "seed_steps_per_s": round(summary["seed_steps_per_s"], 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "device": f"{jax.devices()[0].platform}:{jax.device_count()}x{jax.devices()[0].device_kind}",
        "settings": extra,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, help="one size only (default: 1, 10, 100, 1000)")
    parser.add_argument("--steps", type=int, help="step budget (default: by size)")
    parser.add_argument("--set", action="append", default=[], help="config override k=v")
    parser.add_argument("--inline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inline:
        print(json.dumps(measure(args.seeds, args.steps, args.set)), flush=True)
        return
    sizes = [args.seeds] if args.seeds else [1, 10, 100, 1000]
    for seeds in sizes:
        steps = args.steps or (20_000 if seeds <= 100 else 10_000)
        cmd = [sys.executable, __file__, "--inline", "--seeds", str(seeds), "--steps", str(steps)]
        cmd += [f"--set={s}" for s in args.set]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"size {seeds} failed:\n{out.stderr[-3000:]}")
        print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
