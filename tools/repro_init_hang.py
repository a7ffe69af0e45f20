"""Repro: XLA:CPU never finishes the vmapped init of a sequential-MNIST LSTM with a readout.

    python -m tools.repro_init_hang            # H = 16 and 32, 10 seeds, 60 s each

Found on 2026-11-22 (jax/jaxlib 0.10.2, a 2-core AMD EPYC): ``jax.jit(jax.vmap(init))``
of ``configs/sequential_mnist.py:task=sum,model=lstm`` with ``model.baseline_hidden`` = H
returns from dispatch and then waits forever (every XLA thread idle in the thread pool) for
H >= 32 at 6 or more seeds; H <= 24, or 4 seeds, finish in ~2 s. Also without
``nalu_jax.runtime.hostenv`` (one device). Each case runs in a child process with a timeout, so this
script itself always ends; it prints "finishes" or "HANGS" per case. Re-run after a jaxlib
upgrade. The run loop does not hit it: ``loop.init_in_blocks`` initialises
``seed_block`` seeds per call (1 for sequential MNIST), the same bits as one vmap.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
from nalu_jax.runtime.hostenv import configure_host_devices
configure_host_devices()
import jax
import numpy as np
from nalu_jax.engine import train
from nalu_jax.config import load_config
from nalu_jax.experiments import sequential_mnist as sm
c = load_config("sequential_mnist", "task=sum,model=lstm")
c.model.baseline_hidden = {hidden}
trainer = sm.trainer_for(c)
states = jax.jit(jax.vmap(trainer.init))(train.seed_keys(0, np.arange({seeds})))
jax.block_until_ready(states)
print("finished")
"""


def case(hidden: int, seeds: int, timeout: float) -> str:
    code = CHILD.format(hidden=hidden, seeds=seeds)
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"HANGS (no result in {timeout:.0f} s)"
    if out.returncode != 0 or "finished" not in out.stdout:
        return f"fails (exit {out.returncode}): {out.stderr.strip().splitlines()[-1:]}"
    return "finishes"


def main(argv=None) -> None:
    # no options: --help prints the docstring, anything else is refused before a case runs
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args(argv)
    for hidden, seeds in ((16, 10), (32, 10)):
        print(f"baseline_hidden={hidden}, {seeds} seeds: {case(hidden, seeds, 60.0)}", flush=True)


if __name__ == "__main__":
    main()
