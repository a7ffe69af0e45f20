"""The experiment contract: one ``Experiment`` record per experiment, hooks with defaults."""

import dataclasses

import pytest
from conftest import load_config

from nalu_jax.config import ConfigError
from nalu_jax.engine import sweep
from nalu_jax.engine.run import run
from nalu_jax.experiments import (
    DEFAULT_EXPERIMENT,
    EXPERIMENTS,
    Experiment,
    experiment_of,
    sequential_mnist,
)
from nalu_jax.experiments.contract import one_program, unchanged


def test_registry_holds_one_experiment_per_name():
    assert DEFAULT_EXPERIMENT in EXPERIMENTS
    for name, experiment in EXPERIMENTS.items():
        assert isinstance(experiment, Experiment) and experiment.name == name
    # the hooks an experiment leaves out are the defaults; those it gives are its own
    assert EXPERIMENTS["arithmetic"].programs is one_program
    assert EXPERIMENTS["identity"].programs is not one_program
    assert EXPERIMENTS["sequential_mnist"].prepare is sequential_mnist.prepare
    assert EXPERIMENTS["gridworld"].prepare is unchanged


def test_experiment_of_a_config():
    config = load_config("recurrent", "smoke")
    assert experiment_of(config) is EXPERIMENTS["recurrent"]
    with config.unlocked():
        del config["experiment"]
    assert experiment_of(config) is EXPERIMENTS[DEFAULT_EXPERIMENT]
    config.experiment = "chess"
    with pytest.raises(ConfigError, match="experiment 'chess' is not registered.*register_exp"):
        experiment_of(config)


def test_a_hook_that_is_not_callable_is_refused():
    good = EXPERIMENTS["arithmetic"]
    with pytest.raises(TypeError, match="write_results"):
        dataclasses.replace(good, write_results=None)
    with pytest.raises(TypeError, match="sweepable"):
        dataclasses.replace(good, sweepable=["lr"])


@pytest.mark.parametrize(
    ("field", "value", "sentence"),
    [("sweep.lr", (0.1, -1.0),
      "sweep setting lr=-1.0: train.lr must be a finite positive number, got -1.0."),
     ("sweep.lambda_z", (1.0, -2.0),
      "sweep setting lambda_z=-2.0: train.lambda_z must be a finite number >= 0, got -2.0."),
     # a value the flag parser could not read arrives as text: refused, not a traceback
     ("sweep.reg_scale", ("(nan,)",),
      "sweep setting reg_scale=(nan,): train.reg_scale must be a finite number >= 0, "
      "got '(nan,)'."),
     ("sweep.threshold_epsilon", (1e-5, 0.0),
      "sweep setting threshold_epsilon=0.0: task.threshold_epsilon must be a finite positive "
      "number (None: the task's default), got 0.0."),
     ("train.reg_scale", -1.0, "train.reg_scale must be a finite number >= 0, got -1.0."),
     ("train.reg_start", -5, "train.reg_start must be a finite number >= 0, got -5.0."),
     ("task.threshold_samples", 0, "task.threshold_samples must be an integer >= 1, got 0."),
     ("task.threshold_epsilon", float("nan"),
      "task.threshold_epsilon must be a finite positive number (None: the task's default), "
      "got nan.")],
)  # fmt: skip
def test_each_sweep_setting_is_checked_as_that_value_set_alone(field, value, sentence, tmp_path):
    config = load_config("arithmetic", "smoke")
    section, name = field.split(".")
    with config.unlocked():
        config[section][name] = value
    experiment = experiment_of(config)
    with pytest.raises(ConfigError) as e:
        sweep.validate(experiment, config)
    assert str(e.value) == sentence
    with pytest.raises(ConfigError):  # a run checks the same before it claims its workdir
        run(experiment, config, str(tmp_path / "w"), progress=False)
    assert not (tmp_path / "w").exists()


def test_a_valid_sweep_passes_and_the_recurrent_task_checks_its_op_and_threshold():
    config = load_config("arithmetic", "smoke")
    config.sweep.lr = (0.1, 0.01)
    config.sweep.reg_scale = (0.0, 10.0)
    sweep.validate(experiment_of(config), config)  # 4 settings, every one valid
    # a config file of one's own may hold text where a sweep's values go
    with pytest.raises(ConfigError, match=r"sweep.lr must be a tuple of values, e.g. \(0.1, "):
        sweep.swept({"sweep": {"lr": "0.1,0.2"}})
    recurrent = load_config("recurrent", "smoke")
    recurrent.task.threshold_samples = 0
    with pytest.raises(ConfigError, match="task.threshold_samples must be an integer >= 1"):
        sweep.validate(experiment_of(recurrent), recurrent)
    recurrent = load_config("recurrent", "op=pow,smoke")  # was a KeyError picking the readout
    with pytest.raises(ConfigError, match=r"task.op must be one of \['add', 'sub', .*got 'pow'"):
        sweep.validate(experiment_of(recurrent), recurrent)


def test_evaluation_sets_that_cannot_fit_are_refused_before_they_are_drawn(monkeypatch):
    from nalu_jax.experiments import arithmetic

    monkeypatch.setattr(arithmetic, "available_memory", lambda: 2**30)  # a host with 1 GiB free
    static = load_config("arithmetic", "smoke")  # 100 inputs: 800 bytes per example
    static.eval_size = 1_000_000  # 0.75 GiB: fits under 90% of 1 GiB
    sweep.validate(experiment_of(static), static)
    static.eval_size = 2_000_000  # 1.5 GiB: drawing it would abort the process (XLA)
    with pytest.raises(ConfigError) as e:
        sweep.validate(experiment_of(static), static)
    assert str(e.value) == (
        "eval_size=2000000 needs at least 1.5 GiB for its evaluation sets, more than the "
        "1.0 GiB this host has available."
    )
    recurrent = load_config("recurrent", "smoke")  # rows: the train and test lengths
    tc = recurrent.task
    recurrent.eval_size = 2**30 // (4 * (tc.train_length + tc.test_length) * tc.input_size)
    with pytest.raises(ConfigError, match=r"eval_size=\d+ needs at least 1.0 GiB"):
        sweep.validate(experiment_of(recurrent), recurrent)


class Stop(Exception):
    pass


def test_run_calls_the_default_hooks(tmp_path):
    """An experiment with only the required hooks: one program, the whole config."""
    config = load_config("arithmetic", "smoke")
    seen = []

    def population(cfg, settings):
        seen.append((cfg.to_dict(), [s.name for s in settings]))
        raise Stop

    minimal = Experiment(
        name="minimal",
        validate=lambda c: None,
        sweepable=("lr",),
        population=population,
        write_results=lambda w, c, o: {},
        format_summary=str,
    )
    with pytest.raises(Stop):
        run(minimal, config, str(tmp_path / "w"), progress=False)
    assert seen == [(config.to_dict(), [""])]
    assert not (tmp_path / "w").exists()  # populations are built before the workdir is claimed


def test_sequential_mnist_prepare_returns_a_new_population(tmp_path):
    config = load_config("sequential_mnist", "task=sum,model=nau,smoke")
    config.reference.thresholds = tuple(10.0 * n for n in config.task.test_lengths)
    experiment = EXPERIMENTS["sequential_mnist"]
    pop = experiment.population(config, sweep.expand(config, experiment.sweepable))
    before = [dict(c) for c in pop.contexts]
    ready = experiment.prepare(config, str(tmp_path), pop, False)
    assert pop.contexts == before and "thresholds" not in pop.contexts[0]  # left as it was
    assert list(ready.contexts[0]["thresholds"]) == list(config.reference.thresholds)
    assert ready.trainer is pop.trainer
