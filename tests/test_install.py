"""The core install is lean: the grid world's RL packages are an extra (``'.[rl]'``, part of
``'.[test]'``), nothing else imports them, and a grid-world run without them says how to get
them in one sentence (status 2)."""

import os
import subprocess
import sys

import pytest
import tomllib
from conftest import load_config

from nalu_jax.config import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RL = ("rlax", "distrax")


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def test_rl_packages_are_an_extra_that_the_tests_include():
    project = _project()
    core = " ".join(project["dependencies"])
    extras = project["optional-dependencies"]
    assert not any(name in core for name in RL)
    assert all(any(d.startswith(name) for d in extras["rl"]) for name in RL)
    assert "nalu_jax[rl]" in extras["test"]


@pytest.mark.parametrize(
    "module",
    ["nalu_jax.main", "launch.reproduce", "launch.compare_models", "launch.recurrent_lengths",
     "launch.best_of"],
)  # fmt: skip
def test_the_library_and_every_entry_point_import_without_them(module):
    code = (
        f"import sys, nalu_jax, nalu_jax.experiments, nalu_jax.reproduce.check, {module}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('rlax', 'distrax', 'tensorflow_probability')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_grid_world_without_them_says_how_to_install(monkeypatch):
    from nalu_jax.experiments import gridworld

    for name in RL:
        monkeypatch.setitem(sys.modules, name, None)  # `import rlax` raises ImportError
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[rl\]'"):
        gridworld.validate(load_config("gridworld", "smoke"))
