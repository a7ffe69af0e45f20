"""Process set-up that must happen before JAX starts (used by ``main`` and the benchmarks).

On CPU, XLA runs one device's program on one thread at a time for ops as small as ours, so
the engine shards seeds over several host "devices": one per core by default. On AVX-512 CPUs
XLA's generated loops use 512-bit vectors: the arithmetic models' per-seed results are
byte-identical to 256-bit ones (``tools/check_identity.py``), the convolution and dense
reductions of sequential MNIST and the identity task sum in a different order (same
distribution, other bits), and steps run 15–75% faster (WORKSPACE "Profile").
"""

from __future__ import annotations

import os

FLAG = "--xla_force_host_platform_device_count"
VECTOR_FLAG = "--xla_cpu_prefer_vector_width"


def has_avx512(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU advertises AVX-512F (Linux ``/proc/cpuinfo``; False where unreadable)."""
    try:
        with open(cpuinfo) as f:
            return any(line.startswith("flags") and "avx512f" in line.split() for line in f)
    except OSError:
        return False


def configure_host_devices(count: int | None = None) -> None:
    """Before JAX starts, set the XLA:CPU flags the engine wants, each unless XLA_FLAGS says:

    - ``count`` (default: the usable cores) CPU devices, so seeds shard over the cores;
    - on AVX-512 CPUs, 512-bit vectors for XLA's generated loops (LLVM prefers 256 bits by
      default; what that changes and gains: the module docstring).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if FLAG not in flags:
        if count is None:
            count = (
                len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
            )
        flags = f"{flags} {FLAG}={max(1, int(count or 1))}"
    if VECTOR_FLAG not in flags and has_avx512():
        flags = f"{flags} {VECTOR_FLAG}=512"
    os.environ["XLA_FLAGS"] = flags.strip()
