"""Command-line plumbing shared by ``nalu_jax.main`` and the ``launch/`` scripts.

Two flags are defined here, for every entry point: ``--plugin=MODULE[,MODULE]`` (and the
``NALU_JAX_PLUGINS`` environment variable, the same list) imports modules that register units
(``nalu_jax.units.register_unit``, docs/own_unit.md) or experiments
(``nalu_jax.register_experiment``, docs/own_experiment.md) of one's own before anything runs;
``--nofigures`` (``NALU_JAX_FIGURES=0``) writes a run's numbers without its PNGs.
Every mistake a user can make on the command line ends in ``fail``: one sentence on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

import ml_collections
from absl import app, flags

from nalu_jax.config import SWEEPABLE, ConfigError

PLUGIN = flags.DEFINE_list(
    "plugin",
    [],
    "Modules to import first, as NALU_JAX_PLUGINS: they register units or experiments of one's "
    "own (docs/own_unit.md, docs/own_experiment.md).",
)

FIGURES = flags.DEFINE_bool(
    "figures",
    None,
    "Draw each run's PNGs (curves.png, a table's figures/OP.png, comparison.png); --nofigures "
    "writes the numbers alone (a sweep of many runs, a test suite), as NALU_JAX_FIGURES=0. "
    "Default: NALU_JAX_FIGURES, else yes.",
)


def fail(message: str, status: int = 2) -> None:
    print(f"nalu_jax: error: {message}", file=sys.stderr)
    sys.exit(status)


AGAIN = "run the same command again"


def _interrupted(e, again: str = AGAIN) -> str:
    saved = f"saved at step {e.step}" if e.step is not None else "nothing to save yet"
    return f"interrupted ({saved}); {again} to resume."


@contextlib.contextmanager
def reported_errors(again: str = AGAIN):
    """What a run can meet, as one sentence and the conventional status: a bad config value
    (2), an allocation the host cannot make (2: the sizes asked for are too large),
    SIGINT/SIGTERM after saving (130/143), a failed write such as a full disk (1).
    ``again``: how to resume, where the same command would not (one that starts clean)."""
    from nalu_jax.engine.run import Interrupted

    try:
        yield
    except ConfigError as e:
        fail(str(e))
    except MemoryError as e:  # numpy's names the array; checkpoints already saved are kept
        fail(
            f"out of memory ({e or 'an allocation failed'}): ask for less at once (fewer seeds "
            "or evaluation examples, or more processes: --num_processes)."
        )
    except Interrupted as e:
        fail(_interrupted(e, again), e.status)
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        fail(
            f"could not write to the workdir{where}: {e.strerror or e}; nothing already saved "
            f"was lost: free space or fix permissions, then {again} to resume.",
            1,
        )


def loaded_config(config_flag):
    """The config of a ``DEFINE_config_file`` flag, or ``fail`` if it is missing or unreadable."""
    config = config_flag.value
    if config is None:
        fail("--config is required, e.g. --config=configs/arithmetic.py:model=nmu,op=mul.")
    if not isinstance(config, ml_collections.ConfigDict):  # ml-collections' stand-in on failure
        path = flags.FLAGS[config_flag.name].config_filename
        fail(f"--config file {path!r} could not be loaded: it does not exist or is not readable.")
    return config


def model_configs(base, models) -> list:
    """One config per name of ``--models``, each validated by its experiment before anything
    trains: ``model.name`` set, or for a config with a stack of units (``model.units``) the
    stack ``"nau-nmu-nau"``. A misspelled or unknown name (or a repeated one), or an
    experiment whose config has neither field, fails with one sentence, status 2, before the
    first model's run."""
    from nalu_jax.engine import sweep
    from nalu_jax.engine.blocks import resolve_seed_block
    from nalu_jax.experiments import experiment_of

    if len(set(models)) != len(models):
        fail(f"--models names a model twice: {list(models)}.")
    configs = []
    with reported_errors():
        experiment = experiment_of(base)
        field = next((f for f in ("units", "name") if f in (base.get("model") or {})), None)
        if field is None:
            raise ConfigError(
                f"--models sets model.name (or model.units), which experiment "
                f"{experiment.name!r} does not have; compare its variants with --config "
                "overrides, one run each."
            )
        for model in models:
            config = base.copy_and_resolve_references()
            if field == "units":  # "nau-nmu-nau": the stack's units in order
                config.model.units = tuple(model.split("-"))
            else:
                config.model.name = model
            try:
                sweep.validate(experiment, config)
            except ConfigError as e:
                raise ConfigError(f"--models {model!r}: {e}") from None
            configs.append(resolve_seed_block(config))  # as the run records it
    return configs


#: ``FIELD=VALUE`` of each ``--config.FIELD=VALUE`` argument of an entry point without a
#: ``--config`` file flag (``run(main, config_items=True)``), in command-line order
CONFIG_ITEMS: list[str] = []


def _interrupt(signum, frame):
    from nalu_jax.engine.run import Interrupted

    raise Interrupted(signum, None)


def run(main, *, config_items: bool = False, smoke: bool = False) -> None:
    """``app.run(main)`` with config and flag errors turned into one sentence and status 2,
    and SIGINT/SIGTERM into one sentence and 130/143 wherever they arrive (training has its
    own handler while it runs: it saves first, ``engine.loop``). ``config_items``: take
    ``--config.FIELD=VALUE`` arguments out of the command line into ``CONFIG_ITEMS`` (a
    launcher that builds its configs applies them with ``nalu_jax.config.apply_overrides``).
    ``smoke``: the entry point has a ``--smoke`` flag (``SMOKE_HELP``), which adds the config
    file's ``smoke`` variant to ``--config`` (``smoke_argv``)."""
    from nalu_jax.engine.run import Interrupted

    parser = _parse_flags
    if config_items:
        parser = lambda argv: _parse_flags(take_config_items(argv, CONFIG_ITEMS))
    if smoke:
        parser = (lambda inner: lambda argv: inner(smoke_argv(argv)))(parser)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _interrupt)
    try:
        app.run(main, flags_parser=parser)
    except ConfigError as e:  # pragma: no cover - raised inside flag parsing
        fail(str(e))
    except Interrupted as e:  # outside reported_errors: nothing was training
        fail(_interrupted(e), e.status)


#: the ``--smoke`` flag's help in the entry points that take a ``--config`` file
SMOKE_HELP = (
    "A run of seconds to a minute through the whole path (not a published protocol): adds the "
    "config file's 'smoke' variant (few seeds, few steps, small evaluation sets) to --config; "
    "--config.FIELD overrides still apply."
)


def smoke_argv(argv) -> list:
    """``argv`` with ``,smoke`` added to the variant of its ``--config=FILE[:VARIANT]`` when
    ``--smoke`` (or ``--smoke=true``) is among its arguments: the config file's own smoke
    variant, loaded before any ``--config.FIELD`` override is applied."""
    args, smoke = list(argv), False
    for a in args[1:]:  # the last of --smoke / --nosmoke counts, as absl reads them
        key = a.lstrip("-").lower()
        if key in ("smoke", "smoke=true", "smoke=1", "nosmoke", "smoke=false", "smoke=0"):
            smoke = key in ("smoke", "smoke=true", "smoke=1")
    if not smoke:
        return args
    for i, arg in enumerate(args[1:], 1):
        if arg.lstrip("-").startswith("config="):
            head, value = arg.split("=", 1)
        elif arg.lstrip("-") == "config" and i + 1 < len(args):
            head, value, i = None, args[i + 1], i + 1
        else:
            continue
        path, sep, variant = value.partition(":")
        value = f"{path}:{variant},smoke" if sep and variant else f"{path}:smoke"
        args[i] = value if head is None else f"{head}={value}"
        break
    return args


def take_config_items(argv, into: list) -> list:
    """``argv`` without its ``--config.FIELD=VALUE`` arguments, whose ``FIELD=VALUE`` go to
    ``into``; one without ``=VALUE`` is a one-sentence failure."""
    rest = []
    for arg in argv:
        if not arg.startswith(("--config.", "-config.")):
            rest.append(arg)
            continue
        field, sep, value = arg.lstrip("-")[len("config.") :].partition("=")
        if not sep or not field:
            fail(f"{arg} needs a field and =VALUE, e.g. --config.seed_block=100.")
        into.append(f"{field}={value}")
    return rest


def _flag_error_sentence(message: str) -> str:
    """ml-collections wraps errors raised by ``get_config`` in a formatted traceback."""
    marker = f"{ConfigError.__name__}: "
    if marker in message:
        return message.rsplit(marker, 1)[1].strip().splitlines()[0]
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return lines[-1] if "Traceback" in message else " ".join(lines)


def _misspelled_sweep_field(argv) -> str | None:
    """``NAME`` of a ``--config.sweep.NAME=...`` override that is not a sweepable field."""
    for arg in argv[1:]:
        head = arg.lstrip("-").split("=", 1)[0].split(".")
        if len(head) == 3 and head[1] == "sweep" and head[2] not in SWEEPABLE:
            return head[2]
    return None


def _parse_flags(argv):
    rest = _parse(argv)
    from nalu_jax.reporting import plots

    if FIGURES.value is not None:  # the flag, where given, over the environment's value
        os.environ[plots.FIGURES_ENV] = "1" if FIGURES.value else "0"
    try:
        plots.enabled()
    except ValueError as e:  # NALU_JAX_FIGURES neither 0 nor 1
        fail(str(e))
    from nalu_jax.units import import_plugins

    try:
        import_plugins([*os.environ.get("NALU_JAX_PLUGINS", "").split(","), *PLUGIN.value])
    except ValueError as e:  # a --plugin module that cannot be imported
        fail(str(e))
    return rest


def _parse(argv):
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        fail(_flag_error_sentence(str(e)))
    except (AttributeError, KeyError) as e:  # an override naming a field the config lacks
        bad = _misspelled_sweep_field(argv)
        if bad is not None:
            fail(f"sweep.{bad} is not a sweepable field; sweepable: {sorted(SWEEPABLE)}.")
        hint = " ".join(str(e).replace("\\n", "\n").replace("\\'", "").split())
        fail(f"a --config.FIELD override names no field of the config ({hint.strip(chr(39))}).")
    except ConfigError as e:
        fail(str(e))
    except SyntaxError as e:  # the config file is not valid Python
        fail(f"--config file {e.filename!r} has a syntax error on line {e.lineno}: {e.msg}.")
    except OSError as e:  # a missing config file, met while applying --config.X overrides
        reason = [ln.strip() for ln in str(e).splitlines() if ln.strip()][-1]
        fail(f"--config file could not be loaded: {reason}.")
    except Exception as e:  # an error inside the config file's get_config
        fail(f"--config file could not be loaded: {type(e).__name__}: {e}.")
