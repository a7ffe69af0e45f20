"""The static arithmetic task and the single-module benchmark (docs/protocols.md,
"Static arithmetic" and "Single-module benchmark").

    python -m nalu_jax.main --config=configs/arithmetic.py:model=nmu,op=mul --workdir=runs/x

What this experiment supplies to the core: the task (``build_task``), the network
(``build_model_factory``), the loss on a fresh batch from the task's generator with each
seed's subset offset, the evaluation on fixed range-free sets (``nalu_jax.tasks.eval_sets``),
iNALU's gated regulariser and stall re-initialisation (declared by the unit), and a success
threshold per sweep setting (ε-perturbed, simulated and cached). Judgement and files:
``arithmetic_report.write_population``. ``make_recipe`` is shared with the recurrent task.

The family is open: ``static_task(name, Target(...))`` is this experiment with a target of
one's own (any function of the subset sums, e.g. a·b + c) and ``model.units`` /
``model.widths`` any stack of registered units (docs/own_experiment.md).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from nalu_jax import rng as rng_lib
from nalu_jax import tasks as task_lib
from nalu_jax.config import SWEEPABLE as ALL_SWEEPABLE
from nalu_jax.config import (
    ConfigError,
    as_tuples,
    finite_number,
    positive_int,
    prefix,
    validate_common,
)
from nalu_jax.engine import sweep, train
from nalu_jax.engine.run import Outcome, Population, available_memory
from nalu_jax.experiments import arithmetic_report as report
from nalu_jax.experiments.contract import Experiment
from nalu_jax.models.arithmetic import (
    MODELS,
    ArithmeticNetwork,
    model_factory,
    resolve_layers,
    stack_factory,
)
from nalu_jax.tasks import eval_sets
from nalu_jax.tasks import single_module as sm
from nalu_jax.tasks.thresholds import success_threshold
from nalu_jax.units import UNITS, training_needs

INALU_HISTORY = 5000  # iNALU: training losses kept for the stall test
INALU_CHECK_EVERY = 10  # … tested every this many steps
#: batches of at most this many elements per chunk of steps (4 MiB a seed) are drawn ahead
DRAW_AHEAD_ELEMENTS = 1 << 20
RANGE_FIELDS = ("range_index", "interpolation_range", "extrapolation_range")
#: fields that move the subsets (one input size, the same K): swept, the layout is traced
LAYOUT_FIELDS = ("subset_ratio", "overlap_ratio")
SWEEPABLE = tuple(ALL_SWEEPABLE)  # every traced hyperparameter, ranges and layouts included


@struct.dataclass
class SeedExtras:
    """The arithmetic task's per-seed state beside the core's (``TrainState.aux``)."""

    offset: jax.Array  # int32 [] subset offset of this seed
    last_valid_mse: jax.Array  # float [] latest interpolation MSE (iNALU regulariser gate)
    loss_hist: jax.Array  # float [H] iNALU stall test ring buffer (H = 1, unused, otherwise)
    hist_count: jax.Array  # int32 [] losses stored since the last reinitialisation
    reinits: jax.Array  # int32 [] iNALU reinitialisations so far


class EvalMetrics(NamedTuple):
    valid_mse: jax.Array  # [] interpolation MSE on the fixed validation set
    test_mse: jax.Array  # [] extrapolation MSE on the fixed test set
    sparsity: jax.Array  # [] sparsity error of the model


def validate(config) -> None:
    validate_fields(config)
    if config.task.kind not in ("arithmetic", "single_module"):
        raise ConfigError(
            f"task.kind must be 'arithmetic' or 'single_module' for experiment 'arithmetic', "
            f"got {config.task.kind!r} (the recurrent task is experiment 'recurrent')."
        )
    check_evaluation_memory(config, rows=2)  # the validation and test sets' draws
    validate_model(config)


def check_evaluation_memory(config, rows: int) -> None:
    """Refuse an ``eval_size`` whose evaluation sets cannot be built in this host's memory,
    before they are (they are drawn while the program is built, before ``engine.run``'s memory
    check: XLA aborts the process where they do not fit). ``rows``: rows of ``input_size``
    float32 draws per evaluation example (2 for the static task's two sets; the recurrent
    task's sequence lengths); the sets' subset sums only add to this lower bound."""
    sizes = (config.eval_size, rows, config.task.input_size)
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        return  # refused by the fields' own checks
    need = 4 * math.prod(sizes)
    have = available_memory()
    if need > 0.9 * have:
        raise ConfigError(
            f"eval_size={config.eval_size} needs at least {need / 2**30:.1f} GiB for its "
            f"evaluation sets, more than the {have / 2**30:.1f} GiB this host has available."
        )


def validate_model(config) -> None:
    """The model's unit names (a ``"module:Class"`` name is imported here) and, for a single
    unit, its declared λ̂: checked before anything trains."""
    m = config.model
    if "units" in m:  # a stack of units of one's choosing
        build_model_factory(config, build_task(config))
        return
    try:
        resolve_layers(m.name, single_unit=bool(m.single_unit), first_layer=m.first_layer)
        if m.single_unit and config.train.get("reg_scale") is None:
            UNITS.spec(m.name).reg_scale_for(config.task.op)
    except ValueError as e:
        raise ConfigError(prefix("model", str(e))) from None


def validate_fields(config) -> None:
    """The run and training fields of the arithmetic family (static and recurrent tasks)."""
    validate_common(config, positive=(("eval_size", config.eval_size),))
    if config.train.reg_schedule not in ("linear", "exp"):
        raise ConfigError(
            f"train.reg_schedule must be 'linear' or 'exp', got {config.train.reg_schedule!r}."
        )
    select_from = config.task.get("select_from_step", 0)
    if (isinstance(select_from, bool) or not isinstance(select_from, int) or select_from < 0
            or select_from > config.num_steps):  # fmt: skip
        raise ConfigError(
            f"task.select_from_step must be an integer from 0 to num_steps={config.num_steps} "
            f"(the evaluations the best step is chosen among), got {select_from!r}."
        )
    if config.train.sampler not in ("hash", "threefry"):
        raise ConfigError(
            f"train.sampler must be 'hash' or 'threefry', got {config.train.sampler!r}."
        )
    # the success threshold's simulation (tasks.thresholds): checked here, not when it runs
    positive_int("task.threshold_samples", config.task.threshold_samples)
    if config.task.threshold_epsilon is not None:
        finite_number("task.threshold_epsilon", config.task.threshold_epsilon,
                      note=" (None: the task's default)")  # fmt: skip


def build_task(config, target: task_lib.Target | None = None) -> task_lib.ArithmeticTask:
    """The ``ArithmeticTask`` of ``config.task`` (single-module ranges by ``range_index``);
    with ``target`` (an experiment's own), that is its op and ``task.op`` is not read."""
    tc = config.task
    fields = dict(
        op=target if target is not None else tc.op,
        input_size=tc.input_size,
        subset_ratio=tc.subset_ratio,
        overlap_ratio=tc.overlap_ratio,
        num_subsets=tc.num_subsets,
        simple=bool(tc.simple),
        interpolation_range=as_tuples(tc.interpolation_range),
        extrapolation_range=as_tuples(tc.extrapolation_range),
    )
    for name in ("interpolation_range", "extrapolation_range"):
        _check_numbers(f"task.{name}", fields[name])
    single = tc.get("kind") == "single_module"
    if not single and tc.get("range_index") is not None:
        raise ConfigError(
            "task.range_index applies only to task.kind 'single_module'; set "
            "task.interpolation_range and task.extrapolation_range instead."
        )
    if single and tc.op not in sm.SINGLE_MODULE_OPS:
        raise ConfigError(
            f"task.op must be one of {sorted(sm.SINGLE_MODULE_OPS)} for the single-module "
            f"benchmark, got {tc.op!r}."
        )
    try:
        if single:
            base = sm.single_module_task(tc.op, tc.range_index, tc.input_size)
            fields.update(subset_ratio=base.subset_ratio, overlap_ratio=0.0, num_subsets=2)
            for name in ("interpolation_range", "extrapolation_range"):
                if fields[name] is None:
                    fields[name] = getattr(base, name)
        return task_lib.ArithmeticTask(**fields)
    except ValueError as e:
        raise ConfigError(prefix("task", str(e))) from None


def _check_numbers(field: str, rng) -> None:
    """A range holds finite numbers (a command-line value that did not parse stays text)."""
    if rng is None:
        return
    flat = [v for part in rng for v in (part if isinstance(part, tuple) else (part,))]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in flat) or not all(
        math.isfinite(v) for v in flat
    ):
        text = rng[0] if len(rng) == 1 and isinstance(rng[0], str) else rng
        raise ConfigError(
            f"{field} must be finite numbers (lo, hi) or ((lo1, hi1), (lo2, hi2)), got {text!r}."
        )


def build_model_factory(config, task):
    """``(rngs -> network, unit names per layer)`` for ``config.model`` on ``task``: a model of
    ``MODELS`` by ``model.name``, or the units ``model.units`` with the hidden widths
    ``model.widths`` (one fewer) and each layer's options ``model.layer_options``."""
    m = config.model
    if "units" in m:
        try:
            options = m.get("layer_options") or ()
            return stack_factory(
                tuple(m.units),
                task.input_size,
                widths=tuple(m.widths),
                layer_options=tuple(dict(o) for o in options) or None,
            )
        except (ValueError, TypeError) as e:
            raise ConfigError(prefix("model", str(e))) from None
    try:
        names = resolve_layers(m.name, single_unit=bool(m.single_unit), first_layer=m.first_layer)
        options = [dict(m.layer1_options), dict(m.layer2_options)][: len(names)]
        factory = model_factory(
            m.name,
            task.input_size,
            hidden_size=m.hidden_size,
            single_unit=bool(m.single_unit),
            first_layer=m.first_layer,
            layer_options=tuple(options),
        )
    except (ValueError, TypeError) as e:
        raise ConfigError(prefix("model", str(e))) from None
    return factory, names


def build_hparams(config, names) -> train.HParams:
    """``config.train`` over the model's defaults (``MODELS``; a single unit: the λ̂ its
    registration declares) and the units' own (NPU: lr 5e-3 and β by op)."""
    m, op = config.model, config.task.get("op")
    spec = None if "units" in m or m.single_unit else MODELS.get(m.name)
    if spec is not None:
        reg_scale = spec.reg_scale
    elif config.train.get("reg_scale") is not None:
        reg_scale = 0.0  # train.reg_scale is used
    elif "units" in m:  # no model table entry: λ̂ is the config's, never a silent 0
        raise ConfigError(
            "train.reg_scale is required with model.units: the λ̂ of the units' R_sparse "
            "(0 for none)."
        )
    else:  # the unit's own declaration; an undeclared λ̂ is an error, never a silent 0
        try:
            reg_scale = UNITS.spec(m.name).reg_scale_for(op)
        except ValueError as e:
            raise ConfigError(str(e)) from None
    return train.build_hparams(
        config.train,
        training_needs(names),
        reg_scale=reg_scale,
        reg_start=spec.reg_start if spec else 0.0,
        reg_end=spec.reg_end if spec else 1.0,
        beta=(1e-9, 1e-7) if op == "div" else (1e-7, 1e-5),
    )


def draws_batch_ahead(config, input_shape) -> bool:
    """Whether the training batches are drawn whole with the step's other randomness (their
    [0, 1) values, before the steps' scan, ``train.MATERIAL_STEPS`` steps at a time:
    ``rng.units``) rather than as the sampler's two words: with the hash sampler, when an
    ``eval_every``-step period's batches hold at most ``DRAW_AHEAD_ELEMENTS`` (the
    single-module task, not the 100-input one). The same values
    either way; XLA:CPU may fuse the step differently, so a unit with exp/log (NALU, G-NALU)
    differs in its last bits (WORKSPACE at bcf7708, "Performance: the single-module step")."""
    elements = int(config.train.batch_size) * math.prod(input_shape) * int(config.eval_every)
    return str(config.train.sampler) == "hash" and elements <= DRAW_AHEAD_ELEMENTS


def make_recipe(config, task, factory, names, *, input_shape, eval_data, target_fn=None):
    """The ``Recipe`` of a model trained on fresh inputs from ``task``'s generator.

    Training and evaluation are judged against one target, whatever the evaluation sets:

    Args:
      input_shape: one sample's shape: ``(n,)``, or ``(T, n)`` for sequences.
      eval_data: ``eval_sets.evaluation_inputs(...)``, or ``{"valid": x, "test": x}`` inputs
        whose targets ``target_fn`` gives.
      target_fn: ``(x [batch, *input_shape], masks [K, n]) -> [batch]`` targets; ``None``:
        the task's own (``task.op``, a built-in op or a ``Target``). With the range-free sets
        the task's own target is taken from their stored subset sums; another ``target_fn``
        is applied to their inputs.
    """
    own_target = target_fn is None
    exact = bool(config.task.get("exact_targets", False))
    traced = any(config.sweep.get(f) is not None for f in LAYOUT_FIELDS)
    if exact and (not own_target or not isinstance(task.op, str) or traced):
        raise ConfigError(
            "task.exact_targets applies to the static task's built-in ops with fixed subsets "
            "only (no sweep of subset_ratio or overlap_ratio); leave it False."
        )
    if own_target:
        target_fn = functools.partial(task_lib.exact_target if exact else task_lib.target, task)
    needs = training_needs(names)
    batch_size = int(config.train.batch_size)
    schedule, with_z = str(config.train.reg_schedule), train.uses_z(config)
    hist_len = INALU_HISTORY if needs.stall_reinit and config.train.inalu_reinit else 0
    sampler = str(config.train.sampler)
    tx = train.make_optimizer(config.train, needs)

    def init_aux(seed_key, hp):
        init_key, offset_key, train_key = jax.random.split(seed_key, 3)
        return (
            init_key,
            train_key,
            SeedExtras(
                offset=task_lib.sample_offset(task, offset_key, hp.layout).astype(jnp.int32),
                last_valid_mse=jnp.full((), jnp.inf, jnp.float32),
                # unused (length 1) without iNALU: zero-size arrays lose their seed sharding
                loss_hist=jnp.zeros((max(hist_len, 1),), jnp.float32),
                hist_count=jnp.zeros((), jnp.int32),
                reinits=jnp.zeros((), jnp.int32),
            ),
        )

    # a unit's training noise drawn with the step's other randomness (ArithmeticNetwork)
    layer_noise = (
        ArithmeticNetwork.layer_noise(factory, (batch_size, *input_shape)) if needs.noise else None
    )

    batch_shape = (batch_size, *input_shape)
    draw_ahead = draws_batch_ahead(config, input_shape)

    def step_randomness(key):
        """The step's sampler material and noise key, or its layers' noise drawn from that
        key (derived once per step, before the chunk's scan: ``Recipe``)."""
        data_key, noise_key = jax.random.split(key)
        noise = noise_key if layer_noise is None else layer_noise(noise_key)
        material = rng_lib.derive(data_key, sampler)
        return (rng_lib.units(material, batch_shape) if draw_ahead else material), noise

    def loss(model, hp, state, randomness, data):
        data_key, noise_key = randomness
        rng = task.interpolation_range if hp.interpolation_range is None else hp.interpolation_range
        x = task_lib.sample_inputs(data_key, (batch_size, *input_shape), rng, sampler=sampler)
        t = target_fn(x, task_lib.subset_masks(task, state.aux.offset, hp.layout))
        y, regs = model.apply_with_regularizers(
            x, training=True, key=noise_key if needs.noise else None, step=state.step
        )
        mse = jnp.mean((y[:, 0] - t) ** 2)
        gate_on = None
        if needs.gated_regularizer:
            gate_on = (state.step > train.INALU_REG_AFTER) & (state.aux.last_valid_mse < 1.0)
        return train.regularized_loss(
            mse, regs, hp, state.step, schedule=schedule, with_z=with_z, gate_on=gate_on
        ), mse

    def stall_reinit(state, params, opt_state, mse, due):
        """iNALU's per-seed stall test; a ``where``, never a Python branch on a seed's values.
        The loss history is recorded every step; the test (a pass over the history, a fresh
        draw and its optimiser state) runs only on the steps it can fire, every
        ``INALU_CHECK_EVERY``-th (``due``: the same for all seeds, so a real branch)."""
        aux = state.aux
        hist = aux.loss_hist.at[aux.hist_count % hist_len].set(mse.astype(aux.loss_hist.dtype))
        count = aux.hist_count + 1

        def check(operands):
            params, opt_state = operands
            ordered = jnp.roll(hist, -(count % hist_len))  # oldest first once the buffer is full
            first, second = ordered[: hist_len // 2], ordered[hist_len // 2 :]
            stalled = (jnp.mean(first) <= jnp.mean(second) + jnp.std(second)) & (
                jnp.mean(second) > 1.0
            )
            redo = (state.step % INALU_CHECK_EVERY == 0) & (count > hist_len) & stalled
            seed_init_key = jax.random.fold_in(jax.random.wrap_key_data(state.key), 0x1A1)
            fresh = train.init_params(factory, jax.random.fold_in(seed_init_key, aux.reinits + 1))
            params = train.tree_where(redo, fresh, params)
            opt_state = train.tree_where(redo, tx.init(fresh), opt_state)
            return (
                params,
                opt_state,
                jnp.where(redo, 0, count),
                aux.reinits + redo.astype(jnp.int32),
            )

        def skip(operands):
            return (*operands, count, aux.reinits)

        if due is True:  # no phase known: test every step
            params, opt_state, hist_count, reinits = check((params, opt_state))
        else:
            params, opt_state, hist_count, reinits = jax.lax.cond(
                due, check, skip, (params, opt_state)
            )
        return (
            params,
            opt_state,
            aux.replace(loss_hist=hist, hist_count=hist_count, reinits=reinits),
        )

    def evaluate(model, state, hp, data):
        """Interpolation/extrapolation MSE on the fixed sets and the sparsity error."""
        offset, layout = state.aux.offset, hp.layout
        masks = task_lib.subset_masks(task, offset, layout)
        ranges = {
            "valid": _or(hp.interpolation_range, task.interpolation_range),
            "test": _or(hp.extrapolation_range, task.extrapolation_range),
        }

        def mse(name):
            if f"{name}_u" in data:  # range-free draws
                x, sums = eval_sets.range_inputs(task, data, name, ranges[name], offset, layout)
                t = task_lib.target_from_sums(task.op, sums) if own_target else target_fn(x, masks)
            else:
                x = data[name]
                t = target_fn(x, masks)
            return jnp.mean((model(x)[:, 0] - t) ** 2)

        metrics = EvalMetrics(mse("valid"), mse("test"), model.sparsity_error())
        valid = metrics.valid_mse.astype(
            state.aux.last_valid_mse.dtype
        )  # the state keeps its dtype
        return state.aux.replace(last_valid_mse=valid), metrics

    return train.Recipe(
        factory=factory,
        loss=loss,
        evaluate=evaluate,
        eval_data=eval_data,
        init_aux=init_aux,
        after_update=stall_reinit if hist_len else None,
        after_update_every=INALU_CHECK_EVERY,
        step_randomness=step_randomness,
        init_reads_hparams=True,
    )


def _or(value, default):
    return default if value is None else value


def trainer_for(config, task=None, layouts=None) -> train.Trainer:
    """The per-seed ``Trainer`` of an arithmetic or single-module config; ``layouts``: the
    tasks of a program whose subsets are traced (``HParams.layout``), whose evaluation sets
    then hold the subset sums of each."""
    task = task or build_task(config)
    factory, names = build_model_factory(config, task)
    recipe = make_recipe(
        config,
        task,
        factory,
        names,
        input_shape=(task.input_size,),
        eval_data=eval_sets.evaluation_inputs(task, int(config.eval_size), layouts),
    )
    return train.make_train(recipe, config, build_hparams(config, names), training_needs(names))


def threshold_settings(config) -> dict:
    """Success-threshold kind, ε and sample count for ``config.task``."""
    single = config.task.get("kind") == "single_module"
    eps = config.task.threshold_epsilon
    return dict(
        kind="single_module" if single else "arithmetic",
        epsilon=eps if eps is not None else (1e-4 if single else 1e-5),
        num_samples=int(config.task.threshold_samples),
    )


def population(config, settings, make=trainer_for, threshold=None, target=None) -> Population:
    """One program for every setting: per-setting hparams (with traced ranges when a range is
    swept, a traced subset layout when the subset or overlap ratio is) and thresholds;
    ``make(config, task)`` builds a setting's trainer (``make(config, task, layouts=tasks)``
    the program of traced layouts), ``threshold`` ``(config, task) -> float`` its threshold
    (default: the static task's, simulated); ``target``: an experiment's own (``static_task``)."""
    tasks = [build_task(s.config, target) for s in settings]
    names = {k for s in settings for k in s.values}
    layouts = bool(set(LAYOUT_FIELDS) & names)
    sweep.check_static(settings, tasks, traced_layout=layouts)
    trainers = [make(s.config, t) for s, t in zip(settings, tasks, strict=True)]
    if threshold is None:
        threshold = lambda c, t: success_threshold(t, **threshold_settings(c))
    thresholds = [threshold(s.config, t) for s, t in zip(settings, tasks, strict=True)]
    hparams = [t.hparams for t in trainers]
    program = trainers[0]
    if set(RANGE_FIELDS) & names or layouts:
        c = settings[0].config
        if set(RANGE_FIELDS) & names:  # ranges become leaves
            ranges = sweep.common_ranges(tasks)
            c = sweep.with_ranges(c, ranges[0])
            hparams = [
                hp.replace(**{k: sweep.range_leaves(v) for k, v in r.items()})
                for hp, r in zip(hparams, ranges, strict=True)
            ]
        if layouts:  # the subsets become leaves; the evaluation sets hold each one's sums
            distinct = list(dict.fromkeys((t.subset_starts, t.subset_sizes) for t in tasks))
            index = [distinct.index((t.subset_starts, t.subset_sizes)) for t in tasks]
            firsts = [tasks[index.index(i)] for i in range(len(distinct))]
            program = make(c, build_task(c, target), layouts=firsts)
            hparams = [
                hp.replace(layout=task_lib.layout(t, i))
                for hp, t, i in zip(hparams, tasks, index, strict=True)
            ]
        else:
            program = make(c, build_task(c, target))
    contexts = [{"task": t, "threshold": th} for t, th in zip(tasks, thresholds, strict=True)]
    return Population(
        program,
        hparams,
        contexts,
        solved=lambda run_setting: _solved(thresholds, run_setting),
        metrics_jsonl=lambda h, done, d, first: report.metrics_lines(
            h, done, thresholds[0], d, first
        ),
    )


def _solved(thresholds, run_setting):
    """``(history, num_done) -> bool [n]``: runs solved if the run ended now (incremental:
    each evaluation row is read once)."""
    tracker = report.SolvedTracker(len(run_setting), [thresholds[h] for h in run_setting])

    def solved(history, done):
        while tracker.rows < done:
            tracker.update(history["valid_mse"][tracker.rows], history["test_mse"][tracker.rows])
        return tracker.best_test < tracker.threshold

    return solved


def write_results(workdir, config, outcome: Outcome) -> dict:
    """Judge every run against its setting's threshold and write the files (``report``)."""
    return report.write_population(
        workdir, config, outcome.settings[0], outcome.populations[""].contexts[0],
        outcome.run_seed, outcome.results[""], train.num_evaluations(config),
    )  # fmt: skip


def format_summary(summary: dict) -> str:
    if "settings" in summary:
        return report.combined_markdown(summary["settings"])
    return report.summary_markdown(summary)


def merge_summary(summary: dict, rows: list) -> dict:
    """``merge_summary`` of the static family (and the recurrent task): the statistics
    recomputed from the union's ``seeds.csv`` rows with the same judgement and threshold; the
    rest of ``summary`` (the task, the model, the protocol) as the first batch's."""
    from nalu_jax.reporting import metrics

    merged = dict(summary)
    merged.update(metrics.summarize(metrics.judgement_from_rows(rows), summary["threshold"]))
    return merged


def validate_own(config, target: task_lib.Target) -> None:
    """``validate`` of a ``static_task``: the run and training fields, the task with the
    experiment's target (``task.op`` is not read) and the network, λ̂ included."""
    validate_fields(config)
    task = build_task(config, target)
    if "units" not in config.model:
        validate_model(config)
    _, names = build_model_factory(config, task)
    build_hparams(config, names)


def static_task(name: str, target: task_lib.Target, *, sweepable=SWEEPABLE) -> Experiment:
    """The static arithmetic experiment with a target of one's own, as experiment ``name``
    (register it: ``nalu_jax.register_experiment``). Its config is ``configs``'s
    ``arithmetic_config()`` without ``task.op`` (docs/own_experiment.md); the threshold is
    ``target``'s by the ε-perturbation rule and every evaluation is judged against it."""
    return Experiment(
        name=name,
        validate=functools.partial(validate_own, target=target),
        sweepable=tuple(sweepable),
        population=functools.partial(population, target=target),
        write_results=write_results,
        format_summary=format_summary,
        merge_summary=merge_summary,
    )


EXPERIMENT = Experiment(
    name="arithmetic",
    validate=validate,
    sweepable=SWEEPABLE,
    population=population,
    write_results=write_results,
    format_summary=format_summary,
    merge_summary=merge_summary,
)
