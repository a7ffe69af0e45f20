"""The README's Python examples run as written (from the repository root)."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_has_the_two_examples():
    blocks = python_blocks()
    assert len(blocks) == 2
    assert "from nalu_jax import NMU, make_unit" in blocks[0]
    assert "run(EXPERIMENTS" in blocks[1]


def test_readme_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the example's workdir lands in tmp_path
    monkeypatch.syspath_prepend(ROOT)  # `configs` importable as in the repository root
    for block in python_blocks():
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[[12.]]"  # NMU with W = 1 multiplies exactly
    assert re.fullmatch(r"\d of 4 seeds solved", out[1])
    assert os.path.exists(tmp_path / "runs/from_python/seeds.csv")
