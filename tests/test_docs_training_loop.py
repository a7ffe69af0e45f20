"""docs/training_loop.md is executed: each Python block runs (with fewer steps) and its own
checks hold (the projection kept the weights in range), and the loop really trains."""

import os
import re

import pytest

from tests.conftest import ROOT

DOC = os.path.join(ROOT, "docs", "training_loop.md")


def blocks() -> list[str]:
    with open(DOC) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def shortened(code: str, steps: int) -> str:
    out, n = re.subn(r"^NUM_STEPS = \d+$", f"NUM_STEPS = {steps}", code, flags=re.M)
    assert n == 1, "each block sets NUM_STEPS once"
    return out


def test_the_doc_has_an_nnx_and_a_linen_block():
    code = blocks()
    assert len(code) == 2
    assert "nnx.Optimizer" in code[0] and "model.project()" in code[0]
    assert "to_linen" in code[1] and 'mutable=["params"]' in code[1]


@pytest.mark.parametrize("index", [0, 1], ids=["nnx", "linen"])
def test_block_runs_and_trains(index):
    namespace = {"__name__": f"training_loop_block_{index}"}
    exec(compile(shortened(blocks()[index], 200), DOC, "exec"), namespace)  # noqa: S102
    assert namespace["step"] == 199
    if index == 1:  # the Linen loop: the NAU learns x₀ + x₁ (W → 1, 1) in 200 steps
        import numpy as np

        w = np.ravel(np.asarray(namespace["params"]["nau"]["w"]))
        assert np.all(np.abs(w) <= 1.0)
        assert float(namespace["mse"]) < 0.5
