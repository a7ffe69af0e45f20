"""How close the wall time ``launch.reproduce`` prints before a cell comes to the cell's own
(a benchmark, not a test).

    python -m benchmarks.estimate                                  # + NAU, 2 seeds × 4,000 steps
    python -m benchmarks.estimate --models nmu --ops mul --seeds 10 --steps 20000 --repeat 3

A cell of ICLR 2020 Table 1 (``--smoke``'s evaluation sizes) is timed as ``launch.reproduce``
times it: two timing runs of ``--calibration_steps`` (``cells.calibrate``; the second is the one
the estimate uses, the first is warm-up and measures the machine's noise: their relative
difference), then ``cells.estimate_s``, then the whole cell through ``nalu_jax.engine.run.run``.
Prints one JSON line per repeat: the estimate, the cell's wall time, the relative error
|estimate − wall| / wall, the noise, and whether the error is within 25% plus that noise (the
target). A loaded machine moves every figure: run it on an idle one.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from benchmarks import refuse_non_positive


def measure(config, calibration_steps: int) -> dict:
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of
    from nalu_jax.reproduce import cells

    first, second = (cells.calibrate(config, calibration_steps) for _ in range(2))
    noise = abs(first["wall_s"] - second["wall_s"]) / min(first["wall_s"], second["wall_s"])
    estimate = cells.estimate_s(config, second)
    with tempfile.TemporaryDirectory(prefix="nalu-estimate-") as workdir:
        t0 = time.perf_counter()
        run(experiment_of(config), config, workdir, progress=False, warn_budget=False)
        wall = time.perf_counter() - t0
    error = abs(estimate - wall) / wall
    return {
        "estimate_s": round(estimate, 3),
        "wall_s": round(wall, 3),
        "error": round(error, 4),
        "noise": round(noise, 4),
        "within_target": bool(error <= 0.25 + noise),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", default="iclr2020-arithmetic", help="a reproduce table's name")
    p.add_argument("--models", default="nau", help="the model: one name, a column of the table")
    p.add_argument("--ops", default="add", help="the op: one name, a row of the table")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--steps", type=int, default=4_000)
    p.add_argument("--calibration_steps", type=int, default=1_000)
    p.add_argument("--repeat", type=int, default=1)
    opts = p.parse_args(argv)
    refuse_non_positive(opts, ("seeds", "steps", "calibration_steps", "repeat"))
    from nalu_jax.config import ConfigError
    from nalu_jax.reproduce import cells, specs

    try:
        spec = specs.table(opts.table)
        chosen = specs.cells(spec, [opts.models], [opts.ops])
        config = cells.configs(spec, chosen, opts.seeds, opts.steps, cells.SMOKE)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    if not config:
        print(f"--models {opts.models} has no runnable cell for --ops {opts.ops} in "
              f"--table {opts.table}.", file=sys.stderr)  # fmt: skip
        return 2
    ((key, config),) = config.items()
    for _ in range(opts.repeat):
        row = {"cell": key, "seeds": opts.seeds, "steps": opts.steps}
        print(json.dumps({**row, **measure(config, opts.calibration_steps)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
