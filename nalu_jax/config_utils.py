"""From an ml-collections config to the objects the training core needs, validating as it goes.

Every mistake a user can make in a config ends here as a ``ConfigError``: one sentence naming
the field and what is allowed (``nalu_jax.main`` prints it and exits with status 2).
"""

from __future__ import annotations

import jax.numpy as jnp

from nalu_jax import tasks as task_lib
from nalu_jax.models import MODELS, model_factory, resolve_layers
from nalu_jax.tasks import single_module as sm


class ConfigError(ValueError):
    """A bad value in a user's config or command line."""


def _tuples(value):
    """ConfigDict turns tuples into lists; ranges are compared and hashed as tuples."""
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


def positive_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}.")


def check_precision(config) -> int:
    """``config.precision`` (32 when absent) if it is 32 or 64, else a ``ConfigError``."""
    precision = config.get("precision", 32)
    if isinstance(precision, bool) or precision not in (32, 64):
        raise ConfigError(f"precision must be 32 or 64, got {precision!r}.")
    return precision


def apply_precision(config) -> None:
    """Switch ``jax_enable_x64`` to match ``config.precision`` (64: on, 32: off).

    Call it before anything is traced (``nalu_jax.main`` and ``engine.train_and_evaluate`` do).
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
    for name, value in (
        ("num_seeds", config.num_seeds),
        ("eval_every", config.eval_every),
        ("seed_block", config.seed_block),
        ("train.batch_size", config.train.batch_size),
        *positive,
    ):
        positive_int(name, value)
    for name in ("seed", "first_seed", "num_steps"):
        positive_int(name, config[name], 0)
    if config.num_steps % config.eval_every:
        raise ConfigError(
            f"eval_every must divide num_steps, got eval_every={config.eval_every} "
            f"and num_steps={config.num_steps}."
        )
    if config.checkpoint_every is not None:
        positive_int("checkpoint_every", config.checkpoint_every)
    if config.train.lr is not None and not config.train.lr > 0:
        raise ConfigError(f"train.lr must be a positive number, got {config.train.lr!r}.")


def validate_run(config) -> None:
    """``validate_common`` plus the arithmetic engine's own fields."""
    validate_common(config, positive=(("eval_size", config.eval_size),))
    if config.train.reg_schedule not in ("linear", "exp"):
        raise ConfigError(
            f"train.reg_schedule must be 'linear' or 'exp', got {config.train.reg_schedule!r}."
        )
    if config.train.sampler not in ("hash", "threefry"):
        raise ConfigError(
            f"train.sampler must be 'hash' or 'threefry', got {config.train.sampler!r}."
        )


def build_task(config) -> task_lib.ArithmeticTask:
    """The ``ArithmeticTask`` of ``config.task`` (single-module ranges by ``range_index``)."""
    tc = config.task
    fields = dict(
        op=tc.op,
        input_size=tc.input_size,
        subset_ratio=tc.subset_ratio,
        overlap_ratio=tc.overlap_ratio,
        num_subsets=tc.num_subsets,
        simple=bool(tc.simple),
        interpolation_range=_tuples(tc.interpolation_range),
        extrapolation_range=_tuples(tc.extrapolation_range),
    )
    if tc.kind != "single_module" and tc.get("range_index") is not None:
        raise ConfigError(
            "task.range_index applies only to task.kind 'single_module'; set "
            "task.interpolation_range and task.extrapolation_range instead."
        )
    try:
        if tc.kind == "single_module":
            if tc.op not in ("add", "sub", "mul", "div"):
                raise ConfigError(
                    f"task.op must be one of ['add', 'div', 'mul', 'sub'] for the single-module "
                    f"benchmark, got {tc.op!r}."
                )
            base = sm.single_module_task(tc.op, tc.range_index, tc.input_size)
            fields.update(subset_ratio=base.subset_ratio, overlap_ratio=0.0, num_subsets=2)
            for name in ("interpolation_range", "extrapolation_range"):
                if fields[name] is None:
                    fields[name] = getattr(base, name)
        return task_lib.ArithmeticTask(**fields)
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(_prefix("task", str(e))) from None


def _prefix(section: str, message: str) -> str:
    """Name fields as ``task.x`` in messages that say ``x``."""
    head = message.split(" ", 1)[0]
    if "." in head or not head.replace("_", "").isalnum():
        return message
    return f"{section}.{message}"


def unit_names(config, task=None) -> tuple[str, ...]:
    try:
        return resolve_layers(
            config.model.name,
            single_unit=bool(config.model.single_unit),
            first_layer=config.model.first_layer,
        )
    except ValueError as e:
        raise ConfigError(str(e)) from None


def build_model_factory(config, task):
    """``(rngs -> network, unit names per layer)`` for ``config.model`` on ``task``."""
    names = unit_names(config)
    options = [dict(config.model.layer1_options), dict(config.model.layer2_options)][: len(names)]
    try:
        factory = model_factory(
            config.model.name,
            task.input_size,
            hidden_size=config.model.hidden_size,
            single_unit=bool(config.model.single_unit),
            first_layer=config.model.first_layer,
            layer_options=tuple(options),
        )
    except (ValueError, TypeError) as e:
        raise ConfigError(_prefix("model", str(e))) from None
    return factory, names


def _npu_beta_defaults(op: str):
    return (1e-9, 1e-7) if op == "div" else (1e-7, 1e-5)


def build_hparams(config, names):
    """The traced ``HParams`` of a config, with model and unit defaults filled in."""
    from nalu_jax.train import HParams

    tr = config.train
    spec = MODELS.get(config.model.name) if not config.model.single_unit else None
    default_scale = spec.reg_scale if spec else sm.SINGLE_UNIT_REG_SCALE.get(config.model.name, 0.0)
    reg_scale = tr.reg_scale if tr.reg_scale is not None else default_scale
    reg_start = tr.reg_start if tr.reg_start is not None else (spec.reg_start if spec else 0.0)
    reg_end = tr.reg_end if tr.reg_end is not None else (spec.reg_end if spec else 1.0)
    if reg_end < reg_start:
        raise ConfigError(
            f"train.reg_end must be >= train.reg_start, got {reg_end!r} < {reg_start!r}."
        )
    npu = any(n in ("npu", "real_npu") for n in names)
    lr = tr.lr if tr.lr is not None else (5e-3 if npu else 1e-3)
    b0, b1 = _npu_beta_defaults(config.task.op)
    beta_start = tr.npu_beta_start if tr.npu_beta_start is not None else b0
    beta_end = tr.npu_beta_end if tr.npu_beta_end is not None else b1
    if npu and not 0 < beta_start <= beta_end:
        raise ConfigError("train.npu_beta_start must be > 0 and <= train.npu_beta_end.")
    f = lambda v: jnp.asarray(v, jnp.float32)
    return HParams(
        lr=f(lr),
        reg_scale=f(reg_scale),
        reg_start=f(reg_start),
        reg_end=f(reg_end),
        lambda_z=f(tr.lambda_z),
        beta_start=f(beta_start if npu else 1.0),
        beta_end=f(beta_end if npu else 1.0),
    )


def threshold_settings(config) -> dict:
    """Success-threshold kind, ε and sample count for ``config.task``."""
    single = config.task.kind == "single_module"
    eps = config.task.threshold_epsilon
    return dict(
        kind="single_module" if single else "arithmetic",
        epsilon=eps if eps is not None else (1e-4 if single else 1e-5),
        num_samples=int(config.task.threshold_samples),
    )


def run_config(experiment: str, *, num_seeds: int, num_steps: int, seed_block: int):
    """A ConfigDict with the top-level run fields every experiment has.

    ``seed_block``: seeds run in blocks of this many (padded), so results are bitwise
    independent of how many seeds run together; it is fixed per config, never derived from
    ``num_seeds``. Changing it may change the last bits of every result.
    """
    import ml_collections

    c = ml_collections.ConfigDict()
    c.experiment = experiment  # see nalu_jax.experiments.EXPERIMENTS
    c.seed = 0  # root seed; seed k's key is fold_in(key(seed), k)
    c.first_seed = 0
    c.num_seeds = num_seeds
    c.num_steps = num_steps
    c.seed_block = seed_block
    c.precision = 32  # 32, or 64: jax_enable_x64 (float64 model, loss, optimiser; see README)
    return c


def base_config():
    """Every field the arithmetic engine reads, with the spec's defaults (configs override)."""
    import ml_collections

    c = run_config("arithmetic", num_seeds=10, num_steps=50_000, seed_block=10)
    c.eval_every = 1_000
    c.checkpoint_every = 10_000  # steps between checkpoints (rounded up to eval periods)
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
    c.train.reg_scale = none_float()  # λ̂; None: the model's default (units.md table)
    c.train.reg_start = none_float()
    c.train.reg_end = none_float()
    c.train.reg_schedule = "linear"  # or "exp": 1 − exp(−1e-5·t)
    c.train.lambda_z = 0.0
    c.train.grad_clip = none_float()  # element-wise; None: 0.1 for iNALU, else off
    c.train.inalu_reinit = True
    c.train.npu_beta_start = none_float()
    c.train.npu_beta_end = none_float()

    # Traced hyperparameters to sweep in one program (a tuple of values each; the grid of all
    # listed ones): lr, reg_scale, reg_start, reg_end, lambda_z, npu_beta_start, npu_beta_end,
    # range_index, interpolation_range, extrapolation_range, threshold_epsilon.
    c.sweep = ml_collections.ConfigDict()
    from nalu_jax.sweep import SWEEPABLE

    for name in SWEEPABLE:
        c.sweep[name] = ml_collections.FieldReference(None, field_type=tuple)
    return c


def sequence_train_config():
    """``config.train`` of the sequence experiments (sequential MNIST, number translation):
    batch 64, Adam 1e-3, the λ ramp from step 1e4 to 1e5 (tasks.md §4); λ̂ None picks the
    cell unit's value (NAU 0.01, else 10)."""
    import ml_collections

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
