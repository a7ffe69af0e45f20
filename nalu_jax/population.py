"""Seeds as an axis: run a per-seed function over a population in fixed-width blocks.

``jax.vmap`` over all S seeds lets XLA pick kernels by S (e.g. a different dot or reduction
strategy at 100 seeds than at 6), so seed k's floats would depend on how many seeds ran with
it. Here the population is padded to whole blocks of ``block`` seeds and ``lax.map`` runs the
same compiled ``vmap``-of-``block`` body on every block: seed k's result is bitwise the same
alone, among 1,000 others, or at any position (``tests/test_engine.py`` checks this).
"""

from __future__ import annotations

import math

import jax
import numpy as np


def padded_size(num_seeds: int, block: int) -> int:
    """Seeds rounded up to whole blocks."""
    return math.ceil(num_seeds / block) * block


def pad_seed_numbers(seed_numbers, block: int) -> np.ndarray:
    """Append copies of the last seed number so the population fills whole blocks.

    The copies are computed and thrown away; callers keep the first ``len(seed_numbers)``.
    """
    seeds = np.asarray(seed_numbers)
    extra = padded_size(len(seeds), block) - len(seeds)
    return np.concatenate([seeds, np.repeat(seeds[-1:], extra)])


def blocked(fn, block: int, in_axes):
    """``fn`` on one seed → the same on ``[S, ...]`` (S a multiple of ``block``).

    ``in_axes`` as for ``jax.vmap``; arguments with axis ``None`` are shared by all seeds.
    """
    vfn = jax.vmap(fn, in_axes=in_axes)

    def split(x):
        return x.reshape((x.shape[0] // block, block) + x.shape[1:])

    def merge(x):
        return x.reshape((x.shape[0] * block,) + x.shape[2:])

    def run(*args):
        mapped = [i for i, ax in enumerate(in_axes) if ax == 0]
        blocks = tuple(jax.tree.map(split, args[i]) for i in mapped)

        def body(per_block):
            full = list(args)
            for i, value in zip(mapped, per_block, strict=True):
                full[i] = value
            return vfn(*full)

        return jax.tree.map(merge, jax.lax.map(body, blocks))

    return run


class DevicePopulation:
    """A padded population split into equal, contiguous shares, one per local device.

    Every device runs the SAME single-device program on its share (dispatch is asynchronous,
    so the devices work concurrently). Sharding one program across devices (``shard_map``,
    ``pmap``) compiles differently from the one-device program and changed the last bits of
    the training results; this way seed k's numbers do not depend on the device count.
    """

    def __init__(self, devices=None):
        self.devices = list(devices if devices is not None else jax.local_devices())

    def split(self, tree) -> list:
        """``tree`` with a leading population axis → one share per device, on that device."""
        size = jax.tree.leaves(tree)[0].shape[0]
        share = size // len(self.devices)
        if share * len(self.devices) != size:
            raise ValueError(f"population {size} does not split over {len(self.devices)} devices")
        return [
            jax.device_put(jax.tree.map(lambda x, i=i: x[i * share : (i + 1) * share], tree), d)
            for i, d in enumerate(self.devices)
        ]

    def replicate(self, tree) -> list:
        """One copy of ``tree`` per device (shared arguments: hyperparameters, data)."""
        return [jax.device_put(tree, d) for d in self.devices]

    def compile(self, fn, *per_device_args) -> list:
        """``fn`` (already jitted) lowered and compiled for each device's arguments."""
        from concurrent.futures import ThreadPoolExecutor

        def one(args):
            return fn.lower(*args).compile()

        with ThreadPoolExecutor(len(self.devices)) as pool:  # XLA compiles outside the GIL
            return list(pool.map(one, zip(*per_device_args, strict=True)))

    @staticmethod
    def run(compiled: list, *per_device_args) -> list:
        """Dispatch each device's compiled function on its arguments (returns at once)."""
        return [
            f(*args) for f, args in zip(compiled, zip(*per_device_args, strict=True), strict=True)
        ]

    @staticmethod
    def gather(parts: list):
        """Device shares → one host (numpy) tree in population order."""
        return jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *parts)
