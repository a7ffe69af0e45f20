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
    else:  # the NNX loop: 200 steps lower the training error of the same init (78 → 68)
        import jax.numpy as jnp
        from flax import nnx

        from nalu_jax import build_model

        fresh = build_model("nmu", 4, rngs=nnx.Rngs(0), hidden_size=2)  # the block's init
        x, target = namespace["x"], namespace["target"]

        def mse(model):
            return float(jnp.mean((model(x)[:, 0] - target(x)) ** 2))

        trained, untrained = mse(namespace["model"]), mse(fresh)
        assert trained < 0.95 * untrained, (trained, untrained)
