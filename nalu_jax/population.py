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


def seed_mesh(devices=None):
    """A 1-D mesh over the local devices whose one axis, ``"seeds"``, carries the population."""
    from jax.sharding import Mesh

    return Mesh(np.array(devices if devices is not None else jax.local_devices()), ("seeds",))


def sharded(fn, block: int, in_axes, mesh):
    """``blocked(fn)`` on each device's share of the seeds (``shard_map`` over ``"seeds"``).

    Each device runs whole blocks with the same compiled body, so results do not depend on
    the number of devices either. The population must be a multiple of ``block × devices``.
    """
    from jax.sharding import PartitionSpec as P

    specs = tuple(P("seeds") if ax == 0 else P() for ax in in_axes)
    return jax.shard_map(
        blocked(fn, block, in_axes), mesh=mesh, in_specs=specs, out_specs=P("seeds")
    )


def shard_population(tree, mesh):
    """Place a population pytree (leading seed axis) across ``mesh``."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    return jax.device_put(tree, NamedSharding(mesh, P("seeds")))
