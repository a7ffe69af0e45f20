"""Every contraction the library emits runs at the configured precision (full float32 unless a
run asks otherwise): the lowered StableHLO of every experiment's programs and of every
registered unit's forward and gradient, parsed by ``tools.precision_audit``.

On XLA:CPU the precision changes no bits; on an NVIDIA GPU since Ampere a float32 contraction
at DEFAULT runs in TF32, where no arithmetic seed can pass. These tests run on any platform.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import pytest
from conftest import load_config, tiny
from flax import nnx

from nalu_jax.config import ConfigError
from nalu_jax.engine.run import run
from nalu_jax.experiments import EXPERIMENTS, experiment_of
from nalu_jax.experiments.arithmetic import validate
from nalu_jax.units import UNITS, make_unit
from nalu_jax.units.precision import matmul_precision, use_matmul_precision
from tools.precision_audit import (
    CASES,
    below,
    contractions,
    experiment_programs,
    main,
    unit_programs,
)

DOT = (
    "%0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], "
    "precision = [{}, {}] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>"
)
CONV = (
    "%1 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
    "[b, 0, 1, f], window = {{stride = [1, 1]}} {{batch_group_count = 1 : i64, "
    "precision_config = [#stablehlo<precision {}>, #stablehlo<precision {}>]}} : "
    "(tensor<1x8x8x1xf32>, tensor<3x3x1x2xf32>) -> tensor<1x8x8x2xf32>"
)


def test_contractions_reads_each_op_and_its_weakest_operand():
    text = "\n".join(
        [
            DOT.format("HIGHEST", "HIGHEST"),
            CONV.format("HIGHEST", "HIGH"),
            "%2 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (...)",
            "%3 = stablehlo.add %a, %b : tensor<3xf32>",
        ]
    )
    found = [(op, p) for op, p, _ in contractions(text)]
    assert found == [
        ("dot_general", "HIGHEST"),
        ("convolution", "HIGH"),
        ("dot_general", "DEFAULT"),
    ]
    assert len(below(text, "highest")) == 2
    assert len(below(text, "high")) == 1
    assert below(text, "default") == []


@pytest.mark.parametrize("precision", [None, "default", "high", "highest"])
def test_jax_writes_the_precision_the_audit_reads(precision):
    # what this JAX version emits: the audit must see a matmul and a convolution either way
    x, w = jnp.ones((3, 4)), jnp.ones((4, 5))
    image, kernel = jnp.ones((1, 8, 8, 1)), jnp.ones((3, 3, 1, 2))
    dims = ("NHWC", "HWIO", "NHWC")

    def both(x, w, image, kernel):
        y = jnp.matmul(x, w, precision=precision)
        c = jax.lax.conv_general_dilated(
            image, kernel, (1, 1), "SAME", None, None, dims, precision=precision
        )
        return y, c

    text = jax.jit(both).lower(x, w, image, kernel).as_text()
    want = (precision or "default").upper()
    assert [(op, p) for op, p, _ in contractions(text)] == [
        ("dot_general", want),
        ("convolution", want),
    ]


def test_cases_cover_every_experiment():
    assert {load_config(*arg.split(":", 1)).experiment for arg, _ in CASES.values()} == set(
        EXPERIMENTS
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_experiment_programs_are_at_full_precision(case):
    texts = experiment_programs(case)
    assert any(k.endswith("/train") for k in texts) and any(k.endswith("/evaluate") for k in texts)
    assert sum(len(contractions(t)) for t in texts.values()) > 0  # the audit saw the model
    weak = {k: below(t) for k, t in texts.items() if below(t)}
    assert weak == {}


@pytest.mark.parametrize("name", sorted(UNITS))
def test_unit_forward_and_gradient_are_at_full_precision(name):
    texts = unit_programs(name)
    assert {k: below(t) for k, t in texts.items() if below(t)} == {}


def test_units_contract_at_all():
    # the unit audit is not vacuous: most units contract x with W
    counts = {n: sum(len(contractions(t)) for t in unit_programs(n).values()) for n in UNITS}
    assert sum(c > 0 for c in counts.values()) >= len(UNITS) // 2, counts


def test_a_unit_is_at_full_precision_whatever_jax_default_says():
    x = jnp.ones((4, 3))
    with jax.default_matmul_precision("bfloat16"):
        unit = make_unit("nau", 3, 2, rngs=nnx.Rngs(0))
        text = nnx.jit(lambda u, x: u(x)).lower(unit, x).as_text()
    ops = contractions(text)
    assert ops and all(p == "HIGHEST" for _, p, _ in ops)


def test_a_run_asking_for_the_fast_mode_gets_it():
    texts = experiment_programs("arithmetic_nalu", "default")
    precisions = [p for t in texts.values() for _, p, _ in contractions(t)]
    # the task's subset sums stay HIGHEST (data, not model); the model's contractions follow
    assert "DEFAULT" in precisions and set(precisions) <= {"DEFAULT", "HIGHEST"}
    assert all(below(t, "default") == [] for t in texts.values())
    assert matmul_precision() == jax.lax.Precision.HIGHEST  # restored after the run traced


def test_use_matmul_precision_restores_and_nests():
    with use_matmul_precision("high"):
        assert matmul_precision() == jax.lax.Precision.HIGH
        with use_matmul_precision("tensorfloat32"):
            assert matmul_precision() == jax.lax.Precision.HIGH
        with use_matmul_precision("default"):
            assert matmul_precision() == jax.lax.Precision.DEFAULT
        assert matmul_precision() == jax.lax.Precision.HIGH
    assert matmul_precision() == jax.lax.Precision.HIGHEST


@pytest.mark.parametrize("value", ["HIGHEST", "fp32", "tf32", ""])
def test_bad_matmul_precision_is_one_sentence(value):
    config = load_config("single_module", "op=mul,model=nmu")
    config.matmul_precision = value
    with pytest.raises(ConfigError, match=r"^matmul_precision must be one of \['highest', "):
        validate(config)


@pytest.mark.parametrize(
    "argv, expect",
    [
        (["--matmul_precision=fp32"], "argument --matmul_precision: invalid choice: 'fp32'"),
        (["--only=arithmetic_nmu,nope"], "--only: unknown cases ['nope']; known: "),
    ],
)
def test_the_tools_bad_input_is_refused_before_anything_is_lowered(capsys, argv, expect):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("usage: ") and expect in err[-1]


@pytest.mark.parametrize("precision", ["highest", "default"])
def test_summary_says_when_a_run_is_below_full_precision(tmp_path, precision):
    config = tiny(load_config("single_module", "op=add,model=nau"), steps=20, eval_every=10)
    config.matmul_precision = precision
    summary = run(experiment_of(config), config, str(tmp_path), progress=False)
    written = json.loads((tmp_path / "summary.json").read_text())
    md = (tmp_path / "summary.md").read_text()
    if precision == "highest":
        assert "matmul_precision" not in written and "matmul_precision" not in md
    else:
        assert written["matmul_precision"] == summary["matmul_precision"] == "default"
        assert md.startswith("Matrix products at matmul_precision = 'default'")
