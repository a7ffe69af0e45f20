"""Experiments of one's own: registered by the one call the built-in ones use, selected by
name or ``module:NAME``, and the open arithmetic family (a target of one's own, any stack of
units) judged against its own target with its own ε-perturbation threshold."""

import dataclasses
import os
import sys
import types

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, load_config
from flax import nnx

from nalu_jax import cli
from nalu_jax.config import ConfigError, static_task_config
from nalu_jax.experiments import EXPERIMENTS, arithmetic, experiment_of, register_experiment
from nalu_jax.models.arithmetic import ArithmeticNetwork, stack_factory
from nalu_jax.tasks import ArithmeticTask, Target, eval_sets, success_threshold
from nalu_jax.units import make_unit


def _abc(sums):
    return sums[..., 0] * sums[..., 1] + sums[..., 2]


ABC = Target("a·b + c", _abc, subsets=3)


def test_a_registered_experiment_is_selected_by_name_and_by_module_name(monkeypatch):
    mine = arithmetic.static_task("abc_test", ABC)
    module = types.ModuleType("my_experiments")
    module.MINE = dataclasses.replace(mine, name="mine_by_attr")
    monkeypatch.setitem(sys.modules, "my_experiments", module)
    try:
        assert register_experiment(mine) == "abc_test"
        assert register_experiment(mine) == "abc_test"  # the same record again: a no-op
        with pytest.raises(ValueError, match="'abc_test' is already registered"):
            register_experiment(dataclasses.replace(mine, sweepable=("lr",)))
        config = load_config("arithmetic", "smoke")
        config.experiment = "abc_test"
        assert experiment_of(config) is mine
        config.experiment = "my_experiments:MINE"  # imported, then registered
        assert experiment_of(config) is module.MINE is EXPERIMENTS["mine_by_attr"]
        config.experiment = "no_such_module:x"
        with pytest.raises(ConfigError, match="'no_such_module' cannot be imported"):
            experiment_of(config)
    finally:
        for name in ("abc_test", "mine_by_attr"):
            EXPERIMENTS.pop(name, None)


def test_a_custom_target_with_the_librarys_evaluation_sets_is_judged_against_it():
    """make_recipe with a target_fn of one's own and the range-free evaluation sets: the
    validation and test MSEs are against that target (a·b + c), not the task's op (×)."""
    config = load_config("arithmetic", "model=nmu,op=mul,smoke")
    config.task.num_subsets = 3
    task = ArithmeticTask("mul", num_subsets=3)
    data = eval_sets.evaluation_inputs(task, 64)
    factory = lambda rngs: ArithmeticNetwork(
        [make_unit("nau", 100, 1, rngs=rngs)]
    )  # a fixed network: its error against either target is known
    target_fn = lambda x, masks: _abc(jnp.einsum("bn,kn->bk", x, masks))
    recipe = arithmetic.make_recipe(
        config, task, factory, ("nau",), input_shape=(100,), target_fn=target_fn, eval_data=data
    )
    offset = 3
    aux = arithmetic.SeedExtras(
        offset=jnp.int32(offset),
        last_valid_mse=jnp.float32(0),
        loss_hist=jnp.zeros((1,)),
        hist_count=jnp.int32(0),
        reinits=jnp.int32(0),
    )
    state = types.SimpleNamespace(aux=aux)
    hp = types.SimpleNamespace(interpolation_range=None, extrapolation_range=None, layout=None)
    model = factory(nnx.Rngs(0))
    _, metrics = recipe.evaluate(model, state, hp, data)

    # independently, in float64: inputs lo + w·u, subsets of 25 at starts 0, 13, 26 (+ offset)
    w = np.asarray(model.layers[0].w[...], np.float64)[:, 0]
    for name, (lo, hi), got in (
        ("valid", (1.0, 2.0), metrics.valid_mse),
        ("test", (2.0, 6.0), metrics.test_mse),
    ):
        x = lo + (hi - lo) * np.asarray(data[f"{name}_u"], np.float64)
        a, b, c = (x[:, offset + s : offset + s + 25].sum(axis=1) for s in (0, 13, 26))
        want = np.mean((x @ w - (a * b + c)) ** 2)
        np.testing.assert_allclose(float(got), want, rtol=1e-4)
        assert abs(np.mean((x @ w - a * b * c) ** 2) - want) > 1e-2 * want  # tells them apart


def test_a_target_of_ones_own_gets_the_epsilon_perturbation_threshold():
    """A Target computing a built-in op gives that op's threshold (closed-form changes there,
    float64 changes here); a·b + c lies between add's and mul's on three subsets."""
    kw = dict(num_samples=20_000)
    for op, fn in (("mul", lambda s: s[..., 0] * s[..., 1]), ("add", lambda s: s.sum(-1))):
        mine = success_threshold(ArithmeticTask(Target(op + "!", fn, subsets=2)), **kw)
        np.testing.assert_allclose(mine, success_threshold(ArithmeticTask(op), **kw), rtol=1e-4)
    abc = success_threshold(ArithmeticTask(ABC, num_subsets=3), **kw)
    add3 = success_threshold(ArithmeticTask("add", num_subsets=3), **kw)
    mul3 = success_threshold(ArithmeticTask("mul", num_subsets=3), **kw)
    assert add3 < abc < mul3
    # another function under the same label never reuses the cached value
    other = Target("a·b + c", lambda s: s[..., 0] * s[..., 1] - s[..., 2], subsets=3)
    assert success_threshold(ArithmeticTask(other, num_subsets=3), **kw) != abc


def test_a_target_needs_its_subsets():
    with pytest.raises(ValueError, match="num_subsets must be >= 3 for op 'a·b \\+ c'"):
        ArithmeticTask(ABC, num_subsets=2)
    with pytest.raises(ValueError, match="subsets must be an integer >= 1"):
        Target("x", _abc, subsets=0)


def _own_config(**model):
    c = static_task_config("abc_cfg", units=("nau", "nmu", "nau"), widths=(3, 2), reg_scale=1.0)
    c.task.num_subsets = 3
    for k, v in model.items():
        c.model[k] = v
    return c


def test_a_stack_of_units_is_validated_in_one_sentence():
    experiment = arithmetic.static_task("abc_cfg", ABC)
    experiment.validate(_own_config())
    factory, names = stack_factory(("nau", "nmu", "nau"), 100, widths=(3, 2))
    shapes = [layer.w[...].shape for layer in factory(nnx.Rngs(0)).layers]
    assert names == ("nau", "nmu", "nau") and shapes == [(100, 3), (3, 2), (2, 1)]
    with pytest.raises(ConfigError, match=r"model.widths must be 2 positive integers"):
        experiment.validate(_own_config(widths=(3,)))
    with pytest.raises(ConfigError, match=r"model.units must be units of .* got 'nmv'"):
        experiment.validate(_own_config(units=("nau", "nmv", "nau")))
    c = _own_config()
    c.train.reg_scale = None
    with pytest.raises(ConfigError, match="train.reg_scale is required with model.units"):
        experiment.validate(c)
    c = _own_config()
    c.task.num_subsets = 2
    with pytest.raises(ConfigError, match="task.num_subsets must be >= 3"):
        experiment.validate(c)


def test_models_of_an_experiment_without_a_model_name_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        cli.model_configs(load_config("gridworld", "smoke"), ["nmu", "nau"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "experiment 'gridworld' does not have" in err and err.count("\n") == 1
    # a stack of units: each name of --models is a stack, validated before anything runs
    register_experiment(arithmetic.static_task("abc_cfg", ABC))
    try:
        configs = cli.model_configs(_own_config(), ["nau-nmu-nau", "nac_add-nac_mul-nau"])
        assert [c.model.units for c in configs] == [
            ("nau", "nmu", "nau"),
            ("nac_add", "nac_mul", "nau"),
        ]
        with pytest.raises(SystemExit):
            cli.model_configs(_own_config(), ["nau-nmu"])
        assert "--models 'nau-nmu': model.widths" in capsys.readouterr().err
    finally:
        EXPERIMENTS.pop("abc_cfg")


def test_check_identity_has_a_case_for_every_built_in_experiment():
    from tools.check_identity import CASES

    covered = set()
    for args, _ in CASES.values():
        path, _, arg = args[0].removeprefix("--config=").partition(":")
        covered.add(load_config(os.path.join(ROOT, path), arg or None).experiment)
    builtin = {n for n, e in EXPERIMENTS.items() if e.population.__module__.startswith("nalu_jax")}
    assert builtin <= covered, sorted(builtin - covered)
