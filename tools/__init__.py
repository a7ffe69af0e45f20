"""Command-line scripts; run from the repository root as ``python -m tools.NAME``."""

import os
import subprocess

#: the checkout the tools belong to
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commit_or_refuse(parser, rev: str) -> str:
    """The full hash of commit ``rev`` of this checkout, or argparse's refusal (status 2)
    naming ``--against`` before anything is created (a worktree, a temporary directory)."""
    out = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=CHECKOUT, capture_output=True, text=True,
    )  # fmt: skip
    if out.returncode != 0:
        parser.error(f"--against {rev!r} names no commit of the checkout at {CHECKOUT}.")
    return out.stdout.strip()
