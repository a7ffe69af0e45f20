"""Throughput of this tree against another commit, side by side, alternating in one process.

    python -m tools.compare_throughput --against=698c75d [--seeds 100 1000] [--steps 10000]
    python -m tools.compare_throughput --against=HEAD --model gated_nau_nmu \
        --set model.first_layer=same --seeds 10 --steps 2000

Checks ``--against`` out into a temporary git worktree and runs each tree's own
``benchmarks/throughput.py`` alternately (against, here, against, here, … ``--repeats`` times
per size), so both see the same machine load; prints every measurement as a JSON line, then
the best seed-steps/s of each side and their ratio. A developer tool, not run by CI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchmarks import refuse_non_positive
from benchmarks.throughput import refuse_bad_configs
from tools import CHECKOUT as HERE
from tools import commit_or_refuse


def _path(tree: str) -> str:
    """``PYTHONPATH`` with ``tree`` first: its code is the one imported, and dependencies
    installed with ``pip --target`` on the existing path stay importable."""
    return os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))


def measure(tree: str, seeds: int, steps: int, model=None, settings=()) -> dict:
    """One ``benchmarks/throughput.py`` measurement in ``tree``: its JSON record."""
    cmd = [sys.executable, "-m", "benchmarks.throughput", "--seeds", str(seeds)]
    cmd += ["--steps", str(steps)]
    if model:
        cmd += ["--models", model]
    for s in settings:
        cmd += ["--set", s]
    out = subprocess.run(cmd, cwd=tree, env=dict(os.environ, PYTHONPATH=_path(tree)),
                         capture_output=True, text=True)  # fmt: skip
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr[-2000:]}")
    records = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(records[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--model", help="one model of nalu_jax.models.MODELS (default nmu)")
    parser.add_argument("--set", action="append", default=[], help="config override k=v")
    opts = parser.parse_args()
    refuse_non_positive(opts, ("seeds", "steps", "repeats"))
    refuse_bad_configs(parser, opts.model, opts.set, steps=[opts.steps])  # not in a child
    against = commit_or_refuse(parser, opts.against)
    old = tempfile.mkdtemp(prefix="nalu-throughput-")
    best = {}
    try:
        subprocess.run(["git", "worktree", "add", "--detach", old, against], cwd=HERE,
                       check=True, capture_output=True)  # fmt: skip
        for seeds in opts.seeds:
            for _ in range(opts.repeats):
                for side, tree in (("against", old), ("here", HERE)):
                    record = measure(tree, seeds, opts.steps, opts.model, opts.set)
                    print(json.dumps({"side": side, **record}), flush=True)
                    key = (seeds, side)
                    best[key] = max(best.get(key, 0.0), record["seed_steps_per_s"])
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", old], cwd=HERE, check=False)
        shutil.rmtree(old, ignore_errors=True)  # had the worktree not been added
    print("| seeds | against (best) | here (best) | here / against |")
    print("|---|---|---|---|")
    for seeds in opts.seeds:
        a, h = best[(seeds, "against")], best[(seeds, "here")]
        print(f"| {seeds} | {a:,.0f} | {h:,.0f} | {h / a:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
