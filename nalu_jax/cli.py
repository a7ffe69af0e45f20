"""Command-line plumbing shared by ``nalu_jax.main`` and the ``launch/`` scripts.

One flag is defined here, for every entry point: ``--plugin=MODULE[,MODULE]`` imports modules
that register units of one's own (``nalu_jax.units.register_unit``) before anything runs.
Every mistake a user can make on the command line ends in ``fail``: one sentence on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

import ml_collections
from absl import app, flags

from nalu_jax.config import SWEEPABLE, ConfigError

PLUGIN = flags.DEFINE_list(
    "plugin", [], "Modules to import first (they register units: docs/own_unit.md)."
)


def fail(message: str, status: int = 2) -> None:
    print(f"nalu_jax: error: {message}", file=sys.stderr)
    sys.exit(status)


def _interrupted(e) -> str:
    saved = f"saved at step {e.step}" if e.step is not None else "nothing to save yet"
    return f"interrupted ({saved}); run the same command again to resume."


@contextlib.contextmanager
def reported_errors():
    """What a run can meet, as one sentence and the conventional status: a bad config value
    (2), SIGINT/SIGTERM after saving (130/143), a failed write such as a full disk (1)."""
    from nalu_jax.engine.run import Interrupted

    try:
        yield
    except ConfigError as e:
        fail(str(e))
    except Interrupted as e:
        fail(_interrupted(e), e.status)
    except OSError as e:
        where = f" ({e.filename})" if e.filename else ""
        fail(
            f"could not write to the workdir{where}: {e.strerror or e}; nothing already saved "
            "was lost: free space or fix permissions, then run the same command to resume.",
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
    """One config per name of ``--models`` (``model.name`` set), each validated by its
    experiment before anything trains: a misspelled or unknown name (or a repeated one) fails
    with one sentence, status 2, before the first model's run."""
    from nalu_jax.experiments import EXPERIMENTS

    if len(set(models)) != len(models):
        fail(f"--models names a model twice: {list(models)}.")
    configs = []
    with reported_errors():
        experiment = EXPERIMENTS[base.get("experiment", "arithmetic")]
        for model in models:
            config = base.copy_and_resolve_references()
            config.model.name = model
            try:
                experiment.validate(config)
            except ConfigError as e:
                raise ConfigError(f"--models {model!r}: {e}") from None
            configs.append(config)
    return configs


def _interrupt(signum, frame):
    from nalu_jax.engine.run import Interrupted

    raise Interrupted(signum, None)


def run(main) -> None:
    """``app.run(main)`` with config and flag errors turned into one sentence and status 2,
    and SIGINT/SIGTERM into one sentence and 130/143 wherever they arrive (training has its
    own handler while it runs: it saves first, ``engine.loop``)."""
    from nalu_jax.engine.run import Interrupted

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _interrupt)
    try:
        app.run(main, flags_parser=_parse_flags)
    except ConfigError as e:  # pragma: no cover - raised inside flag parsing
        fail(str(e))
    except Interrupted as e:  # outside reported_errors: nothing was training
        fail(_interrupted(e), e.status)


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
    from nalu_jax.units import import_plugins

    try:
        import_plugins(PLUGIN.value)
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
