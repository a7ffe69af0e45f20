"""Per-program XLA options (``config.cpu_ynn_fusions``, ``nalu_jax.engine.loop.compiler_options``),
and the other speed changes that move last bits (the single-module batches drawn ahead, the
sNMU's one product).

The single-module configs compile their programs without YNNPACK's fusions (faster for its tiny
reductions). That changes the order of some sums, so the per-seed numbers differ in their last
bits; what must not change is the distribution: the tests train the same seeds both ways and
assert that the change took effect (a spy on the code path each change switches: whether the
two runs' last bits differ depends on the jaxlib's fusion choices, not on this library) and that
the same seeds are solved with errors of the same size (on any platform).
"""

import csv
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import load_config

from nalu_jax.engine.loop import YNN_FUSIONS_OPTION, DevicePopulation, compiler_options
from nalu_jax.experiments import train_and_evaluate


def test_options_follow_the_config_and_platform():
    on, off = load_config("arithmetic", "model=nmu"), load_config("single_module", "model=nmu")
    assert on.cpu_ynn_fusions is True and off.cpu_ynn_fusions is False
    assert compiler_options(on, "cpu") == {}
    assert compiler_options(off, "cpu") == {YNN_FUSIONS_OPTION: ""}
    assert compiler_options(off, "gpu") == {} and compiler_options(off, "tpu") == {}


def test_a_jaxlib_without_the_option_compiles_without_it(monkeypatch):
    from nalu_jax.engine import loop

    assert loop.cpu_option_known(YNN_FUSIONS_OPTION)  # this jaxlib has YNNPACK
    assert not loop.cpu_option_known("xla_cpu_no_such_option_in_any_jaxlib")
    # without YNNPACK, XLA's own kernels are all there is: the option is simply left out
    monkeypatch.setattr(loop, "cpu_option_known", lambda name, value="": False)
    assert compiler_options(load_config("single_module", "model=nmu"), "cpu") == {}


def test_the_option_reaches_the_compiled_program():
    # the NMRU's weight-gradient shape: a batch reduction of [seeds, batch, 2·in]
    fn = jax.jit(lambda a, b: (jnp.abs(a) * b).sum(axis=1))
    args = [np.ones((13, 128, 4), np.float32), np.ones((13, 128, 4), np.float32)]
    pop = DevicePopulation(jax.devices("cpu")[:1])
    default = pop.compile(fn, [args[0]], [args[1]])[0].as_text()
    without = pop.compile(fn, [args[0]], [args[1]], options={YNN_FUSIONS_OPTION: ""})[0]
    assert "ynn" not in without.as_text().lower()
    if "ynn" not in default.lower():
        pytest.skip("this jaxlib hands no fusion of this program to YNNPACK")
    out = pop.run([without], [args[0]], [args[1]])[0]
    np.testing.assert_array_equal(np.asarray(out), np.full((13, 4), 128.0, np.float32))


def _rows(workdir):
    with open(os.path.join(workdir, "seeds.csv")) as f:
        return list(csv.DictReader(f))


def _same_distribution(with_, without):
    """Two runs of the same seeds whose sums may run in another order (other last bits where
    the jaxlib fuses the two programs differently): the same seeds solved (≥ 92%), errors of
    the same size."""
    mse = lambda rs: np.array([float(r["extrapolation_mse"]) for r in rs])
    solved = lambda rs: [r["solved"] == "1" for r in rs]
    agree = sum(a == b for a, b in zip(solved(with_), solved(without), strict=True))
    assert agree >= 23, (solved(with_), solved(without))
    assert abs(sum(solved(with_)) - sum(solved(without))) <= 2
    # errors of the same size: per seed within a factor 10 (or both below 1e-8), median x 2
    a, b = mse(with_), mse(without)
    tiny = (a < 1e-8) & (b < 1e-8)
    ratio = np.maximum(a, b)[~tiny] / np.maximum(np.minimum(a, b)[~tiny], 1e-30)
    assert np.sum(ratio > 10) <= 2, ratio
    assert 0.5 <= np.median(a) / max(np.median(b), 1e-30) <= 2 or np.median(np.maximum(a, b)) < 1e-8


def _train(model, steps, workdir, **fields):
    config = load_config("single_module", f"op=mul,model={model},seeds=25,steps={steps}")
    config.tensorboard = False
    for k, v in fields.items():
        config[k] = v
    train_and_evaluate(config, workdir, progress=False)
    return _rows(workdir)


@pytest.mark.cpu_only("the YNNPACK fusion option is XLA:CPU's; elsewhere both runs are one program")
@pytest.mark.parametrize(("model", "steps"), [("nmu", 50_000), ("nalu", 20_000)])
def test_same_seeds_solved_with_and_without_ynn_fusions(model, steps, tmp_path, monkeypatch):
    seen, compile_ = [], DevicePopulation.compile

    def spy(self, fn, *args, options=None):
        seen.append(dict(options or {}))
        return compile_(self, fn, *args, options=options)

    monkeypatch.setattr(DevicePopulation, "compile", spy)
    ynn = _train(model, steps, str(tmp_path / "ynn"), cpu_ynn_fusions=True)
    assert seen and all(YNN_FUSIONS_OPTION not in o for o in seen)
    seen.clear()
    xla = _train(model, steps, str(tmp_path / "xla"), cpu_ynn_fusions=False)
    assert seen and all(o == {YNN_FUSIONS_OPTION: ""} for o in seen)  # the change took effect
    _same_distribution(ynn, xla)


def test_nalu_same_seeds_solved_with_its_batches_drawn_ahead(monkeypatch, tmp_path):
    # Drawing the batches ahead (rng.units) gives the same values, but XLA:CPU fuses the
    # NALU's exp/log step differently: other bits (tests/test_train_core.py has the units
    # whose bits are unchanged), the same distribution.
    from nalu_jax import rng as rng_lib
    from nalu_jax.experiments import arithmetic as exp

    units, drawn = rng_lib.units, []
    monkeypatch.setattr(rng_lib, "units", lambda *a, **k: drawn.append(1) or units(*a, **k))
    ahead = _train("nalu", 20_000, str(tmp_path / "ahead"))
    assert drawn  # the batches were drawn ahead
    monkeypatch.setattr(exp, "DRAW_AHEAD_ELEMENTS", 0)
    drawn.clear()
    in_step = _train("nalu", 20_000, str(tmp_path / "in_step"))
    assert not drawn  # each step hashed its own
    _same_distribution(ahead, in_step)


def test_snmu_one_product_of_quotients_solves_the_same_seeds(monkeypatch, tmp_path):
    # SNMU.noised takes NMU(x ⊙ n) / NMU(n) as one product of per-input quotients: the same
    # function (the parity fixtures check it and its gradients in float64), rounded otherwise.
    from nalu_jax.units.nau_nmu import NMU, SNMU

    one = _train("snmu", 50_000, str(tmp_path / "one"))
    traced = []
    monkeypatch.setattr(SNMU, "noised", lambda self, x, n: traced.append(1) or (
        NMU.__call__(self, x * n) / NMU.__call__(self, n)))  # fmt: skip
    two = _train("snmu", 50_000, str(tmp_path / "two"))
    assert traced  # the two-product form was the one traced
    _same_distribution(one, two)


@pytest.mark.slow  # 32 s on 2 idle cores
def test_nmru_four_factor_product_on_the_arithmetic_task_same_distribution(monkeypatch, tmp_path):
    # Products over up to four inputs take the closed-form derivative (_base.SMALL_PRODUCT):
    # JAX's rule's bits on the single-module task (tests/test_product.py), other last bits in
    # the 100-input task's program (the NMRU's [x, 1/x] over 2 hidden values), where the
    # fusions differ: the same distribution.
    from nalu_jax.units import _base

    def train_(workdir):
        config = load_config("arithmetic", "model=nmru,op=mul,seeds=25,steps=10000")
        config.tensorboard = False
        train_and_evaluate(config, workdir, progress=False)
        return _rows(workdir)

    # longer products go to _base._jax_product_rule: a spy on the factors ([batch, in, out])
    # it reads tells the two paths apart
    read, jax_product_rule = [], _base._jax_product_rule
    monkeypatch.setattr(_base, "_jax_product_rule", lambda z, dz: read.append(z.shape) or (
        jax_product_rule(z, dz)))  # fmt: skip
    four_factors = lambda: [s for s in read if len(s) == 3 and s[-2] == 4]
    assert _base.SMALL_PRODUCT == 4
    jax.clear_caches()
    closed = train_(str(tmp_path / "closed"))
    assert not four_factors()  # the four-factor product took the closed-form derivative
    try:
        monkeypatch.setattr(_base, "SMALL_PRODUCT", 2)
        jax.clear_caches()  # the custom_jvp rule is traced once per shape and cached
        read.clear()
        jax_rule = train_(str(tmp_path / "jax_rule"))
        assert four_factors()  # JAX's rule for it: the spy sees it, so the first check counts
        _same_distribution(closed, jax_rule)
    finally:
        monkeypatch.undo()
        jax.clear_caches()
