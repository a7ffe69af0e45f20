"""How many seeds one program call vmaps: ``config.seed_block``, and what ``"auto"`` means.

The run loop (``engine.loop``) trains a device's runs in blocks of ``seed_block`` (padded),
one after another inside each compiled step. On XLA:CPU small blocks suit the caches, and
each config names the block its committed results were computed with (``cpu_seed_block``;
the bits depend on it). On an accelerator a step of a small block is latency-bound: ten
blocks of 10 seeds take about ten times as long as one block of 100. So ``"auto"`` resolves to:

- on the CPU, ``cpu_seed_block`` (every committed CPU result keeps its bits);
- on a GPU or TPU, all of a device's runs (seeds × sweep settings of a program, this
  process's share) in one block. Every run's state is on its device whatever the block, so
  the memory check of the run (``engine.run.check_memory``, done with the resolved block) is
  what bounds it; one block also pads least.

``resolve_seed_block`` writes the resolved integer into the config before the run compares
or records it (``config.json``, committed results), so a run's config names the block it ran.
"""

from __future__ import annotations

import math

from nalu_jax.config import SEED_BLOCK_AUTO, ConfigError, check_seed_block


def padded_size(num_seeds: int, block: int) -> int:
    """Seeds rounded up to whole blocks."""
    return math.ceil(num_seeds / block) * block


def seed_block_for(value, cpu_seed_block, *, platform: str, runs: int, devices: int) -> int:
    """The block ``value`` (``"auto"`` or an int) asks for: an int as given; ``"auto"`` is
    ``cpu_seed_block`` on ``platform`` ``"cpu"``, elsewhere ``ceil(runs / devices)`` (all of a
    device's ``runs``, at least 1)."""
    value = check_seed_block(value)
    if value != SEED_BLOCK_AUTO:
        return value
    if platform == "cpu":
        if cpu_seed_block is None:
            raise ConfigError(
                "seed_block 'auto' needs cpu_seed_block (the block on the CPU) in the config; "
                "set one, or give seed_block an integer."
            )
        block = check_seed_block(cpu_seed_block)
        if block == SEED_BLOCK_AUTO:
            raise ConfigError("cpu_seed_block must be an integer >= 1, got 'auto'.")
        return block
    return max(1, -(-int(runs) // max(1, int(devices))))


def num_settings(config) -> int:
    """The sweep settings of ``config`` (1 when nothing is swept): the grid's size, each
    non-empty entry of ``config.sweep`` one axis (a ``SWEEP_ZIPPED`` name, e.g. ``range_pair``,
    too: ``engine.sweep.expand`` makes the same grid)."""
    sweep = config.get("sweep") or {}
    count = 1
    for name in sweep.keys():
        values = sweep.get(name)
        count *= len(values) if values is not None and len(values) > 0 else 1
    return count


def _this_host():
    """``(platform, local devices, processes)`` as JAX reports them."""
    import jax

    return jax.local_devices()[0].platform, jax.local_device_count(), jax.process_count()


def _process_runs(config, processes) -> int:
    """This process's share of ``config``'s runs (seeds × sweep settings), rounded up."""
    return -(-int(config.num_seeds) * num_settings(config) // max(1, int(processes or 1)))


def resolve_seed_block(config, *, platform=None, devices=None, processes=None):
    """Set ``config.seed_block`` to the block this process runs with and drop
    ``cpu_seed_block`` (an integer block already given stays). ``platform``, ``devices`` (local
    devices) and ``processes``: default what JAX says. Returns ``config`` (changed in place)."""
    value, cpu = config.get("seed_block", SEED_BLOCK_AUTO), config.get("cpu_seed_block")
    if value == SEED_BLOCK_AUTO and platform is None:
        platform, devices, processes = _this_host()
    runs = _process_runs(config, processes)
    block = seed_block_for(value, cpu, platform=platform, runs=runs, devices=devices or 1)
    with config.unlocked():
        del config["seed_block"]  # a copied config's field is typed as "auto" was: a str
        config.seed_block = block
        if "cpu_seed_block" in config:
            del config["cpu_seed_block"]
    return config


def fit_seed_block(config, *, platform=None, devices=None, processes=None):
    """On an accelerator, lower ``config.seed_block`` (an integer) to a device's share of the
    config's runs when it is larger: a block resolved for a cell's full seed count, run for
    fewer (the seeds that extend a committed cell), would otherwise train padding. On the CPU
    the block stays, since it decides the last bits of every seed there. Returns ``config``
    (changed in place)."""
    if platform is None:
        platform, devices, processes = _this_host()
    block = check_seed_block(config.seed_block)
    if platform == "cpu" or block == SEED_BLOCK_AUTO:
        return config
    # what "auto" resolves to there for these runs: all of a device's runs in one block
    share = seed_block_for(SEED_BLOCK_AUTO, None, platform=platform,
                           runs=_process_runs(config, processes), devices=devices or 1)  # fmt: skip
    if share < block:
        config.seed_block = share
    return config


def padding_note(runs: int, block: int, devices: int) -> str | None:
    """A sentence for a population whose padding is a third or more of what it trains: ``runs``
    runs in blocks of ``block`` on each of ``devices`` devices train as whole blocks (the copies
    are computed and dropped), e.g. 5 seeds in blocks of 10 on 2 CPU devices train as 20. It
    names the block that trains the least padding. None when the padding is smaller."""
    runs, block, devices = int(runs), int(block), max(1, int(devices))
    padded = padded_size(runs, block * devices)
    if runs <= 0 or 3 * (padded - runs) < padded:
        return None
    fit = -(-runs // devices)
    return (
        f"warning: {runs} runs train as {padded} (blocks of {block} on each of {devices} device"
        f"{'s' if devices > 1 else ''}; the padding is computed and dropped): "
        f"--config.seed_block={fit} trains {padded_size(runs, fit * devices)} (a run's last "
        f"bits depend on its block)."
    )
