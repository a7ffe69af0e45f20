"""Command-line entry point: parse flags, then ``run(experiment_of(config), config, workdir)``.

    python -m nalu_jax.main --config=configs/arithmetic.py:model=nmu,op=mul --workdir=runs/x
    nalu-jax --config=configs/single_module.py:op=mul,model=nmu --config.num_seeds=100 ...

A mistake in the config or flags prints one sentence and exits with status 2.
"""

from __future__ import annotations

import os

from nalu_jax.runtime.hostenv import configure_host_devices

configure_host_devices()  # before JAX starts: one CPU device per core (seeds are sharded)

from absl import flags, logging
from ml_collections import config_flags

from nalu_jax import cli
from nalu_jax.cli import fail, loaded_config

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file, e.g. configs/x.py:args.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Directory for checkpoints and results.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Replace a workdir holding another config.")
_PROGRESS = flags.DEFINE_bool("progress", True, "Show a progress bar on stderr.")
flags.DEFINE_bool("smoke", False, cli.SMOKE_HELP)  # read by cli.smoke_argv
_RESULTS = flags.DEFINE_string(
    "results",
    None,
    "Commit the finished run's per-seed files to this results cell (e.g. results/identity/"
    "default, see results/README.md); skipped when the cell already holds this config, and "
    "kept (the run stays in --workdir) when it holds this config with other seeds.",
)
_COORDINATOR = flags.DEFINE_string(
    "coordinator_address", None, "Multi-host: host:port of process 0 (or NALU_JAX_COORDINATOR)."
)
_NUM_PROCESSES = flags.DEFINE_integer(
    "num_processes", None, "Multi-host: number of processes (or NALU_JAX_NUM_PROCESSES)."
)
_PROCESS_ID = flags.DEFINE_integer(
    "process_id", None, "Multi-host: this process's id (or NALU_JAX_PROCESS_ID)."
)


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}; settings go in --config.* flags.")
    config = loaded_config(_CONFIG)
    if not _WORKDIR.value:
        fail("--workdir is required: the directory for checkpoints and results.")
    # orbax logs every save at INFO and a failed background write as a traceback at ERROR;
    # nalu_jax reports what matters in one sentence (cli.reported_errors)
    logging.set_verbosity(logging.FATAL)
    from nalu_jax.engine import sweep
    from nalu_jax.engine.blocks import resolve_seed_block
    from nalu_jax.experiments import experiment_of, train_and_evaluate
    from nalu_jax.reproduce import results
    from nalu_jax.runtime import distributed
    from nalu_jax.runtime.workdir import refuse_unwritable

    with cli.reported_errors():
        if _RESULTS.value:  # committed after the training: checked before it
            refuse_unwritable("--results", _RESULTS.value)
        distributed.initialize(_COORDINATOR.value, _NUM_PROCESSES.value, _PROCESS_ID.value)
        # "auto" resolved once the processes are known: the config compared and recorded
        sweep.validate(experiment_of(config), config)  # and each setting of its sweep
        resolve_seed_block(config)
    cell = _RESULTS.value
    if cell and results.status(cell, config)[0] == "done":
        print(f"{cell} already holds this config's results; nothing to run.")
        return
    if cell and (why := results.kept(cell, config)):
        print(why)
        cell = None
    # --overwrite starts clean: the command that goes on from the checkpoints is without it
    again = "run the same command without --overwrite" if _OVERWRITE.value else cli.AGAIN
    with cli.reported_errors(again):
        summary = train_and_evaluate(
            config, _WORKDIR.value, overwrite=_OVERWRITE.value, progress=_PROGRESS.value
        )
        if summary is not None and cell:
            results.commit(_WORKDIR.value, cell)
    if summary is None:  # a non-zero process of a multi-host run: process 0 reports
        return
    if "matmul_precision" in summary:  # below full precision (engine.run): say so first
        print(f"Matrix products at matmul_precision = {summary['matmul_precision']!r}.")
    print(experiment_of(config).format_summary(summary))
    print(f"results in {os.path.abspath(_WORKDIR.value)}")


def run() -> None:
    """Console-script entry (``nalu-jax``)."""
    cli.run(main, smoke=True)


if __name__ == "__main__":
    run()
