"""README.md, WORKSPACE.md and results/README.md state the same facts, and the code agrees:
the recurrent config's default protocol, the default ``seed_block`` per experiment, and
whether a committed cell is replaced."""

import os
import re

import pytest
from conftest import ROOT

from nalu_jax.config import load_config
from nalu_jax.engine.blocks import resolve_seed_block

DOCS = ("README.md", "WORKSPACE.md", os.path.join("results", "README.md"))
#: the per-experiment seed blocks as the documents list them: (label, config, variant string)
SEED_BLOCKS = (("arithmetic", "arithmetic", None), ("recurrent", "recurrent", None),
               ("single-module", "single_module", None), ("identity", "identity", None),
               ("grid world", "gridworld", None), ("number translation", "number_translation", None),
               ("sequential MNIST", "sequential_mnist", None))  # fmt: skip


def text(name: str) -> str:
    with open(os.path.join(ROOT, name)) as f:
        return re.sub(r"\s+", " ", f.read())  # line breaks are layout, not content


def default_protocol() -> str:
    """The protocol the recurrent config gives with no variant."""
    plain = load_config("recurrent").to_dict()
    found = [p for p in ("spec", "reproduce")
             if load_config("recurrent", f"protocol={p}").to_dict() == plain]  # fmt: skip
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("doc", DOCS)
def test_recurrent_default_protocol(doc):
    default = default_protocol()
    other = {"spec": "reproduce", "reproduce": "spec"}[default]
    assert f"`protocol={default}` (the default)" in text(doc)
    assert f"`protocol={other}` (the default)" not in text(doc)


@pytest.mark.parametrize("doc", DOCS)
def test_seed_blocks(doc):
    configs = {label: load_config(name, arg) for label, name, arg in SEED_BLOCKS}
    assert {c.seed_block for c in configs.values()} == {"auto"}
    # what "auto" resolves to on the CPU (engine/blocks.py): the config's own block
    blocks = {
        label: resolve_seed_block(c, platform="cpu").seed_block for label, c in configs.items()
    }
    listed = ", ".join(f"{label} {blocks[label]}" for label, _, _ in SEED_BLOCKS)
    assert (
        f'`seed_block` defaults to "auto": on CPU it resolves to the per-experiment values ({listed})'
        in text(doc)
    )


REPLACED = ("A committed cell with another config is left alone by `launch/reproduce.py` unless "
            "`--overwrite`, and replaced by `launch/compare_models.py --results` and "
            "`nalu_jax.main --results` when their run finishes, unless it holds the same "
            "protocol with other seeds (kept: a run of fewer or other seeds would lose some).")  # fmt: skip


@pytest.mark.parametrize("doc", DOCS)
def test_replacement_rule_is_stated(doc):
    assert REPLACED in text(doc)


def test_replacement_rule_holds_in_the_launcher(tmp_path):
    """``launch/reproduce.py``'s plan keeps a cell of another config unless ``overwrite``."""
    import json

    from nalu_jax.reproduce import _plan, specs
    from nalu_jax.reproduce.results import config_dict

    spec = specs.table("iclr2020-arithmetic")
    cell = next(c for c in specs.cells(spec, ["nau"], ["add"]))
    cfg = specs.cell_config(spec, cell, num_seeds=2, num_steps=1000)
    rdir = tmp_path / "results" / spec.name / cell.key
    rdir.mkdir(parents=True)
    other = config_dict(cfg)
    other["num_steps"] = 2000  # another budget
    (rdir / "config.json").write_text(json.dumps(other))
    (rdir / "provenance.json").write_text(json.dumps({"batches": []}))
    (rdir / "seeds.csv").write_text("seed\n0\n1\n")
    args = (spec, [cell], {cell.key: cfg}, str(tmp_path / "w"), str(tmp_path / "results"))
    kept = _plan(*args, overwrite=False, log=lambda s: None)[cell.key]
    replaced = _plan(*args, overwrite=True, log=lambda s: None)[cell.key]
    assert kept[0] == "run" and kept[3] is None  # runs in the workdir, commits nothing
    assert replaced[0] == "run" and replaced[3] == str(rdir)
