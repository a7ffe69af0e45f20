"""The config layer (a leaf: it imports nothing from nalu_jax): errors, validators, parsing of
config strings, and the config pieces every experiment shares.

Every mistake a user can make in a config ends as a ``ConfigError``: one sentence naming the
field and what is allowed (``nalu_jax.main`` prints it and exits with status 2). The shared
pieces (``run_config``, ``base_config``, ``arithmetic_config``, ``sequence_train_config``,
``smoke``) live here rather
than in ``configs/`` so that a config file loads from any working directory.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os

import ml_collections


class ConfigError(ValueError):
    """A bad value in a user's config or command line."""


#: traced hyperparameters ``config.sweep`` may list → (config section, field)
SWEEPABLE = {
    "lr": ("train", "lr"),
    "reg_scale": ("train", "reg_scale"),
    "reg_start": ("train", "reg_start"),
    "reg_end": ("train", "reg_end"),
    "lambda_z": ("train", "lambda_z"),
    "npu_beta_start": ("train", "npu_beta_start"),
    "npu_beta_end": ("train", "npu_beta_end"),
    "range_index": ("task", "range_index"),
    "interpolation_range": ("task", "interpolation_range"),
    "extrapolation_range": ("task", "extrapolation_range"),
    "threshold_epsilon": ("task", "threshold_epsilon"),
    "subset_ratio": ("task", "subset_ratio"),
    "overlap_ratio": ("task", "overlap_ratio"),
}
#: sweeps whose every value sets several SWEEPABLE fields together (one setting per value, not
#: their grid): name → the fields, e.g. ``range_pair`` values are (interpolation, extrapolation)
#: pairs (ICLR 2020 App. C's interpolation-range figure). No default slot: a config that uses
#: one adds it to ``config.sweep``, so every other config's fields are as before.
SWEEP_ZIPPED = {"range_pair": ("interpolation_range", "extrapolation_range")}


def as_tuples(value):
    """ConfigDict turns tuples into lists; ranges are compared and hashed as tuples."""
    if isinstance(value, list | tuple):
        return tuple(as_tuples(v) for v in value)
    return value


def choice(name: str, value, allowed) -> None:
    """ConfigError naming the field ``name`` unless ``value`` is one of ``allowed`` (listed in
    the given order)."""
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {list(allowed)}, got {value!r}.")


#: ``config.seed_block``'s default: the platform picks the block (``engine.blocks``)
SEED_BLOCK_AUTO = "auto"


def positive_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}.")


def finite_number(name, value, *, zero: bool = False, note: str = "") -> None:
    """ConfigError naming the field ``name`` unless ``value`` is a finite number > 0 (>= 0 with
    ``zero``); ``note`` goes after the rule (e.g. what ``None`` means where it is allowed)."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or value < 0 or (value == 0 and not zero)):  # fmt: skip
        rule = "number >= 0" if zero else "positive number"
        raise ConfigError(f"{name} must be a finite {rule}{note}, got {value!r}.")


def check_seed_block(value) -> str | int:
    """``value`` as ``"auto"`` or an integer >= 1 (digits as text count: a copied config's
    field keeps the type of ``"auto"``, so an override of it arrives as text), else a
    ``ConfigError``."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if value != SEED_BLOCK_AUTO and (
        isinstance(value, bool) or not isinstance(value, int) or value < 1
    ):
        raise ConfigError(f"seed_block must be 'auto' or an integer >= 1, got {value!r}.")
    return value


def check_precision(config) -> int:
    """``config.precision`` (32 when absent) if it is 32 or 64, else a ``ConfigError``."""
    precision = config.get("precision", 32)
    if isinstance(precision, bool) or precision not in (32, 64):
        raise ConfigError(f"precision must be 32 or 64, got {precision!r}.")
    return precision


#: JAX's names for the precision of a float32 matrix product (``jax.lax.Precision``), strongest
#: first; "float32"/"tensorfloat32"/"bfloat16" are aliases of "highest"/"high"/"default"
MATMUL_PRECISIONS = ("highest", "float32", "high", "tensorfloat32", "default", "bfloat16")


def check_matmul_precision(value) -> str:
    """``value`` if it is one of ``MATMUL_PRECISIONS``, else a one-sentence ``ConfigError``."""
    if not isinstance(value, str) or value not in MATMUL_PRECISIONS:
        raise ConfigError(
            f"matmul_precision must be one of {list(MATMUL_PRECISIONS)}, got {value!r}."
        )
    return value


def apply_precision(config) -> None:
    """Switch ``jax_enable_x64`` to match ``config.precision`` (64: on, 32: off).

    Call it before anything is traced (``nalu_jax.engine.run.run`` does, first thing).
    With 64, what is built afterwards is float64: unit parameters, optimiser state, the
    forward/backward pass, loss and regularisers. Training batches and evaluation sets are
    still drawn in float32 and promoted, so the data are the same numbers as in a 32-bit run.
    """
    import jax

    jax.config.update("jax_enable_x64", check_precision(config) == 64)


def validate_common(config, positive=()) -> None:
    """The run fields every experiment shares (seeds, step budget, evaluation interval,
    block, batch, lr, precision), plus ``positive`` ``(name, value)`` pairs that must be
    integers >= 1; the first bad one raises a one-sentence ``ConfigError``."""
    check_precision(config)
    check_seed_block(config.seed_block)
    check_matmul_precision(config.get("matmul_precision", "highest"))
    for name, value in (
        ("num_seeds", config.num_seeds),
        ("eval_every", config.eval_every),
        ("train.batch_size", config.train.batch_size),
        *positive,
    ):
        positive_int(name, value)
    if config.get("cpu_seed_block") is not None:
        positive_int("cpu_seed_block", config.cpu_seed_block)
    for name in ("seed", "first_seed", "num_steps"):
        positive_int(name, config[name], 0)
    if config.num_steps % config.eval_every:
        raise ConfigError(
            f"eval_every must divide num_steps, got eval_every={config.eval_every} "
            f"and num_steps={config.num_steps}."
        )
    if config.checkpoint_every is not None:
        positive_int("checkpoint_every", config.checkpoint_every)
    if config.train.lr is not None:
        finite_number("train.lr", config.train.lr)
    for name in NON_NEGATIVE_TRAIN:  # None: the experiment's or the unit's default
        if config.train.get(name) is not None:
            finite_number(f"train.{name}", config.train[name], zero=True)


#: ``config.train`` fields (all sweepable) whose value is a number >= 0 wherever it is set
NON_NEGATIVE_TRAIN = (
    "reg_scale", "reg_start", "reg_end", "lambda_z", "npu_beta_start", "npu_beta_end"
)  # fmt: skip


#: run fields added after results were committed, with the value every older run had: a config
#: written without one (a results cell, a workdir) compares as if it held that value
ADDED_FIELDS = {"cpu_ynn_fusions": True, "matmul_precision": "highest"}
#: arithmetic-task fields added after results were committed (a task with ranges: the family)
ADDED_TASK_FIELDS = {"exact_targets": False, "select_from_step": 0}
#: sweep slots added after results were committed (an older config: not swept)
ADDED_SWEEP_SLOTS = ("subset_ratio", "overlap_ratio")


def with_added_fields(config: dict) -> dict:
    """``config`` (a plain dict) with every field of ``ADDED_FIELDS`` (an arithmetic task's of
    ``ADDED_TASK_FIELDS``, a sweep slot of ``ADDED_SWEEP_SLOTS``) it lacks, at the value runs
    had before the field existed."""
    config = {**ADDED_FIELDS, **config}
    task = config.get("task")
    if isinstance(task, dict) and "interpolation_range" in task:
        config["task"] = {**ADDED_TASK_FIELDS, **task}
    if isinstance(config.get("sweep"), dict):
        config["sweep"] = {**dict.fromkeys(ADDED_SWEEP_SLOTS), **config["sweep"]}
    return config


def run_config(experiment: str, *, num_seeds: int, num_steps: int, seed_block: int):
    """A ConfigDict with the top-level run fields every experiment has.

    Seeds run in blocks of ``config.seed_block`` (padded), so results are bitwise independent
    of how many seeds run together (on XLA:CPU; a GPU may differ in last bits even between two
    runs of one program); changing the block may change the last bits of every result. It is
    ``"auto"``: on XLA:CPU ``cpu_seed_block`` (``seed_block`` here: fixed per config, never
    derived from ``num_seeds``), on an accelerator all of a device's runs in one block
    (``nalu_jax.engine.blocks``). An integer ``seed_block`` applies on every platform.
    """
    c = ml_collections.ConfigDict()
    c.experiment = experiment  # see nalu_jax.experiments.EXPERIMENTS
    c.seed = 0  # root seed; seed k's key is fold_in(key(seed), k)
    c.first_seed = 0
    c.num_seeds = num_seeds
    c.num_steps = num_steps
    # "auto" or an int (an object field: overrides parse either); resolved before a run
    c.seed_block = ml_collections.FieldReference(SEED_BLOCK_AUTO, field_type=object)
    c.cpu_seed_block = seed_block  # what "auto" is on XLA:CPU (small kernels suit its caches)
    c.precision = 32  # 32, or 64: jax_enable_x64 (float64 model, loss, optimiser; see README)
    # Every contraction of units, models and evaluation at this jax.lax.Precision: "highest"
    # is full float32 on every platform; "default" lets a GPU use TF32 (fast, ~1e-3 relative
    # error: no arithmetic seed passes), and the run's summary says so. Same bits on XLA:CPU.
    c.matmul_precision = "highest"
    c.tensorboard = True  # TensorBoard events in WORKDIR/tensorboard (nalu_jax.reporting.events)
    # On CPU, XLA hands some fusions (dots, reductions) to the YNNPACK library. False compiles
    # the training program with XLA's own kernels for all of them: another summation order
    # (other last bits), 1.1-2.8x faster on the single-module task, while the 100-input task
    # runs at half speed without them (WORKSPACE at bcf7708, "Performance: the single-module
    # step").
    # Ignored on GPU and TPU.
    c.cpu_ynn_fusions = True
    # Traced hyperparameters to sweep in one program (a tuple of values each; the grid of all
    # listed ones). Every name of SWEEPABLE has a slot; each experiment accepts its own subset.
    c.sweep = ml_collections.ConfigDict()
    for name in SWEEPABLE:
        c.sweep[name] = ml_collections.FieldReference(None, field_type=tuple)
    return c


def base_config(experiment: str = "arithmetic", *, num_seeds: int = 10, num_steps: int = 50_000,
                seed_block: int = 10, eval_every: int = 1_000, checkpoint_every: int = 10_000):  # fmt: skip
    """What every experiment's config shares: ``run_config``'s fields and the evaluation and
    checkpoint intervals. An experiment adds its own sections (``arithmetic_config``; one's
    own: docs/own_experiment.md) and validates the fields it reads."""
    c = run_config(experiment, num_seeds=num_seeds, num_steps=num_steps, seed_block=seed_block)
    c.eval_every = eval_every
    c.checkpoint_every = checkpoint_every  # steps between checkpoints (rounded up to eval periods)
    return c


def arithmetic_config(experiment: str = "arithmetic"):
    """Every field the arithmetic family reads (the static and recurrent tasks, the
    single-module benchmark, a ``static_task`` of one's own), with the defaults of
    docs/protocols.md, "Static arithmetic" (configs override)."""
    c = base_config(experiment)
    c.eval_size = 10_000  # samples in each of the fixed validation and test sets

    c.task = ml_collections.ConfigDict()
    c.task.kind = "arithmetic"  # or "single_module"
    c.task.op = "mul"
    c.task.input_size = 100
    c.task.subset_ratio = 0.25
    c.task.overlap_ratio = 0.5
    c.task.num_subsets = 2
    c.task.simple = False
    c.task.interpolation_range = (1.0, 2.0)
    c.task.extrapolation_range = (2.0, 6.0)
    c.task.range_index = ml_collections.FieldReference(None, field_type=int)
    c.task.threshold_epsilon = ml_collections.FieldReference(None, field_type=float)
    c.task.threshold_samples = 1_000_000
    # targets rounded once from exact sums, as stable-nalu's float64 generator makes them
    # (tasks.arithmetic.exact_target; static task, built-in ops); False: float32 sums, as the
    # network's first layer computes them (docs/protocols.md, "Target precision")
    c.task.exact_targets = False
    # the best validation step (where a seed is judged) is chosen among the evaluations at this
    # step or later; 0: all of them, as the authors' export does below 5·10⁶ steps (at 5·10⁶ it
    # leaves step 0 out, which 1000 reproduces; docs/protocols.md, "Judgement of a seed and of
    # a population"). A study's knob: training does not read it.
    c.task.select_from_step = 0

    c.model = ml_collections.ConfigDict()
    c.model.name = "nmu"
    c.model.hidden_size = 2
    c.model.single_unit = False
    c.model.first_layer = "default"  # "same", or a unit name
    c.model.layer1_options = ml_collections.ConfigDict()
    c.model.layer2_options = ml_collections.ConfigDict()

    c.train = ml_collections.ConfigDict()
    c.train.batch_size = 128
    c.train.sampler = "hash"  # training-batch stream: "hash" (fast, nalu_jax.rng) or "threefry"
    none_float = lambda: ml_collections.FieldReference(None, field_type=float)
    c.train.lr = none_float()  # None: 1e-3, or 5e-3 for NPU/RealNPU
    c.train.beta1 = 0.9
    c.train.beta2 = 0.999
    c.train.adam_eps = 1e-8
    c.train.reg_scale = none_float()  # λ̂; None: the model's default (the model table)
    c.train.reg_start = none_float()
    c.train.reg_end = none_float()
    c.train.reg_schedule = "linear"  # or "exp": 1 − exp(−1e-5·t)
    c.train.lambda_z = 0.0
    c.train.grad_clip = none_float()  # element-wise; None: 0.1 for iNALU, else off
    c.train.lr_decay_from = none_float()  # step where lr starts to fall linearly; None: off
    c.train.lr_decay_to = 0.01  # lr · this at num_steps (with lr_decay_from)
    c.train.inalu_reinit = True
    c.train.npu_beta_start = none_float()
    c.train.npu_beta_end = none_float()

    return c


def static_task_config(experiment: str, *, units, widths, reg_scale: float = 0.0,
                       reg_start: float = 0.0, reg_end: float = 1.0):  # fmt: skip
    """The config of a static task of one's own (``experiments.arithmetic.static_task``):
    ``arithmetic_config``'s run, task and training fields without ``task.kind``/``task.op``
    (the experiment's target is the op), and as the network ``model.units`` (registered unit
    names, in order) with ``model.widths`` (each hidden layer's width, one fewer) and
    ``model.layer_options`` (one dict per unit), with its λ̂ ramp given here: a stack of
    units has no model-table entry to take it from (docs/own_experiment.md)."""
    c = arithmetic_config(experiment)
    with c.unlocked():
        del c.task["kind"], c.task["op"]
    c.model = ml_collections.ConfigDict()
    c.model.units = tuple(units)
    c.model.widths = tuple(widths)
    c.model.layer_options = tuple(ml_collections.ConfigDict() for _ in units)
    c.train.reg_scale, c.train.reg_start, c.train.reg_end = reg_scale, reg_start, reg_end
    return c


def sequence_train_config():
    """``config.train`` of the sequence experiments (sequential MNIST, number translation):
    batch 64, Adam 1e-3, the λ ramp from step 1e4 to 1e5 (docs/protocols.md, "Sequential MNIST"); λ̂ None picks the
    cell unit's value (NAU 0.01, else 10)."""

    t = ml_collections.ConfigDict()
    t.batch_size = 64
    t.lr = 1e-3
    t.beta1 = 0.9
    t.beta2 = 0.999
    t.adam_eps = 1e-8
    t.grad_clip = ml_collections.FieldReference(None, field_type=float)
    t.reg_scale = ml_collections.FieldReference(None, field_type=float)
    t.reg_start = 1e4
    t.reg_end = 1e5
    t.lambda_z = 0.0
    t.npu_beta_start = 1e-7
    t.npu_beta_end = 1e-5
    return t


def smoke(c):
    """Shrink an engine config to a seconds-long run (4 seeds, 2,000 steps, small sets)."""
    c.num_seeds = 4
    c.num_steps = 2_000
    c.checkpoint_every = 1_000
    c.eval_size = 1_000
    c.task.threshold_samples = 100_000
    return c


def parse_config_arg(arg: str | None, defaults: dict, switches=("smoke",)) -> dict:
    """``"model=nmu,op=mul,smoke"`` → ``{"model": "nmu", "op": "mul", "smoke": True}``.

    Unknown keys are a ``ConfigError`` listing the allowed ones; values keep the default's type.
    """
    out = dict(defaults)
    out.update({s: False for s in switches})
    for part in filter(None, (arg or "").split(",")):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            if key not in switches:
                raise ConfigError(
                    f"config variant {key!r} is unknown; allowed: {sorted(switches)} "
                    f"or key=value with key in {sorted(defaults)}."
                )
            out[key] = True
            continue
        if key not in defaults:
            raise ConfigError(
                f"config variant key {key!r} is unknown; allowed keys: {sorted(defaults)}."
            )
        kind = type(defaults[key]) if defaults[key] is not None else str
        try:
            out[key] = kind(value.strip())
        except ValueError:
            raise ConfigError(
                f"config variant {key} must be a {kind.__name__}, got {value!r}."
            ) from None
    return out


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def parse_value(field: str, text: str, kind: type):
    """``text`` (from a command line) as a value of type ``kind``, the field's own type.

    ``None`` is None; ints stay ints (``"7"`` → 7; ``"7.5"`` is an error for an int field);
    floats accept ints; bools accept true/false/1/0; tuples take Python syntax
    (``"(1.0, 2.0)"``, ``"((-6, -2), (2, 6))"``); strings are taken as written; a field without
    a type (None by default) takes any Python literal, or the text itself. A value that does
    not fit is a ``ConfigError`` naming ``field``.
    """
    text = text.strip()
    if text == "None":
        return None
    if kind is str:
        return text
    if kind is bool:
        low = text.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise ConfigError(f"{field} must be true or false, got {text!r}.")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if kind in (int, float, tuple, list):
            raise ConfigError(f"{field} must be a {kind.__name__}, got {text!r}.") from None
        return text  # an untyped field: the text itself
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is tuple and isinstance(value, list):
        return tuple(value)
    if kind in (int, float, tuple, list) and (
        isinstance(value, bool) or not isinstance(value, kind)
    ):
        raise ConfigError(f"{field} must be a {kind.__name__}, got {text!r}.")
    return value


def apply_overrides(config, items) -> None:
    """Set ``"section.field=value"`` items on ``config`` in place, each value parsed with the
    field's own type (``parse_value``); an unknown field is a ``ConfigError``."""
    for item in items:
        key, sep, text = item.partition("=")
        if not sep:
            raise ConfigError(f"an override must be field=value, got {item!r}.")
        key = key.strip()
        *parents, leaf = key.split(".")
        target = config
        for i, p in enumerate(parents):
            if p not in target or not hasattr(target[p], "get_type"):
                raise ConfigError(f"{'.'.join(parents[: i + 1])} is not a config section.")
            target = target[p]
        if leaf not in target:
            raise ConfigError(f"{key} is not a config field.")
        kind = target.get_type(leaf)
        target[leaf] = parse_value(key, text, kind if kind is not type(None) else object)


#: the repository's ``configs/`` folder (beside the package in a checkout or editable install)
CONFIGS_DIR = os.path.join(os.path.dirname(_PACKAGE), "configs")
#: the configs inside the package: in a checkout a link to ``configs/``; an installed wheel
#: holds copies (package data), so ``load_config`` works away from the checkout too
PACKAGED_CONFIGS_DIR = os.path.join(_PACKAGE, "configs")


def config_path(name: str) -> str:
    """Where ``load_config(name)`` reads: ``name`` itself when it ends in ``.py`` (a path,
    relative to the working directory); otherwise the first ``NAME.py`` of ``CONFIGS_DIR``
    (the source checkout's ``configs/``) and ``PACKAGED_CONFIGS_DIR`` (the installed
    package's copy). A missing file is a ``ConfigError`` naming where it looked."""
    if name.endswith(".py"):
        if not os.path.isfile(name):
            raise ConfigError(f"config file {name!r} does not exist.")
        return name
    places = [os.path.join(d, f"{name}.py") for d in (CONFIGS_DIR, PACKAGED_CONFIGS_DIR)]
    for path in places:
        if os.path.isfile(path):
            return path
    raise ConfigError(f"config {name!r} does not exist: no {' or '.join(repr(p) for p in places)}.")


def load_config(name: str, arg: str | None = None):
    """``configs/NAME.py``'s ``get_config(arg)`` (or a config file's, given its path), as the
    ``--config=FILE:ARG`` flag calls it — for tests, benchmarks and scripts outside absl.
    Where ``name`` is looked for: ``config_path``.

    >>> load_config("arithmetic", "model=nmu,op=mul").model.name
    'nmu'
    """
    path = config_path(name)
    stem = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(f"nalu_jax_config_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


def prefix(section: str, message: str) -> str:
    """Name fields as ``section.x`` in a lower layer's message that says ``x``."""
    head = message.split(" ", 1)[0]
    if "." in head or not head.replace("_", "").isalnum():
        return message
    return f"{section}.{message}"
