"""Reproduce a published table with one call: ``reproduce(table, workdir, ...)``.

``specs`` holds the tables (cells, protocol, the published figures' file), ``cells`` runs one
cell (resumable, skipped when done) and calibrates, ``tables`` merges every finished cell of a
workdir with the published figures into ``table.md`` / ``table.csv`` and ``figures`` draws the
plots. Launchers: ``launch/reproduce.py`` (one machine) and ``launch/slurm.py`` (submitit).
``register_table`` adds a table of one's own (docs/own_experiment.md).
"""

from __future__ import annotations

import os

from nalu_jax.reproduce import cells as cells_lib
from nalu_jax.reproduce import specs
from nalu_jax.reproduce.figures_iclr import FIGURES
from nalu_jax.reproduce.specs import (
    TABLES,
    Cell,
    TableSpec,
    Variant,
    cell_config,
    register_table,
    table,
)

TABLES.update(FIGURES)  # the figures are tables with an x axis (``specs.Axis``)
specs.BUILT_IN.update(TABLES)

__all__ = [
    "TABLES", "Cell", "TableSpec", "Variant", "cell_config", "register_table", "reproduce",
    "table", "write",
]  # fmt: skip


def write(spec: TableSpec, workdir: str, locate=None) -> list[dict]:
    """Merge every finished cell of ``workdir`` with the published figures: ``table.md``,
    ``table.csv`` and the figures; returns the rows. ``locate(cell)``: a cell's directory
    (default ``WORKDIR/cells/OP-MODEL``)."""
    from nalu_jax.reproduce import figures, tables

    rows = tables.collect(spec, workdir, locate)
    tables.write(spec, workdir, rows)
    figures.write(spec, workdir, rows)
    return rows


def _plan(spec, runnable, cfgs, workdir, results, overwrite, log):
    """Per cell: ``("committed", dir)`` (skipped), ``("same", dir of another committed cell
    holding the same config and seeds, results dir)`` (aliased, not run), ``("run", config,
    dir, results dir)`` or ``("extend", config of the missing seeds, dir)``; results cells that
    hold another config are left alone unless ``overwrite``."""
    from nalu_jax.reproduce import results as results_lib

    plan = {}
    for c in runnable:
        cfg, rdir = cfgs[c.key], os.path.join(results, spec.name, c.key) if results else None
        state, have = results_lib.status(rdir, cfg) if rdir else ("missing", 0)
        same = (results_lib.find_same(results, cfg, exclude=rdir)
                if state == "missing" and rdir and not overwrite else None)  # fmt: skip
        if state == "done" and not overwrite:
            plan[c.key] = ("committed", results_lib.resolve(rdir))
        elif same is not None:
            plan[c.key] = ("same", same, rdir)
            log(f"{c.key}: {same} holds the same config with all {int(cfg.num_seeds)} seeds; "
                f"{rdir} names it (same_as.json) instead of training them again")  # fmt: skip
        elif state == "extend" and not overwrite:
            more = results_lib.missing_seeds(cfg, have)
            plan[c.key] = ("extend", more, f"{cells_lib.cell_dir(workdir, c)}-from{have}")
            log(f"{c.key}: results hold seeds {int(cfg.first_seed)}–"
                f"{int(cfg.first_seed) + have - 1}; running the {more.num_seeds} more")  # fmt: skip
        else:
            if state == "other" and not overwrite:
                field = results_lib.difference(rdir, cfg)
                log(f"{c.key}: {rdir} holds another protocol ({field} differs); it is kept, this "
                    "run stays in the workdir (--overwrite replaces it)")  # fmt: skip
                rdir = None
            plan[c.key] = ("run", cfg, cells_lib.cell_dir(workdir, c), rdir)
    return plan


def reproduce(
    name: str, workdir: str, *, models=None, ops=None, points=None, seeds=None, steps=None,
    overrides=None,
    calibration_steps: int = 2_000, progress: bool = True, overwrite: bool = False, log=print,
    results: str | None = None,
    extra_models=None, config_items=(), plan_only: bool = False,
) -> list[dict]:  # fmt: skip
    """Run every cell of table ``name`` (restricted to ``models``/``ops``/``points``) into
    ``workdir/cells/OP-MODEL``, print the estimated wall time first (a ``calibration_steps``
    run per model on this machine; 0 skips it), then write the table. Finished cells are
    skipped, stopped ones resume. ``seeds``/``steps`` reduce the protocol; ``overrides``
    (dotted config fields) apply to every cell, then ``config_items`` (``"FIELD=VALUE"``
    texts of ``--config.FIELD=VALUE``, parsed with each field's type); ``extra_models`` adds
    registered units as rows of their own (``specs.with_extra``). ``plan_only``: print the plan
    (what each cell would do, its seed-steps and estimated times, timed by a short scratch run
    per model unless ``calibration_steps`` is 0) and run no cell; returns [].

    ``results``: the committed results root (``results/``). A cell committed there with the
    same config is skipped, and so is one that another committed cell already holds (it becomes
    an alias of that cell, ``results.alias``); one committed with the first seeds of the same config runs only the
    missing seeds and merges them (``results.merge``); every finished cell is committed to
    ``results/TABLE/OP-MODEL`` (``results.commit``). None: the workdir only.
    """
    import time

    from nalu_jax.reproduce import results as results_lib

    spec = specs.with_extra(table(name), extra_models)
    if models and extra_models:
        models = [*models, *(m for m in extra_models if m not in models)]
    chosen = specs.cells(spec, models, ops, points)
    cfgs = cells_lib.configs(spec, chosen, seeds, steps, overrides, config_items)
    runnable = [c for c in chosen if c.key in cfgs]
    plan = _plan(spec, runnable, cfgs, workdir, results, overwrite, log)
    pending = [
        c
        for c in runnable
        if plan[c.key][0] not in ("committed", "same")
        and cells_lib.finished(plan[c.key][2], plan[c.key][1]) is None
    ]
    for c in chosen:
        if c.variant.unavailable:
            log(f"{c.key}: {c.variant.unavailable}")
    log(f"{spec.name}: {len(runnable)} cells, {len(runnable) - len(pending)} already done")
    estimates = {}
    if pending and calibration_steps:
        timed = {}
        for c in pending:  # one calibration per model: the op does not change the cost
            cfg = plan[c.key][1]
            if c.variant.key not in timed:
                timed[c.variant.key] = cells_lib.calibrate(cfg, calibration_steps)
            estimates[c.key] = cells_lib.estimate_s(cfg, timed[c.variant.key])
        for c in pending:
            cfg = plan[c.key][1]
            log(f"  {c.key}: {cells_lib.num_runs(cfg)} runs × {cfg.num_steps} "
                f"steps, estimated {cells_lib.duration(estimates[c.key])}")  # fmt: skip
        log(f"estimated wall time on this machine: {cells_lib.duration(sum(estimates.values()))}")
    if pending:
        from nalu_jax.reproduce import budget

        cfgs_ = {c.key: plan[c.key][1] for c in pending}
        for line in budget.plan(pending, cfgs_, estimates, gpu=spec.kind != "experiment"):
            log(line)
    if plan_only:
        log("plan only: no cell was run or written")
        return []
    os.makedirs(workdir, exist_ok=True)
    located = {}

    def locate(cell):
        return located.get(cell.key, cells_lib.cell_dir(workdir, cell))

    for i, c in enumerate(runnable):
        step = plan[c.key]
        done = c not in pending
        log(f"== {c.key} ({i + 1}/{len(runnable)}){' done, skipped' if done else ''}")
        if step[0] == "committed":
            located[c.key] = step[1]
            continue
        if step[0] == "same":
            results_lib.alias(step[2], step[1])
            located[c.key] = step[1]
            continue
        t0 = time.perf_counter()
        summary = cells_lib.run_cell(c, step[1], workdir, progress=progress, overwrite=overwrite,
                                     directory=step[2])  # fmt: skip
        if summary is None:  # not process 0 of a multi-host run
            continue
        took = cells_lib.duration(time.perf_counter() - t0)
        guess = f", estimated {cells_lib.duration(estimates[c.key])}" if c.key in estimates else ""
        log(f"   {c.key} trained in {took}{guess}")
        rdir = os.path.join(results, spec.name, c.key) if results else None
        if step[0] == "extend":
            results_lib.merge(rdir, step[2])
            located[c.key] = rdir
        elif step[3] is not None:
            results_lib.commit(step[2], step[3])
            log(f"   committed to {step[3]}")
        write(spec, workdir, locate)
    return write(spec, workdir, locate)
