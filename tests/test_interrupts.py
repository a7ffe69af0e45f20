"""Ctrl-C and SIGTERM behave alike in every entry point: one sentence on stderr, no traceback,
status 130 / 143, and a training run saves first (``nalu_jax.main``: tests/test_faults.py).

Two entry points train (``launch.reproduce``, ``launch.compare_models``): the signal arrives
once the first checkpoint exists, so the run saves at the next period boundary. Two only read
finished runs (``launch.recurrent_lengths``, ``launch.best_of``): the file they read first is a
named pipe, so the signal arrives while they are blocked reading it."""

import errno
import glob
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: faulthandler on: a process that outlives its deadline is sent SIGABRT, and every thread's
#: stack comes back in the failure
ENV = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONFAULTHANDLER": "1"}


def _start(args):
    return subprocess.Popen(
        [sys.executable, "-m", *args], cwd=ROOT, env=ENV, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _wait(proc, ready, what):
    deadline = time.monotonic() + 300
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"the process ended before {what}: {proc.communicate()[1][-2000:]}"


def _one_sentence(proc, sig, again_after=None):
    """Send ``sig``, then the checks; ``again_after``: send it once more if the process is
    still running that many seconds later (below)."""
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=again_after or 300)
    except subprocess.TimeoutExpired:
        err = None
    if err is None and again_after:
        proc.send_signal(sig)
        try:
            _, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            pass
    if err is None:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=60)
        pytest.fail(f"still running 300 s after signal {sig}; its threads:\n{err[-8000:]}")
    assert proc.returncode == 128 + sig, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    errors = [ln for ln in err.splitlines() if ln.startswith("nalu_jax: error")]
    assert len(errors) == 1 and "interrupted" in errors[0], err[-2000:]
    return errors[0]


class _Writer:
    """The writing end of a named pipe, opened once a process reads it: the reader then
    blocks in ``read`` until the end is closed (``close``)."""

    def __init__(self, fifo):
        self.fifo, self.fd = fifo, None

    def __call__(self) -> bool:
        try:
            self.fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:  # no reader yet
                return False
            raise
        return True

    def close(self):
        if self.fd is not None:
            os.close(self.fd)


def _checkpointed(pattern):
    return lambda: bool(glob.glob(pattern))


@pytest.mark.slow
def test_reproduce_saves_and_exits_130_on_sigint(tmp_path):
    proc = _start(["launch.reproduce", "--table=iclr2020-arithmetic", "--ops=add",
                   "--models=nau", "--seeds=2", "--steps=400000", "--smoke", "--noprogress",
                   "--calibration_steps=0", f"--workdir={tmp_path}"])  # fmt: skip
    _wait(proc, _checkpointed(f"{tmp_path}/cells/add-nau/checkpoints/[0-9]*"), "a checkpoint")
    line = _one_sentence(proc, signal.SIGINT)
    assert "saved at step" in line


@pytest.mark.slow
def test_compare_models_saves_and_exits_143_on_sigterm(tmp_path):
    proc = _start(["launch.compare_models", "--config=configs/arithmetic.py:op=add,smoke",
                   "--config.num_steps=400000", "--config.num_seeds=2", "--models=nau",
                   "--noprogress", "--config.tensorboard=False", f"--workdir={tmp_path}"])  # fmt: skip
    _wait(proc, _checkpointed(f"{tmp_path}/nau/checkpoints/[0-9]*"), "a checkpoint")
    line = _one_sentence(proc, signal.SIGTERM)
    assert "saved at step" in line


def _interrupted_while_reading(tmp_path, name: str, args: list, sig) -> None:
    """Start ``args`` with ``WORKDIR/nau/NAME`` a FIFO nobody writes yet (the launcher blocks
    opening it), then send ``sig``: one sentence and its status."""
    os.makedirs(tmp_path / "nau")
    fifo = str(tmp_path / "nau" / name)
    os.mkfifo(fifo)
    proc = _start([*args, f"--workdir={tmp_path}"])
    writer = _Writer(fifo)
    _wait(proc, writer, f"it opened {name}")
    # CPython runs a Python-level handler between bytecodes; its C handler only notes the
    # signal. One that lands after the interpreter's last look and before the blocking read
    # starts (the reader leaves open() as the writer's open lets it, the moment the signal is
    # sent) is handled when the read returns: at a pipe nobody writes, never. Full suites hung
    # here three times, the main thread at the read; a plain Python reader of a pipe, with no
    # library code, hung at 27 of 150 signals sent so, and a second signal ended each (130).
    # A user presses Ctrl-C again; the test does 20 s on, and still asks for one sentence.
    try:
        _one_sentence(proc, sig, again_after=20)
    finally:
        writer.close()


def test_recurrent_lengths_exits_130_on_sigint_while_reading(tmp_path):
    args = ["launch.recurrent_lengths", "--config=configs/recurrent.py:model=nau,smoke",
            "--models=nau"]  # fmt: skip
    _interrupted_while_reading(tmp_path, "config.json", args, signal.SIGINT)


def test_best_of_exits_143_on_sigterm_while_reading(tmp_path):
    args = ["launch.best_of", "--k=2", "--models=nau"]
    _interrupted_while_reading(tmp_path, "seeds.csv", args, signal.SIGTERM)
