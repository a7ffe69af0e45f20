"""Orbax checkpoints of the whole population (all seeds' states and the evaluation history).

The pytree is saved as a flat ``{"leaf_i": array}`` dict so that restoring needs only the
structure of a freshly initialised state (``nnx.State`` and optax states round-trip exactly).
Orbax writes to a temporary folder and renames it, so a checkpoint is either whole or absent.

Each checkpoint also carries two fingerprints: ``layout`` (the tree's structure, shapes and
dtypes: a checkpoint restores only into the state layout that wrote it) and ``digest`` (a
sha256 of every saved array's bytes: flipped bits, truncated or overwritten files are caught).
``restore_latest`` falls back from a damaged checkpoint to the newest intact one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import re
import shutil
import time
import warnings

import jax
import numpy as np
import orbax.checkpoint as ocp

LAYOUT = "layout"  # uint8 [32]: sha256 of the tree's structure, shapes and dtypes
DIGEST = "digest"  # uint8 [32]: sha256 of the saved arrays' bytes


def _sha(data: bytes) -> np.ndarray:
    return np.frombuffer(hashlib.sha256(data).digest(), np.uint8).copy()


def layout(tree) -> np.ndarray:
    """A fingerprint of ``tree``'s structure, leaf shapes and dtypes."""
    leaves, treedef = jax.tree.flatten(tree)
    return _sha(
        (repr(treedef) + repr([(np.shape(x), str(np.asarray(x).dtype)) for x in leaves])).encode()
    )


def digest(flat: dict) -> np.ndarray:
    """sha256 over the arrays of ``flat`` (name order), names, shapes and bytes included."""
    h = hashlib.sha256()
    for name in sorted(flat):
        x = np.ascontiguousarray(np.asarray(flat[name]))
        h.update(f"{name}{x.shape}{x.dtype}".encode())
        h.update(x.tobytes())
    return np.frombuffer(h.digest(), np.uint8).copy()


def as_os_error(error: Exception, path: str) -> OSError:
    """``error`` of a failed write as an ``OSError`` (errno from tensorstore's message)."""
    if isinstance(error, OSError):
        return error
    code = re.search(r"os_error_code='?(\d+)", str(error))
    if code:
        return OSError(int(code.group(1)), os.strerror(int(code.group(1))), path)
    return OSError(errno.EIO, str(error).strip().splitlines()[0][:200], path)


class _DrainingLoop(asyncio.SelectorEventLoop):
    """An event loop that, when closed, first lets its pending tasks finish.

    Orbax runs each restore in a fresh event loop and closes it as soon as the restore's
    ``gather`` raises, i.e. at the first read that fails (a truncated file). The restore's
    other reads are still running in tensorstore's threads; each, when done, calls into the
    closed loop, and every call prints a "RuntimeError: Event loop is closed" traceback on
    stderr. Closing this loop awaits those reads (their results and errors discarded) first.
    """

    def close(self) -> None:
        if not self.is_running() and not self.is_closed():
            pending = [t for t in asyncio.all_tasks(self) if not t.done()]
            if pending:
                self.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        super().close()


class _DrainingPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return _DrainingLoop()


@contextlib.contextmanager
def _draining_event_loops():
    """Within: every new event loop (orbax makes one per call) drains before it closes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # policies: Python 3.14+
        previous = asyncio.get_event_loop_policy()
        asyncio.set_event_loop_policy(_DrainingPolicy())
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_event_loop_policy(previous)


class CheckpointError(Exception):
    """A checkpoint that cannot be used (damaged, or of another layout); the sentence says why."""


class Checkpointer:
    """Keeps the latest ``max_to_keep`` checkpoints of ``tree`` under ``directory``."""

    def __init__(self, directory: str, max_to_keep: int = 3, *, process: int | None = None):
        """``process``: in a multi-host run, this process's index; its manager then works
        alone (each process saves its own slice of the population, no cross-host barrier)."""
        self.directory = os.path.abspath(directory)
        extra = {"create": True}
        if process is not None:
            os.makedirs(self.directory, exist_ok=True)  # orbax will not create it then
            extra["create"] = False
            extra["multiprocessing_options"] = ocp.options.MultiprocessingOptions(
                primary_host=process,
                active_processes={process},
                barrier_sync_key_prefix=f"process_{process}",
            )
            # Orbax's asynchronous directory creation signals through coordination-service
            # keys ("awaitable_signals_contract_<op id>/…") that carry no prefix: two
            # processes' independent managers share and delete each other's keys, and one
            # then waits out the 5-minute timeout (seen once in CI, the two-task slurm test).
            extra["async_options"] = ocp.options.AsyncOptions(
                create_directories_asynchronously=False
            )
        self._options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, **extra)
        self._manager = ocp.CheckpointManager(self.directory, options=self._options)

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def save(self, step: int, tree) -> None:
        leaves = jax.tree.leaves(tree)
        # Orbax refuses zero-size arrays; those are restored from the template instead.
        flat = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(leaves) if np.size(x)}
        flat[DIGEST] = digest(flat)
        flat[LAYOUT] = layout(tree)
        try:
            self._manager.save(step, args=ocp.args.StandardSave(flat), force=True)
            self._manager.wait_until_finished()
        except Exception as e:  # orbax/tensorstore report a full disk as ValueError etc.
            raise as_os_error(e, os.path.join(self.directory, str(step))) from None

    def restore(self, step: int, like):
        """The checkpoint at ``step`` in the structure (and dtypes) of ``like``; raises
        ``CheckpointError`` when it is of another layout or damaged."""
        leaves, treedef = jax.tree.flatten(like)
        spec = lambda x: jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
        target = {f"leaf_{i:05d}": spec(x) for i, x in enumerate(leaves) if np.size(x)}
        target[DIGEST] = target[LAYOUT] = jax.ShapeDtypeStruct((32,), np.uint8)
        try:
            with warnings.catch_warnings(), _draining_event_loops():
                warnings.simplefilter("ignore")
                flat = self._manager.restore(step, args=ocp.args.StandardRestore(target))
        except Exception as e:  # orbax/tensorstore raise many kinds for damaged files
            raise CheckpointError(f"it cannot be read ({type(e).__name__})") from None
        if not np.array_equal(np.asarray(flat.pop(LAYOUT)), layout(like)):
            raise CheckpointError("it was written with another state layout")
        saved = np.asarray(flat.pop(DIGEST))
        if not np.array_equal(saved, digest({k: np.asarray(v) for k, v in flat.items()})):
            raise CheckpointError("its arrays do not match their digest (corrupted)")
        restored = [flat.get(f"leaf_{i:05d}", x) for i, x in enumerate(leaves)]
        return jax.tree.unflatten(treedef, restored)

    def restore_latest(self, like, say=print):
        """``(step, tree)`` of the newest checkpoint that restores intact, or ``(None, None)``;
        each one skipped is reported by ``say`` in one sentence (which, and why)."""
        step, tree, _ = self.restore_latest_of([like], say)
        return step, tree

    def restore_latest_of(self, likes, say=print):
        """``(step, tree, i)``: the newest checkpoint that restores intact into one of the
        layouts ``likes`` (tried in order; ``i`` is the one it fits), or ``(None, None, None)``."""
        steps = self.all_steps()
        for step in reversed(steps):
            try:
                error = None
                for i, like in enumerate(likes):
                    try:
                        return step, self.restore(step, like), i
                    except CheckpointError as e:
                        error = error or e
                        if len(likes) > 1:  # a failed restore can leave orbax unusable
                            self._fresh_manager()
                raise error
            except CheckpointError as e:
                older = [s for s in steps if s < step]
                then = f"trying step {older[-1]}" if older else "starting afresh"
                kept = self._set_aside(step)
                say(
                    f"checkpoint at step {step} in {self.directory} is unusable: {e}; moved to "
                    f"{kept}, {then}."
                )
        return None, None, None

    def _fresh_manager(self) -> None:
        self._manager.close()
        self._manager = ocp.CheckpointManager(self.directory, options=self._options)

    def _set_aside(self, step: int) -> str:
        """Move an unusable checkpoint out of the way (kept for inspection, never reused)."""
        target = os.path.join(f"{self.directory}-unusable", f"{step}-{int(time.time())}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.move(os.path.join(self.directory, str(step)), target)
        # A fresh manager: after a failed restore orbax's handlers can be left in a state that
        # refuses the next restore or save (reload() is not enough).
        self._fresh_manager()
        return target

    def close(self) -> None:
        self._manager.close()
