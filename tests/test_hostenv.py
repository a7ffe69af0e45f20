"""XLA:CPU flags set before JAX starts (``nalu_jax.runtime.hostenv``)."""

import os

import pytest

from nalu_jax.runtime import hostenv


@pytest.fixture
def cpuinfo(tmp_path):
    def write(flags: str) -> str:
        path = tmp_path / "cpuinfo"
        path.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {flags}\n\n")
        return str(path)

    return write


def test_has_avx512_reads_the_flags_line(cpuinfo, tmp_path):
    assert hostenv.has_avx512(cpuinfo("fpu sse2 avx avx2 fma avx512f avx512dq"))
    assert not hostenv.has_avx512(cpuinfo("fpu sse2 avx avx2 fma"))
    # a flag that merely starts with avx512 is not AVX-512F
    assert not hostenv.has_avx512(cpuinfo("avx2 avx512_bf16"))
    assert not hostenv.has_avx512(str(tmp_path / "missing"))


def test_cpu_vector_width_is_the_flags_width_capped_by_the_cpus(cpuinfo, tmp_path):
    flag = "--xla_cpu_prefer_vector_width"
    avx512 = cpuinfo("fpu sse2 avx avx2 fma avx512f")
    assert hostenv.cpu_vector_width(f"--xla_foo=1 {flag}=512", avx512) == 512
    assert hostenv.cpu_vector_width("", avx512) == 256  # LLVM's preferred width
    assert hostenv.cpu_vector_width(f"{flag}=128", avx512) == 128
    avx2 = cpuinfo("fpu sse2 avx avx2 fma")
    assert hostenv.cpu_vector_width(f"{flag}=512", avx2) == 256
    assert hostenv.cpu_vector_width("", cpuinfo("fpu sse2")) == 128
    assert hostenv.cpu_vector_width("", str(tmp_path / "missing")) is None
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd\n")
    assert hostenv.cpu_vector_width("", str(arm)) is None


@pytest.fixture(autouse=True)
def _on_cpu(monkeypatch):
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.delenv("JAX_PLATFORM_NAME", raising=False)
    monkeypatch.setattr(hostenv, "_installed", lambda name: False)  # no accelerator plugin


@pytest.mark.parametrize("avx512", [True, False])
def test_configure_sets_devices_and_vector_width(monkeypatch, avx512):
    monkeypatch.setattr(hostenv, "has_avx512", lambda: avx512)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    hostenv.configure_host_devices(3)
    flags = os.environ["XLA_FLAGS"].split()
    assert flags[0] == "--xla_cpu_enable_fast_math=false"
    assert "--xla_force_host_platform_device_count=3" in flags
    assert ("--xla_cpu_prefer_vector_width=512" in flags) is avx512


def test_configure_keeps_what_the_user_set(monkeypatch):
    monkeypatch.setattr(hostenv, "has_avx512", lambda: True)
    user = "--xla_force_host_platform_device_count=1 --xla_cpu_prefer_vector_width=256"
    monkeypatch.setenv("XLA_FLAGS", user)
    hostenv.configure_host_devices(4)
    assert os.environ["XLA_FLAGS"] == user
    # the device count given, the vector width added
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    hostenv.configure_host_devices(4)
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=1",
        "--xla_cpu_prefer_vector_width=512",
    ]


def test_platform_is_read_before_jax_starts():
    none = lambda name: False
    assert hostenv.platform({}, none) == "cpu"
    assert hostenv.platform({"JAX_PLATFORMS": "cuda,cpu"}, none) == "gpu"
    assert hostenv.platform({"JAX_PLATFORMS": "tpu"}, none) == "tpu"
    assert hostenv.platform({"JAX_PLATFORM_NAME": "gpu"}, none) == "gpu"
    # an installed plugin: JAX prefers its accelerator, unless JAX_PLATFORMS says otherwise
    cuda = lambda name: name == "jax-cuda12-plugin"
    assert hostenv.platform({}, cuda) == "gpu"
    assert hostenv.platform({}, lambda name: name == "libtpu") == "tpu"
    assert hostenv.platform({"JAX_PLATFORMS": "cpu"}, cuda) == "cpu"


@pytest.mark.parametrize("env", [{"JAX_PLATFORMS": "cuda"}, {"JAX_PLATFORMS": "tpu"}, {}])
def test_configure_leaves_an_accelerator_alone(monkeypatch, env):
    monkeypatch.setattr(hostenv, "has_avx512", lambda: True)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    if not env:  # no JAX_PLATFORMS, a CUDA plugin installed
        monkeypatch.setattr(hostenv, "_installed", lambda name: name == "jax-cuda12-plugin")
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=2")
    hostenv.configure_host_devices(4)
    assert os.environ["XLA_FLAGS"] == "--xla_gpu_autotune_level=2"
    monkeypatch.delenv("XLA_FLAGS")
    hostenv.configure_host_devices(4)
    assert "XLA_FLAGS" not in os.environ
    # the same call on the CPU sets both flags
    hostenv.configure_host_devices(4, on="cpu")
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=4",
        "--xla_cpu_prefer_vector_width=512",
    ]


def test_accelerator_extras_pin_the_jax_range():
    tomllib = pytest.importorskip("tomllib")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    project = tomllib.load(open(os.path.join(root, "pyproject.toml"), "rb"))["project"]
    jax_range = next(d for d in project["dependencies"] if d.startswith("jax>"))[len("jax") :]
    extras = project["optional-dependencies"]
    assert extras["cuda12"] == [f"jax[cuda12]{jax_range}"]
    assert extras["tpu"] == [f"jax[tpu]{jax_range}"]
    assert set(hostenv.ACCELERATOR_PLUGINS.values()) == {"gpu", "tpu"}
