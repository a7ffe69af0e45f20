"""The workdir: created, checked writable, locked, and tied to one config (``config.json``)."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import shutil
import time

from nalu_jax.config import ConfigError, with_added_fields
from nalu_jax.reporting.report import atomic_write

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


def release(workdir: str, name: str = LOCK, remove: bool = False) -> None:
    """Give up this process's lock on ``workdir`` (no-op if not held); ``remove``: delete the
    lock file first, while still holding it (a process that opened it meanwhile is refused,
    one that opens it later creates a new one)."""
    path = os.path.join(workdir, name)
    fd = _held.pop(path, None)
    if fd is not None:
        if remove:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.close(fd)


def refuse_unwritable(flag: str, path: str) -> None:
    """A ``ConfigError`` naming ``flag`` unless ``path`` is, or can be made, a directory this
    process writes into: its nearest existing ancestor must be a writable directory. Creates
    nothing: a command checks its output paths before any training, not when it first writes
    (which, for a results root, is after the training)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise ConfigError(f"{flag}={path} cannot be a directory: {probe} is not one.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}={path} cannot be written: {probe} is not writable.")


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
    if not overwrite:
        try:
            before = _recorded(workdir)
        except ValueError:  # written atomically, so damaged from outside: no run to compare
            raise ConfigError(
                f"workdir {workdir!r} holds a config.json that is not valid JSON; use another "
                "workdir or pass --overwrite to start it clean."
            ) from None
        after = with_added_fields(json.loads(text))
        if before is not None and before != after:
            if not check_extension(before, after):
                raise ConfigError(
                    f"workdir {workdir!r} holds a run whose config differs in "
                    f"{first_difference(_fixed(before), _fixed(after))}; use another workdir "
                    "or pass --overwrite to replace it."
                )
            if int(after["num_steps"]) > int(before["num_steps"]):
                _record_extension(workdir, int(before["num_steps"]))
    if overwrite:
        for name in os.listdir(workdir):
            if name == LOCK:
                continue
            target = os.path.join(workdir, name)
            shutil.rmtree(target) if os.path.isdir(target) else os.unlink(target)
    atomic_write(path, text)


def resumes(workdir: str, config) -> bool:
    """Whether ``workdir`` holds a run that ``config`` goes on with: the same config (a run
    stopped, or finished), or the same but for a larger budget (an extension), as
    ``prepare_workdir`` without ``overwrite`` accepts it. ``config``: its seed block resolved
    (``engine.blocks.resolve_seed_block``), as a run records it."""
    try:
        before = _recorded(workdir)
    except ValueError:  # a damaged config.json holds no run to go on with
        return False
    if before is None:
        return False
    after = with_added_fields(json.loads(config_json(config)))
    try:
        return before == after or check_extension(before, after)
    except ConfigError:  # a lowered budget, or one the schedule depends on
        return False


def _recorded(workdir: str) -> dict | None:
    """The config of the run ``workdir`` holds (fields added since filled in), or None where it
    holds none; a ``ValueError`` where its ``config.json`` is not valid JSON."""
    path = os.path.join(workdir, "config.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return with_added_fields(json.load(f))


#: fields an extension may change: the budget, and how often checkpoints are written
EXTENDABLE = ("num_steps", "checkpoint_every")
EXTENDED = "extended_from.json"  # the smaller num_steps a workdir was trained with before


def _fixed(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in EXTENDABLE}


def check_extension(before: dict, after: dict) -> bool:
    """True when ``after`` extends the run of ``before``: the same config but for a larger
    ``num_steps`` (and ``checkpoint_every``). A ``ConfigError`` in one sentence when the budget
    is lowered, or when the schedule depends on ``num_steps`` (the steps already trained would
    differ from those of a run given the larger budget from the start)."""
    if first_difference(_fixed(before), _fixed(after)) is not None:
        return False
    old, new = int(before["num_steps"]), int(after["num_steps"])
    if new < old:
        raise ConfigError(
            f"num_steps={new} is below the {old} steps this workdir's run was given; a run "
            "can be extended, not shortened: use another workdir or pass --overwrite."
        )
    if new > old and after.get("train", {}).get("lr_decay_from") is not None:
        raise ConfigError(
            f"cannot extend this workdir's run from {old} to {new} steps: train.lr_decay_from "
            "makes the learning rate fall until num_steps, so the steps already trained differ "
            "from a run given the larger budget from the start; use another workdir."
        )
    return True


def _record_extension(workdir: str, old_steps: int) -> None:
    steps = sorted(set(extended_from(workdir)) | {old_steps})
    atomic_write(os.path.join(workdir, EXTENDED), json.dumps({"num_steps": steps}) + "\n")


def extended_from(workdir: str) -> list[int]:
    """The smaller ``num_steps`` this workdir's run was trained with before being extended."""
    try:
        with open(os.path.join(workdir, EXTENDED)) as f:
            return [int(v) for v in json.load(f)["num_steps"]]
    except (OSError, ValueError, KeyError):
        return []


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
