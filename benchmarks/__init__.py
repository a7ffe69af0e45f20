"""Command-line scripts; run from the repository root as ``python -m benchmarks.NAME``."""

import sys


def non_positive(opts, names) -> str | None:
    """The sentence refusing the first of ``names`` (argparse fields) set below 1, if any; a
    field left at ``None`` passes, and a list (``nargs``) is refused for any element below 1."""
    for name in names:
        value = getattr(opts, name)
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(v is not None and v < 1 for v in values):
            return f"--{name} must be a positive integer."
    return None


def refuse_non_positive(opts, names) -> None:
    """Exit with status 2 and :func:`non_positive`'s sentence on stderr, if it has one."""
    if refusal := non_positive(opts, names):
        print(refusal, file=sys.stderr)
        sys.exit(2)
