"""Reproduce a published table with one command: every cell, then the table beside the paper's.

    python -m launch.reproduce --table=iclr2020-arithmetic --workdir=runs/iclr
    python -m launch.reproduce --table=iclr2020-arithmetic --models=nmu,nau --ops=mul,add \
        --seeds=10 --steps=1000000 --workdir=runs/iclr-reduced
    python -m launch.reproduce --table=primer-single-module --ops=mul,add --workdir=runs/primer

Tables: iclr2020-arithmetic, iclr2020-gate, iclr2020-ablation, primer-single-module,
primer-single-module-sizes
(``nalu_jax.reproduce.specs``); figures with an x axis: iclr2020-hidden-size, iclr2020-range,
iclr2020-input-size, iclr2020-overlap, iclr2020-subset, iclr2020-lambda
(``nalu_jax.reproduce.figures_iclr``; a point is a sweep setting or a cell OP-MODEL-POINT).
Before training it prints every cell's seed-steps and the estimated time on one GPU. Each cell (op × model; single-module cells run their nine
ranges as one program) trains in ``WORKDIR/cells/OP-MODEL``; finished cells are skipped,
stopped ones resume, and ``WORKDIR/table.md``, ``table.csv`` and ``figures/OP.png`` hold every
finished cell of the workdir (a later invocation with other cells adds to them). Before
training it prints the estimated wall time from a short calibration run per model.
``--seeds``/``--steps`` reduce the protocol (the table's header says so). ``--report_only``
only rewrites the table (e.g. after ``launch/slurm.py`` jobs); ``--plan_only`` prints what each
cell would do (skip, extend, run), its seed-steps and the estimated times, and trains no cell
(the estimate times a short scratch run per model; ``--calibration_steps=0``: the GPU estimate
alone). ``--check=OP-MODEL`` (or, without ``--table``, ``--check=GROUP/CELL`` of any
committed cell) re-runs the first ``--seeds`` (default 2) seeds of that committed cell at its
committed protocol in ``--workdir`` (default: a temporary directory, removed unless the rows
differ) and compares them with the committed rows (``nalu_jax.reproduce.check``); exit status
1 when they differ.

Committed results: a run at the table's own protocol (its iterations and evaluation; fewer
seeds than the paper's are fine) commits its finished cells to the checkout's ``results/`` by
default; a smaller one (``--steps`` below the table's, ``--smoke``) commits nothing unless
``--results=DIR`` asks for it. Either way the run says where its cells went.

A table of one's own experiment, registered with ``nalu_jax.reproduce.register_table`` in a
module named by ``--plugin`` (docs/own_experiment.md), runs the same way; its cells are
committed to ``./results`` (never into the library's checkout).

``--config.FIELD=VALUE`` overrides a field of every cell's config, as for ``nalu_jax.main``
(e.g. ``--config.seed_block=100``, one block of 100 seeds; each is checked before anything
runs). A committed cell run with another value is another protocol: it is kept, and the cell
runs in the workdir only.
"""

from __future__ import annotations

import os

from nalu_jax.runtime.hostenv import configure_host_devices

configure_host_devices()

from absl import flags, logging  # noqa: E402

from nalu_jax import cli  # noqa: E402
from nalu_jax.cli import fail  # noqa: E402

_TABLE = flags.DEFINE_string("table", None, "Table name, e.g. iclr2020-arithmetic.")
_MODELS = flags.DEFINE_list("models", None, "Models of the table to run (default: all).")
_EXTRA = flags.DEFINE_list(
    "extra_models", None, "Registered units to add as rows, e.g. mypkg.units:ScaledNAU."
)
_OPS = flags.DEFINE_list("ops", None, "Ops of the table to run, e.g. mul,add (default: all).")
_POINTS = flags.DEFINE_list(
    "points",
    None,
    "Points of a figure whose points are cells of their own, e.g. h2,h10 (default: all).",
)
_SEEDS = flags.DEFINE_integer(
    "seeds", None, "Seeds per cell (default: the published number).", lower_bound=1
)
_STEPS = flags.DEFINE_integer(
    "steps", None, "Iterations per cell (default: the published).", lower_bound=1
)
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory of the table and its cells.")
_CALIBRATION = flags.DEFINE_integer(
    "calibration_steps", 2000, "Steps of the timing run per model (0: no estimate).", lower_bound=0
)
_SMOKE = flags.DEFINE_bool(
    "smoke",
    False,
    "A seconds-long run of the whole path (CI; not the published protocol, never committed): "
    "2 seeds, 2,000 steps unless --seeds/--steps say otherwise, small evaluation sets; the "
    "table's first cell unless --ops/--models/--points name cells.",
)
_CHECK = flags.DEFINE_string(
    "check",
    None,
    "A committed cell, e.g. mul-nmu with --table, or GROUP/CELL under results/ without one "
    "(recurrent/add/nau): re-run its first --seeds seeds (default 2) at its own protocol and "
    "compare them with its committed rows (identical on its platform).",
)
_REPORT_ONLY = flags.DEFINE_bool("report_only", False, "Only write the table of finished cells.")
_PLAN_ONLY = flags.DEFINE_bool(
    "plan_only", False,
    "Print what each cell would do, its seed-steps and the estimated times; train and write "
    "no cell (the estimate times a short scratch run per model, --calibration_steps; 0 skips "
    "it).",
)  # fmt: skip
_PROGRESS = flags.DEFINE_bool("progress", True, "Show a progress bar per cell.")
_OVERWRITE = flags.DEFINE_bool(
    "overwrite",
    False,
    "Replace cells run with another protocol (committed, or in the workdir); a cell's own run "
    "in the workdir, stopped or shorter, goes on from its checkpoints.",
)
_RESULTS = flags.DEFINE_string(
    "results",
    None,
    "Committed results root: finished cells are copied to RESULTS/TABLE/OP-MODEL, cells already "
    "there with the same config are skipped, and a cell there with fewer seeds runs only the "
    "missing ones. Default: the checkout's results/ at the table's own protocol only (not with "
    "--smoke or fewer --steps than the table's); '' turns it off.",
)


def _results_root() -> tuple[str | None, str]:
    """Where finished cells are committed, and the sentence that says so."""
    if _RESULTS.value is not None:
        root = _RESULTS.value or None
        return root, f"results root: {root}" if root else "results: none committed (--results='')"
    from nalu_jax.reproduce import table

    published = table(_TABLE.value).num_steps
    if _SMOKE.value or (_STEPS.value is not None and _STEPS.value < published):
        why = "--smoke" if _SMOKE.value else f"--steps={_STEPS.value:,} < the table's {published:,}"
        return None, (
            f"results: none committed, not the table's protocol ({why}); pass --results=DIR "
            "to commit"
        )
    from nalu_jax.reproduce.results import default_root
    from nalu_jax.reproduce.specs import BUILT_IN

    # a registered table's cells go to ./results, never into the library's own checkout
    root = default_root() if _TABLE.value in BUILT_IN else os.path.abspath("results")
    return root, f"results root: {root}"


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}.")
    if _CHECK.value:
        return _check()
    if not _TABLE.value or not _WORKDIR.value:
        fail("--table and --workdir are required, e.g. --table=iclr2020-arithmetic --workdir=x.")
    logging.set_verbosity(logging.WARNING)
    from nalu_jax import reproduce
    from nalu_jax.reproduce import cells
    from nalu_jax.runtime.workdir import refuse_unwritable

    if _REPORT_ONLY.value and _PLAN_ONLY.value:
        fail("--report_only and --plan_only exclude each other: one writes, one only prints.")
    if _REPORT_ONLY.value and cli.CONFIG_ITEMS:
        fail("--config.FIELD overrides apply to runs; --report_only runs nothing.")
    if _REPORT_ONLY.value and not os.path.isdir(_WORKDIR.value):
        fail(f"--report_only tabulates the cells run in --workdir, and {_WORKDIR.value} is no "
             "directory: give the --workdir the cells ran in.")  # fmt: skip
    seeds, steps, calibration = _SEEDS.value, _STEPS.value, _CALIBRATION.value
    models, ops, points = _MODELS.value, _OPS.value, _POINTS.value
    if _SMOKE.value:
        seeds, steps = seeds or cells.SMOKE_SEEDS, steps or cells.SMOKE_STEPS
        calibration = min(calibration, cells.SMOKE_CALIBRATION_STEPS)

    with cli.reported_errors():
        if _SMOKE.value and not (models or ops or points or _REPORT_ONLY.value):
            first = reproduce.specs.cells(reproduce.table(_TABLE.value))[0]
            models, ops, points = (
                [first.variant.key],
                [first.op],
                [first.point] if first.point else None,
            )
            print(
                f"--smoke runs the table's first cell, {first.key} "
                "(--ops/--models/--points name others)."
            )
        results, where = _results_root()
        # before the calibration and the first cell: a results root is written after its cell
        refuse_unwritable("--workdir", _WORKDIR.value)
        if results and not _PLAN_ONLY.value:
            refuse_unwritable("--results", results)
        if _REPORT_ONLY.value:
            spec = reproduce.specs.with_extra(reproduce.table(_TABLE.value), _EXTRA.value)
            rows = reproduce.write(spec, _WORKDIR.value)
        else:
            rows = reproduce.reproduce(
                _TABLE.value,
                _WORKDIR.value,
                models=models,
                ops=ops,
                points=points,
                seeds=seeds,
                steps=steps,
                overrides=cells.SMOKE if _SMOKE.value else None,
                calibration_steps=calibration,
                progress=_PROGRESS.value,
                overwrite=_OVERWRITE.value,
                results=results,
                extra_models=_EXTRA.value,
                config_items=cli.CONFIG_ITEMS,
                plan_only=_PLAN_ONLY.value,
            )
    if _PLAN_ONLY.value:
        return
    with open(os.path.join(_WORKDIR.value, "table.md")) as f:
        print(f.read())
    print(f"{len(rows)} rows; results in {os.path.abspath(_WORKDIR.value)}")
    if not _REPORT_ONLY.value:
        print(where)


def _check() -> None:
    """``--check``: re-run a committed cell's first seeds and compare (exit 1 on a difference)."""
    import sys

    from nalu_jax.reproduce.check import check

    logging.set_verbosity(logging.WARNING)
    with cli.reported_errors():
        agree = check(
            _TABLE.value,
            _CHECK.value,
            seeds=_SEEDS.value or 2,
            workdir=_WORKDIR.value,
            root=_RESULTS.value or None,
            calibration_steps=_CALIBRATION.value,
            progress=_PROGRESS.value,
        )
    if not agree:
        sys.exit(1)


if __name__ == "__main__":
    cli.run(main, config_items=True)
