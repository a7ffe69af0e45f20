"""Reproduce a published table with one call: ``reproduce(table, workdir, ...)``.

``specs`` holds the tables (cells, protocol, the published figures' file), ``cells`` runs one
cell (resumable, skipped when done) and calibrates, ``tables`` merges every finished cell of a
workdir with the published figures into ``table.md`` / ``table.csv`` and ``figures`` draws the
plots. Launchers: ``launch/reproduce.py`` (one machine) and ``launch/slurm.py`` (submitit).
"""

from __future__ import annotations

import os

from nalu_jax.reproduce import cells as cells_lib
from nalu_jax.reproduce import specs
from nalu_jax.reproduce.specs import TABLES, Cell, TableSpec, cell_config, table

__all__ = ["TABLES", "Cell", "TableSpec", "cell_config", "reproduce", "table", "write"]


def write(spec: TableSpec, workdir: str) -> list[dict]:
    """Merge every finished cell of ``workdir`` with the published figures: ``table.md``,
    ``table.csv`` and the figures; returns the rows."""
    from nalu_jax.reproduce import figures, tables

    rows = tables.collect(spec, workdir)
    tables.write(spec, workdir, rows)
    figures.write(spec, workdir, rows)
    return rows


def reproduce(
    name: str, workdir: str, *, models=None, ops=None, seeds=None, steps=None, overrides=None,
    calibration_steps: int = 2_000, progress: bool = True, overwrite: bool = False, log=print,
    extra_models=None,
) -> list[dict]:  # fmt: skip
    """Run every cell of table ``name`` (restricted to ``models``/``ops``) into
    ``workdir/cells/OP-MODEL``, print the estimated wall time first (a ``calibration_steps``
    run per model on this machine; 0 skips it), then write the table. Finished cells are
    skipped, stopped ones resume. ``seeds``/``steps`` reduce the protocol; ``overrides``
    (dotted config fields) apply to every cell; ``extra_models`` adds registered units as
    rows of their own (``specs.with_extra``)."""
    spec = specs.with_extra(table(name), extra_models)
    if models and extra_models:
        models = [*models, *(m for m in extra_models if m not in models)]
    chosen = specs.cells(spec, models, ops)
    cfgs = cells_lib.configs(spec, chosen, seeds, steps, overrides)
    runnable = [c for c in chosen if c.key in cfgs]
    pending = [
        c
        for c in runnable
        if cells_lib.finished(cells_lib.cell_dir(workdir, c), cfgs[c.key]) is None
    ]
    for c in chosen:
        if c.variant.unavailable:
            log(f"{c.key}: {c.variant.unavailable}")
    log(f"{spec.name}: {len(runnable)} cells, {len(runnable) - len(pending)} already done")
    estimates = {}
    if pending and calibration_steps:
        timed = {}
        for c in pending:  # one calibration per model: the op does not change the cost
            if c.variant.key not in timed:
                timed[c.variant.key] = cells_lib.calibrate(cfgs[c.key], calibration_steps)
            estimates[c.key] = cells_lib.estimate_s(cfgs[c.key], timed[c.variant.key])
        for c in pending:
            log(f"  {c.key}: {cells_lib.num_runs(cfgs[c.key])} runs × {cfgs[c.key].num_steps} "
                f"steps, estimated {cells_lib.duration(estimates[c.key])}")  # fmt: skip
        log(f"estimated wall time on this machine: {cells_lib.duration(sum(estimates.values()))}")
    os.makedirs(workdir, exist_ok=True)
    for i, c in enumerate(runnable):
        done = c not in pending
        log(f"== {c.key} ({i + 1}/{len(runnable)}){' done, skipped' if done else ''}")
        summary = cells_lib.run_cell(
            c, cfgs[c.key], workdir, progress=progress, overwrite=overwrite
        )
        if summary is not None:
            write(spec, workdir)
    return write(spec, workdir)
