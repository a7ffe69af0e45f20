"""The NALU paper's random baseline of committed cells: ``random_baseline.csv``.

    python -m launch.random_baseline results/recurrent/add/nac_add results/recurrent/sub/nalu

For each cell (a ``results/`` directory of a recurrent or a static arithmetic run:
``config.json`` and ``seeds.csv``) every seed's untrained network, drawn from the seed's own
key, is evaluated on the run's validation and test sets
(``nalu_jax.experiments.random_baseline``), and the per-seed errors are written to
``CELL/random_baseline.csv`` (seed, valid_mse, test_mse). The document divides each seed's
``interpolation_mse`` / ``extrapolation_mse`` by them (×100): the scaled error of Trask et al.
2018, Table 1. Deterministic: the same cell gives the same file.
"""

from __future__ import annotations

import json
import os
import sys

from nalu_jax.runtime.hostenv import configure_host_devices

configure_host_devices()

import ml_collections  # noqa: E402

from nalu_jax.config import ConfigError  # noqa: E402


def config_of(cell: str) -> ml_collections.ConfigDict:
    """The run's config from ``CELL/config.json`` (lists back to tuples where the config has
    ranges), checked to be a recurrent or an arithmetic run."""
    from nalu_jax.experiments.random_baseline import config_from_json

    path = os.path.join(cell, "config.json")
    if not os.path.exists(path):
        raise ConfigError(f"cell {cell!r} holds no config.json: give a results/ cell directory.")
    with open(path) as f:
        raw = json.load(f)
    if raw.get("experiment") not in ("recurrent", "arithmetic"):
        raise ConfigError(
            f"cell {cell!r} is a {raw.get('experiment')!r} run; needs recurrent or arithmetic."
        )
    return config_from_json(raw)


def write(cell: str) -> str:
    from nalu_jax.experiments.random_baseline import BASELINE_CSV, BASELINE_HEADER, baseline_rows
    from nalu_jax.reporting.report import atomic_write

    lines = [BASELINE_HEADER, *baseline_rows(config_of(cell))]
    out = os.path.join(cell, BASELINE_CSV)
    atomic_write(out, "\n".join(lines) + "\n")
    return out


def main(argv=None) -> int:
    cells = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in cells):
        print(__doc__.strip())
        return 0
    flags = [a for a in cells if a.startswith("-")]
    if flags:
        print(f"{flags[0]}: this command takes no flags, only results/ cell directories.",
              file=sys.stderr)  # fmt: skip
        return 2
    if not cells:
        print(
            "give one or more results/ cell directories of recurrent or arithmetic runs.",
            file=sys.stderr,
        )
        return 2
    for cell in cells:
        try:
            print(f"wrote {write(cell)}")
        except ConfigError as e:
            print(e, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
