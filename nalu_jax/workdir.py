"""The workdir: created, checked writable, and tied to one config (``config.json``)."""

from __future__ import annotations

import json
import os
import shutil
import time

from nalu_jax.config import ConfigError
from nalu_jax.report import atomic_write


def config_json(config) -> str:
    return json.dumps(json.loads(config.to_json_best_effort()), indent=2, sort_keys=True) + "\n"


def prepare_workdir(workdir: str, config, overwrite: bool = False, proc=None) -> None:
    """Create ``workdir``; refuse one that holds a run of a different config (unless overwrite).

    In a multi-host run only process 0 prepares; the others wait for its ``config.json``.
    """
    path = os.path.join(workdir, "config.json")
    text = config_json(config)
    if proc is not None and proc.index != 0:
        _wait_for_config(path, text, proc.timeout_s)
        return
    try:
        os.makedirs(workdir, exist_ok=True)
        probe = os.path.join(workdir, ".write-test")
        with open(probe, "w") as f:
            f.write("")
        os.unlink(probe)
    except OSError as e:
        raise ConfigError(f"workdir {workdir!r} is not writable ({e.strerror}).") from None
    if os.path.exists(path):
        with open(path) as f:
            same = f.read() == text
        if not same and not overwrite:
            raise ConfigError(
                f"workdir {workdir!r} holds a run of a different config; "
                "use another workdir or pass --overwrite to replace it."
            )
        if not same:
            for name in os.listdir(workdir):
                target = os.path.join(workdir, name)
                shutil.rmtree(target) if os.path.isdir(target) else os.unlink(target)
    atomic_write(path, text)


def _wait_for_config(path: str, text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                if f.read() == text:
                    return
        time.sleep(0.2)
    raise ConfigError(
        f"workdir config {path!r} did not appear with this process's config within "
        f"{timeout_s:.0f} s; start every process with the same config and workdir."
    )
