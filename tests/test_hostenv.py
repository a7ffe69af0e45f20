"""XLA:CPU flags set before JAX starts (``nalu_jax.hostenv``)."""

import os

import pytest

from nalu_jax import hostenv


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
