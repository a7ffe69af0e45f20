"""Process set-up that must happen before JAX starts (used by ``main`` and the benchmarks).

On CPU, XLA runs one device's program on one thread at a time for ops as small as ours, so
the engine shards seeds over several host "devices": one per core by default. On AVX-512 CPUs
XLA's generated loops use 512-bit vectors: the arithmetic models' per-seed results are
byte-identical to 256-bit ones (``tools/check_identity.py``), the convolution and dense
reductions of sequential MNIST and the identity task sum in a different order (same
distribution, other bits), and steps run 15–75% faster (WORKSPACE at bcf7708, "Profile:
arithmetic step" and "Profile: sequence step").

On a GPU or TPU none of this applies: the platform's devices are the devices, and
``configure_host_devices`` leaves ``XLA_FLAGS`` as it is (``platform()`` says which platform
JAX will start on, without starting it).
"""

from __future__ import annotations

import importlib.metadata
import os

FLAG = "--xla_force_host_platform_device_count"
VECTOR_FLAG = "--xla_cpu_prefer_vector_width"


def _cpu_flags(cpuinfo: str) -> set[str] | None:
    """The first x86 ``flags`` line of a Linux ``/proc/cpuinfo`` (None: unreadable or absent)."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[-1].split())
    except OSError:
        pass
    return None


def has_avx512(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU advertises AVX-512F (Linux ``/proc/cpuinfo``; False where unreadable)."""
    return "avx512f" in (_cpu_flags(cpuinfo) or ())


def cpu_vector_width(flags: str | None = None, cpuinfo: str = "/proc/cpuinfo") -> int | None:
    """The vector width, in bits, of XLA:CPU's generated loops in a process with ``flags``
    (default: this one's ``XLA_FLAGS``): the width ``--xla_cpu_prefer_vector_width`` asks for
    (LLVM's preferred 256 where none is asked), capped by the widest the CPU has (512 with
    AVX-512F, 256 with AVX, 128 below). None where ``cpuinfo`` holds no x86 flags line (another
    architecture, or unreadable). Two CPUs of one name can differ here (a cloud "AMD EPYC" VM
    with AVX-512 and one without), and with it some reductions' last bits (module docstring)."""
    cpu = _cpu_flags(cpuinfo)
    if cpu is None:
        return None
    widest = 512 if "avx512f" in cpu else 256 if "avx" in cpu else 128
    asked = 256
    for part in (os.environ.get("XLA_FLAGS", "") if flags is None else flags).split():
        name, _, value = part.partition("=")
        if name == VECTOR_FLAG and value.isdigit():
            asked = int(value)
    return min(asked, widest)


#: distributions whose presence makes JAX start on an accelerator (``pip install -e
#: '.[cuda12]'`` / ``'.[tpu]'`` install them), and that platform
ACCELERATOR_PLUGINS = {
    "jax-cuda12-plugin": "gpu",
    "jax-cuda13-plugin": "gpu",
    "jax-rocm60-plugin": "gpu",
    "jax-rocm7-plugin": "gpu",
    "libtpu": "tpu",
    "libtpu-nightly": "tpu",
}


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def platform(environ=None, installed=None) -> str:
    """The platform JAX will start on, read before it starts: ``"cpu"``, ``"gpu"`` or
    ``"tpu"`` (another name as given). The first entry of ``JAX_PLATFORMS`` (or the older
    ``JAX_PLATFORM_NAME``) when set; otherwise an accelerator whose JAX plugin is installed
    (JAX prefers it), else the CPU. ``installed(distribution) -> bool`` is for tests."""
    environ = os.environ if environ is None else environ
    installed = installed or _installed
    names = environ.get("JAX_PLATFORMS") or environ.get("JAX_PLATFORM_NAME") or ""
    first = names.split(",")[0].strip().lower()
    if first:
        return {"cuda": "gpu", "rocm": "gpu"}.get(first, first)
    for dist, kind in ACCELERATOR_PLUGINS.items():
        if installed(dist):
            return kind
    return "cpu"


def configure_host_devices(count: int | None = None, *, on: str | None = None) -> None:
    """Before JAX starts, set the XLA:CPU flags the engine wants, each unless XLA_FLAGS says:

    - ``count`` (default: the usable cores) CPU devices, so seeds shard over the cores;
    - on AVX-512 CPUs, 512-bit vectors for XLA's generated loops (LLVM prefers 256 bits by
      default; what that changes and gains: the module docstring).

    ``on``: the platform JAX will start on (default ``platform()``); on any but ``"cpu"``
    nothing is set. (A machine with an accelerator plugin but no accelerator falls back to one
    CPU device: ``JAX_PLATFORMS=cpu`` gives it one device per core again.)
    """
    if (on or platform()) != "cpu":
        return
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
