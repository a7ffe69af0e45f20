"""The README's Python examples run as written from any directory and print what it says they
print; the facts it states about defaults match the code."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def python_blocks():
    return re.findall(r"```python\n(.*?)```", readme(), re.S)


def said_to_print(block: str) -> list[str]:
    """The lines a block says it prints: the trailing comment of each ``print(...)`` line."""
    return [ln.split("# ", 1)[1].strip() for ln in block.splitlines() if ln.startswith("print(")]


def test_readme_has_the_two_examples():
    blocks = python_blocks()
    assert len(blocks) == 2
    assert "from nalu_jax import NMU, make_unit" in blocks[0]
    assert "run(EXPERIMENTS" in blocks[1]
    assert said_to_print(blocks[0]) == ["[[12.]]"]  # NMU with W = 1 multiplies exactly
    assert said_to_print(blocks[1]) == ["0 of 4 seeds solved"]


def test_readme_examples_run_from_a_temporary_directory(tmp_path):
    # only the package is importable, as after an install: not the checkout's configs/ or tests/
    site = tmp_path / "site"
    site.mkdir()
    os.symlink(os.path.join(ROOT, "nalu_jax"), site / "nalu_jax")
    env = {**os.environ, "PYTHONPATH": str(site), "JAX_PLATFORMS": "cpu"}
    for i, block in enumerate(python_blocks()):
        cwd = tmp_path / f"example{i}"
        cwd.mkdir()
        (cwd / "example.py").write_text(block)
        out = subprocess.run(
            [sys.executable, "example.py"], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.splitlines() == said_to_print(block), out.stdout
        assert os.listdir(cwd) == ["example.py"]  # nothing written where it ran


# The seed blocks the README states per experiment: tests/test_docs_agree.py.
