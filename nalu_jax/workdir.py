"""The workdir: created, checked writable, locked, and tied to one config (``config.json``)."""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import time

from nalu_jax.config import ConfigError
from nalu_jax.report import atomic_write

LOCK = ".lock"
_held: dict[str, int] = {}  # workdir → file descriptor of its lock, for this process's life


def config_json(config) -> str:
    return json.dumps(json.loads(config.to_json_best_effort()), indent=2, sort_keys=True) + "\n"


def first_difference(old, new, path: str = "") -> str | None:
    """The dotted name of the first field where two config dicts differ (None: equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            name = f"{path}.{key}" if path else key
            if key not in old or key not in new:
                return name
            found = first_difference(old[key], new[key], name)
            if found:
                return found
        return None
    return None if old == new else (path or "(the config)")


def lock(workdir: str, name: str = LOCK) -> None:
    """Hold an exclusive lock on ``workdir`` for the rest of this process (a dead process's
    lock vanishes with it); a second live process gets one sentence."""
    path = os.path.join(workdir, name)
    if path in _held:
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        owner = os.read(fd, 32).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise ConfigError(
            f"workdir {workdir!r} is in use by process {owner}; wait for it to finish or use "
            "another workdir."
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    _held[path] = fd


def release(workdir: str, name: str = LOCK) -> None:
    """Give up this process's lock on ``workdir`` (no-op if not held)."""
    fd = _held.pop(os.path.join(workdir, name), None)
    if fd is not None:
        os.close(fd)


def prepare_workdir(workdir: str, config, overwrite: bool = False, proc=None) -> None:
    """Create and lock ``workdir``; refuse one that holds a run of a different config (naming
    the first field that differs) unless ``overwrite``, which always starts clean.

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
    lock(workdir)
    for stale in glob.glob(os.path.join(workdir, "**", ".tmp-*"), recursive=True):
        os.unlink(stale)  # half-written files of a killed run (we hold the lock)
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if old != text and not overwrite:
            field = first_difference(json.loads(old), json.loads(text))
            raise ConfigError(
                f"workdir {workdir!r} holds a run whose config differs in {field}; "
                "use another workdir or pass --overwrite to replace it."
            )
    if overwrite:
        for name in os.listdir(workdir):
            if name == LOCK:
                continue
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
