"""Orbax checkpoints of the whole population (all seeds' states and the evaluation history).

The pytree is saved as a flat ``{"leaf_i": array}`` dict so that restoring needs only the
structure of a freshly initialised state (``nnx.State`` and optax states round-trip exactly).
Orbax writes to a temporary folder and renames it, so a checkpoint is either whole or absent.
"""

from __future__ import annotations

import hashlib
import os

import jax
import numpy as np
import orbax.checkpoint as ocp

from nalu_jax.config import ConfigError

LAYOUT = "layout"  # the saved tree's structure fingerprint (uint8 [32])


def layout(tree) -> np.ndarray:
    """A fingerprint of ``tree``'s structure, leaf shapes and dtypes (sha256 as uint8 [32]):
    a checkpoint restores only into the layout that wrote it."""
    leaves, treedef = jax.tree.flatten(tree)
    text = repr(treedef) + repr([(np.shape(x), str(np.asarray(x).dtype)) for x in leaves])
    return np.frombuffer(hashlib.sha256(text.encode()).digest(), np.uint8).copy()


class Checkpointer:
    """Keeps the latest ``max_to_keep`` checkpoints of ``tree`` under ``directory``."""

    def __init__(self, directory: str, max_to_keep: int = 2, *, process: int | None = None):
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
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, **extra),
        )

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def save(self, step: int, tree) -> None:
        leaves = jax.tree.leaves(tree)
        # Orbax refuses zero-size arrays; those are restored from the template instead.
        flat = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(leaves) if np.size(x)}
        flat[LAYOUT] = layout(tree)
        self._manager.save(step, args=ocp.args.StandardSave(flat), force=True)
        self._manager.wait_until_finished()

    def restore(self, step: int, like):
        """The checkpoint at ``step`` in the structure (and dtypes) of ``like``."""
        leaves, treedef = jax.tree.flatten(like)
        target = {
            f"leaf_{i:05d}": jax.ShapeDtypeStruct(np.shape(x), np.asarray(x).dtype)
            for i, x in enumerate(leaves)
            if np.size(x)
        }
        target[LAYOUT] = jax.ShapeDtypeStruct((32,), np.uint8)
        try:
            flat = self._manager.restore(step, args=ocp.args.StandardRestore(target))
            same = np.array_equal(np.asarray(flat[LAYOUT]), layout(like))
        except (KeyError, ValueError, TypeError):  # no fingerprint, or other leaves
            same = False
        if not same:
            raise ConfigError(
                f"the checkpoint at step {step} in {self.directory!r} was written with another "
                "state layout (an older nalu_jax or another model); pass --overwrite to start "
                "the run afresh."
            )
        restored = [flat.get(f"leaf_{i:05d}", x) for i, x in enumerate(leaves)]
        return jax.tree.unflatten(treedef, restored)

    def close(self) -> None:
        self._manager.close()
