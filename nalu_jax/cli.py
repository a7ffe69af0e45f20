"""Command-line plumbing shared by ``nalu_jax.main`` and the ``launch/`` scripts (no flags here).

Every mistake a user can make on the command line ends in ``fail``: one sentence on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import sys

import ml_collections
from absl import app, flags

from nalu_jax.config import ConfigError


def fail(message: str) -> None:
    print(f"nalu_jax: error: {message}", file=sys.stderr)
    sys.exit(2)


def loaded_config(config_flag):
    """The config of a ``DEFINE_config_file`` flag, or ``fail`` if it is missing or unreadable."""
    config = config_flag.value
    if config is None:
        fail("--config is required, e.g. --config=configs/arithmetic.py:model=nmu,op=mul.")
    if not isinstance(config, ml_collections.ConfigDict):  # ml-collections' stand-in on failure
        path = flags.FLAGS[config_flag.name].config_filename
        fail(f"--config file {path!r} could not be loaded: it does not exist or is not readable.")
    return config


def run(main) -> None:
    """``app.run(main)`` with config and flag errors turned into one sentence and status 2."""
    try:
        app.run(main, flags_parser=_parse_flags)
    except ConfigError as e:  # pragma: no cover - raised inside flag parsing
        fail(str(e))


def _flag_error_sentence(message: str) -> str:
    """ml-collections wraps errors raised by ``get_config`` in a formatted traceback."""
    marker = f"{ConfigError.__name__}: "
    if marker in message:
        return message.rsplit(marker, 1)[1].strip().splitlines()[0]
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    return lines[-1] if "Traceback" in message else " ".join(lines)


def _parse_flags(argv):
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        fail(_flag_error_sentence(str(e)))
    except (AttributeError, KeyError) as e:  # an override naming a field the config lacks
        hint = " ".join(str(e).replace("\\n", "\n").replace("\\'", "").split())
        fail(f"a --config.FIELD override names no field of the config ({hint.strip(chr(39))}).")
    except ConfigError as e:
        fail(str(e))
