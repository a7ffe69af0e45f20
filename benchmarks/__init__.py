"""Command-line scripts; run from the repository root as ``python -m benchmarks.NAME``."""


def non_positive(opts, names) -> str | None:
    """The sentence refusing the first of ``names`` (argparse fields) set below 1, if any;
    a field left at ``None`` passes."""
    for name in names:
        value = getattr(opts, name)
        if value is not None and value < 1:
            return f"--{name} must be a positive integer."
    return None
