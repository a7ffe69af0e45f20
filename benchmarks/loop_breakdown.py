"""Where a run's loop time goes (a benchmark, not a test): its training calls, evaluations,
checkpoints and the host work between them, beside the training program alone.

    python -m benchmarks.loop_breakdown                          # 175 runs × 20,000 steps
    python -m benchmarks.loop_breakdown --table iclr2020-hidden-size --cell mul-nmu-h10 --seeds 50

A whole run goes through ``nalu_jax.run`` (the engine's loop: evaluations every
``eval_every`` steps, checkpoints every ``checkpoint_every``) with each call (every device's
share dispatched at once) timed to completion (``jax.block_until_ready``; the loop waits for
each call's losses anyway) and each checkpoint save timed. It prints one JSON line per case:
the loop's own seed-steps/s (as summary.json reports it), the seconds in training calls, evaluations, checkpoint saves and the
rest, and the training calls' rate beside the program alone at the same config and runs
(``tools.accelerator_check.throughput``: one compiled call of ``eval_every`` steps, timed after
a first call). On a GPU the difference between the two rates is what the loop adds.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time

from benchmarks import refuse_non_positive

DEFAULT_TABLE = "iclr2020-range"


def _config(table: str, cell: str | None, seeds: int, steps: int, every: int):
    """Cell ``cell`` of ``table`` with ``seeds`` seeds and ``steps`` steps, evaluated every
    ``every``; without a cell: the interpolation-range figure's × NMU task at U[1,2] → U[2,6]
    with ``7 × seeds`` runs (``tools.accelerator_check``'s plain run-loop row)."""
    from nalu_jax.config import ConfigError
    from nalu_jax.reproduce import cells, specs
    from tools.accelerator_check import loop_config

    spec = specs.table(table)  # an unknown name: one sentence
    if cell is None and table == DEFAULT_TABLE:
        return loop_config(False, seeds, steps, every)
    table_cells = specs.cells(spec)
    keys = [c.key for c in table_cells]
    if cell is None:
        raise ConfigError(f"--cell must name one of table {table}'s cells {keys}.")
    chosen = [c for c in table_cells if c.key == cell]
    if not chosen:
        raise ConfigError(f"--cell must be one of table {table}'s cells {keys}, got {cell!r}.")
    config = cells.configs(spec, chosen, seeds, steps)[cell]
    config.eval_every, config.tensorboard = every, False
    return config


def breakdown(config, workdir: str) -> dict:
    """Seconds per part of one run of ``config`` through the engine's loop."""
    import jax

    from nalu_jax.engine import loop
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of
    from nalu_jax.runtime import checkpoint

    seconds, calls = collections.Counter(), collections.Counter()
    compile_orig, save_orig = loop.DevicePopulation.compile, checkpoint.Checkpointer.save
    run_orig = loop.DevicePopulation.run
    labels = {}  # the loop compiles the evaluation, then the training program (one per device)

    def compile_(self, fn, *args, options=None):
        compiled = compile_orig(self, fn, *args, options=options)
        labels[id(compiled)] = ("evaluate", "train")[len(labels) % 2]
        return compiled

    def run_(compiled, *args):  # one call on every device, timed until all are done
        t = time.perf_counter()
        outs = jax.block_until_ready(run_orig(compiled, *args))
        label = labels[id(compiled)]
        seconds[label] += time.perf_counter() - t
        calls[label] += 1
        return outs

    def save(self, step, tree):
        t = time.perf_counter()
        save_orig(self, step, tree)
        seconds["checkpoint"] += time.perf_counter() - t
        calls["checkpoint"] += 1

    loop.DevicePopulation.compile, checkpoint.Checkpointer.save = compile_, save
    loop.DevicePopulation.run = staticmethod(run_)
    try:
        summary = run(experiment_of(config), config, workdir, progress=False)
    finally:
        loop.DevicePopulation.compile, checkpoint.Checkpointer.save = compile_orig, save_orig
        loop.DevicePopulation.run = staticmethod(run_orig)
    loop_s = float(summary["wall_time_s"]) - float(summary["compile_time_s"])
    runs, steps = int(config.num_seeds), int(config.num_steps)
    rest = loop_s - seconds["train"] - seconds["evaluate"] - seconds["checkpoint"]
    return {
        "runs": runs,
        "steps": steps,
        "eval_every": int(config.eval_every),
        "checkpoint_every": int(config.get("checkpoint_every") or steps),
        "seed_block": int(config.seed_block),
        "loop_s": round(loop_s, 2),
        "loop_seed_steps_per_s": round(float(summary["seed_steps_per_s"])),
        "train_s": round(seconds["train"], 2),
        "train_calls": calls["train"],
        "evaluate_s": round(seconds["evaluate"], 2),
        "evaluate_calls": calls["evaluate"],
        "checkpoint_s": round(seconds["checkpoint"], 2),
        "checkpoints": calls["checkpoint"],
        "rest_s": round(rest, 2),
        "train_seed_steps_per_s": round(runs * steps / seconds["train"]) if seconds["train"] else 0,
        "device": str(jax.devices()[0].device_kind),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", default=DEFAULT_TABLE, help="a reproduce table's name")
    p.add_argument("--cell", default=None, help="one of its cells (e.g. mul-nmu-h10); default: "
                   "the plain × NMU task at 7 × seeds runs")  # fmt: skip
    p.add_argument("--seeds", type=int, default=25, help="seeds (no --cell: × 7 runs)")
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--eval_every", type=int, default=1_000)
    p.add_argument("--checkpoint_every", type=int, default=None,
                   help="steps between checkpoints (default: the config's)")  # fmt: skip
    p.add_argument("--no_alone", action="store_true", help="skip the program-alone figure")
    opts = p.parse_args(argv)
    refuse_non_positive(opts, ("seeds", "steps", "eval_every", "checkpoint_every"))
    from nalu_jax.config import ConfigError

    try:
        config = _config(opts.table, opts.cell, opts.seeds, opts.steps, opts.eval_every)
        if opts.checkpoint_every is not None:
            config.checkpoint_every = opts.checkpoint_every
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nalu-loop-breakdown-") as workdir:
        row = breakdown(config.copy_and_resolve_references(), workdir)
    if not opts.no_alone:
        from tools.accelerator_check import throughput

        row["alone_seed_steps_per_s"] = round(throughput(row["runs"], opts.eval_every, config))
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
