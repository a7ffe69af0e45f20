"""Process set-up that must happen before JAX starts (used by ``main`` and the benchmarks).

On CPU, XLA runs one device's program on one thread at a time for ops as small as ours, so
the engine shards seeds over several host "devices": one per core by default.
"""

from __future__ import annotations

import os

FLAG = "--xla_force_host_platform_device_count"


def configure_host_devices(count: int | None = None) -> None:
    """Expose ``count`` (default: the usable cores) CPU devices unless XLA_FLAGS already says."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FLAG in flags:
        return
    if count is None:
        count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}={max(1, int(count or 1))}".strip()
