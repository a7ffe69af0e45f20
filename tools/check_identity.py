"""Byte-identity check: run a fixed list of configs here and at another commit, compare files.

    python -m tools.check_identity --against=698c75d [--keep=/tmp/identity] [--only=NAME,...]
    python -m tools.check_identity --against=HEAD --only=models   # every model of MODELS
    python -m tools.check_identity --against=HEAD --only=single_module   # every benchmark unit

A refactor proves itself by giving the same per-seed results as the commit before it. This
script checks out ``--against`` into a temporary git worktree, runs every case below there and
in this working tree (same Python, same machine, ``--progress=false``, a private threshold
cache each), and compares ``seeds.csv`` and ``metrics.jsonl`` (plus the other per-seed files a
case lists) byte for byte. It prints one line per case and file, and exits 1 if any differs;
the outputs are removed at the end unless ``--keep`` names where to keep them. An
``--against`` that names no commit is refused (status 2) before anything is created. Not run
by CI (it takes a few minutes); a developer tool.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

from tools import CHECKOUT as HERE
from tools import commit_or_refuse


def _path(tree: str) -> str:
    """``PYTHONPATH`` with ``tree`` first: its code is the one imported, and dependencies
    installed with ``pip --target`` on the existing path stay importable."""
    return os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))


#: name → (main.py arguments, files compared)
CASES = {
    "arithmetic_nmu_mul": (
        ["--config=configs/arithmetic.py:model=nmu,op=mul,seeds=8,steps=3000"],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "single_module_nau_add_r7": (
        ["--config=configs/single_module.py:op=add,model=nau,range=7"],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "recurrent_smoke": (
        ["--config=configs/recurrent.py:model=nau,op=add,smoke"],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "sequential_mnist_sum_smoke": (
        ["--config=configs/sequential_mnist.py:task=sum,model=nau,smoke"],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "sequential_mnist_28_smoke": (  # 28×28 images: the CNN's band convolutions
        [
            "--config=configs/sequential_mnist.py:task=sum,model=nau,smoke",
            "--config.data.source=synthetic",
            "--config.data.synthetic_side=28",
        ],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "number_translation_smoke": (
        ["--config=configs/number_translation.py:model=nau,smoke"],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "identity_smoke": (
        ["--config=configs/identity.py:smoke"],
        ("seeds.csv", "errors.csv"),
    ),
    "gridworld_smoke": (  # both agents (LSTM, NAC₊ memory), A2C
        ["--config=configs/gridworld.py:smoke"],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "arithmetic_nmu_h10": (  # an NMU over 10 inputs: a product longer than SMALL_PRODUCT
        [
            "--config=configs/arithmetic.py:model=nmu,op=mul,seeds=8,steps=2000",
            "--config.model.hidden_size=10",
        ],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "arithmetic_gated_both": (  # the gated NAU/NMU in both layers: an NMU over 100 inputs
        [
            "--config=configs/arithmetic.py:model=gated_nau_nmu,op=mul,seeds=8,steps=2000",
            "--config.model.first_layer=same",
        ],
        ("seeds.csv", "metrics.jsonl"),
    ),
    "lr_sweep": (
        ["--config=configs/arithmetic.py:model=nmu,op=mul,smoke", "--config.sweep.lr=(1e-3,1e-2)"],
        tuple(f"settings/00{h}/{f}" for h in (0, 1) for f in ("seeds.csv", "metrics.jsonl")),
    ),
}


def _model_cases() -> dict:
    """``model_<name>``: the arithmetic task (×, 8 seeds, 2,000 steps) for every model of
    ``nalu_jax.models.MODELS``; ``--only=models`` selects them all (a speed change touching
    every model proves itself here)."""
    from nalu_jax.models import MODELS

    return {
        f"model_{m}": (
            [f"--config=configs/arithmetic.py:model={m},op=mul,seeds=8,steps=2000"],
            ("seeds.csv", "metrics.jsonl"),
        )
        for m in MODELS
    }


def _single_module_cases() -> dict:
    """``single_module_<unit>``: every unit of the single-module benchmark (× units on ×,
    NAC₊/NAU on +; range 7, 4 seeds, 6,000 steps with the λ ramp over steps 1,000–2,000 so
    the sparsity regulariser and iNALU's stall test run); ``--only=single_module`` selects
    them all."""
    from nalu_jax.tasks.single_module import MODELS_BY_OP

    units = dict.fromkeys(MODELS_BY_OP["mul"] + MODELS_BY_OP["add"])
    return {
        f"single_module_{u}": (
            [
                f"--config=configs/single_module.py:op={'mul' if u in MODELS_BY_OP['mul'] else 'add'}"
                f",model={u},seeds=4,steps=6000",
                "--config.eval_size=1000",
                "--config.task.threshold_samples=100000",
                "--config.train.reg_start=1000",
                "--config.train.reg_end=2000",
            ],
            ("seeds.csv", "metrics.jsonl"),
        )
        for u in units
    }


CASES.update(_model_cases())
CASES.update(_single_module_cases())


def run_case(tree: str, args: list[str], workdir: str, cache: str) -> None:
    env = dict(os.environ, PYTHONPATH=_path(tree), NALU_JAX_CACHE=cache)
    cmd = [sys.executable, "-m", "nalu_jax.main", *args, f"--workdir={workdir}", "--progress=false"]
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {tree}:\n{out.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the commit to compare with")
    parser.add_argument(
        "--keep", help="keep both trees' outputs here and reuse the other commit's next time"
    )
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    opts = parser.parse_args()
    names = opts.only.split(",") if opts.only else list(CASES)
    for group, start in (("models", "model_"), ("single_module", "single_module_")):
        if group in names:
            names = [n for n in names if n != group] + [
                n for n in CASES if n.startswith(start) and n not in names
            ]
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {sorted(CASES)}")
    against = commit_or_refuse(parser, opts.against)
    root = opts.keep or tempfile.mkdtemp(prefix="nalu-identity-")
    old_tree = os.path.join(root, "tree-against")
    if os.path.exists(old_tree):
        subprocess.run(["git", "worktree", "remove", "--force", old_tree], cwd=HERE, check=False)
    differ = 0
    try:
        subprocess.run(
            ["git", "worktree", "add", "--detach", old_tree, against],
            cwd=HERE, check=True, capture_output=True,
        )  # fmt: skip
        for name in names:
            args, files = CASES[name]
            for side, tree in (("against", old_tree), ("here", HERE)):
                workdir = os.path.join(root, side, name)
                done = os.path.join(workdir, "summary.json")
                if side == "against" and opts.keep and os.path.exists(done):
                    continue  # --keep: the other commit's outputs from an earlier call
                shutil.rmtree(workdir, ignore_errors=True)
                run_case(tree, args, workdir, os.path.join(root, side, "cache"))
            for f in files:
                a, b = (os.path.join(root, s, name, f) for s in ("against", "here"))
                same = os.path.exists(a) and os.path.exists(b) and filecmp.cmp(a, b, shallow=False)
                differ += not same
                print(f"{name:28s} {f:28s} {'identical' if same else 'DIFFERS'}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", old_tree], cwd=HERE, check=False)
        if not opts.keep:  # the outputs were only for this comparison
            shutil.rmtree(root, ignore_errors=True)
    print(f"{differ} file(s) differ" if differ else "all identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
