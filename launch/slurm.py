"""A table on a cluster (SLURM via submitit), merged into the same ``table.md`` as one machine's.

    # one array task per cell (cells split over hosts), then the table:
    python -m launch.slurm --table=iclr2020-arithmetic --workdir=/shared/iclr \
        --slurm_partition=cpu --timeout_min=2880 --cpus_per_task=16
    # one jax.distributed job over 4 nodes: every cell's seeds split over the nodes:
    python -m launch.slurm --table=iclr2020-arithmetic --mode=distributed --nodes=4 ...
    # this machine, without SLURM (submitit's local executor; 2 tasks):
    python -m launch.slurm --cluster=local --table=... --ops=mul --models=nmu,nau --seeds=4 ...

Modes: ``array`` submits one array task per ``--cells_per_task`` cells (``map_array``; at
most ``--parallelism`` at once); ``distributed`` submits one job of ``--nodes`` ×
``--tasks_per_node`` tasks that join ``jax.distributed`` and split each cell's seeds × settings
(``nalu_jax.reproduce.jobs``). The workdir must be shared by the hosts. Unless ``--nowait``,
the launcher waits for the jobs and writes the table; otherwise run
``python -m launch.reproduce --report_only`` later. Cells already finished are skipped by the tasks.
"""

from __future__ import annotations

import os

from absl import flags, logging

from nalu_jax import cli
from nalu_jax.cli import fail
from nalu_jax.config import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_TABLE = flags.DEFINE_string("table", None, "Table name, e.g. iclr2020-arithmetic.")
_MODELS = flags.DEFINE_list("models", None, "Models of the table to run (default: all).")
_OPS = flags.DEFINE_list("ops", None, "Ops of the table to run (default: all).")
_SEEDS = flags.DEFINE_integer("seeds", None, "Seeds per cell (default: the published number).")
_STEPS = flags.DEFINE_integer("steps", None, "Iterations per cell (default: the published).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Shared directory of the table and its cells.")
_MODE = flags.DEFINE_enum("mode", "array", ["array", "distributed"], "How to split the table.")
_CELLS_PER_TASK = flags.DEFINE_integer("cells_per_task", 1, "Array mode: cells per task.")
_PARALLELISM = flags.DEFINE_integer("parallelism", 64, "Array mode: tasks running at once.")
_NODES = flags.DEFINE_integer("nodes", 1, "Distributed mode: nodes.")
_TASKS_PER_NODE = flags.DEFINE_integer("tasks_per_node", 1, "Distributed mode: tasks per node.")
_CLUSTER = flags.DEFINE_enum(
    "cluster", None, ["slurm", "local", "debug"], "submitit executor (default: slurm if found)."
)
_PARTITION = flags.DEFINE_string("slurm_partition", None, "SLURM partition.")
_TIMEOUT = flags.DEFINE_integer("timeout_min", 24 * 60, "Time limit per task in minutes.")
_CPUS = flags.DEFINE_integer("cpus_per_task", None, "CPUs per task (one JAX device each).")
_MEM = flags.DEFINE_float("mem_gb", None, "Memory per node in GB.")
_LOGS = flags.DEFINE_string("logs", None, "submitit folder (default: WORKDIR/slurm/%j).")
_SMOKE = flags.DEFINE_bool("smoke", False, "Small evaluation sets and thresholds (tests).")
_WAIT = flags.DEFINE_bool("wait", True, "Wait for the jobs, then write the table.")


def executor():
    import submitit

    ex = submitit.AutoExecutor(
        folder=_LOGS.value or os.path.join(_WORKDIR.value, "slurm", "%j"), cluster=_CLUSTER.value
    )
    params = {"timeout_min": _TIMEOUT.value, "name": f"nalu-{_TABLE.value}"}
    if _CPUS.value:
        params["cpus_per_task"] = _CPUS.value
    if _MEM.value:
        params["mem_gb"] = _MEM.value
    if _PARTITION.value:
        params["slurm_partition"] = _PARTITION.value
    if _MODE.value == "array":
        params["slurm_array_parallelism"] = _PARALLELISM.value
    else:
        params.update(nodes=_NODES.value, tasks_per_node=_TASKS_PER_NODE.value)
    ex.update_parameters(**params)
    return ex


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}.")
    if not _TABLE.value or not _WORKDIR.value:
        fail("--table and --workdir are required.")
    logging.set_verbosity(logging.WARNING)
    # Tasks import nalu_jax from this checkout (SLURM and the local executor pass the env on).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    from nalu_jax import reproduce
    from nalu_jax.reproduce import jobs, specs
    from nalu_jax.reproduce.cells import SMOKE

    try:
        spec = specs.table(_TABLE.value)
        keys = [c.key for c in specs.cells(spec, _MODELS.value, _OPS.value)]
        if not keys:
            fail("no cells selected.")
        os.makedirs(_WORKDIR.value, exist_ok=True)
        workdir = os.path.abspath(_WORKDIR.value)
        common = dict(
            seeds=_SEEDS.value, steps=_STEPS.value, overrides=SMOKE if _SMOKE.value else None
        )
        ex = executor()
        if _MODE.value == "array":
            n = _CELLS_PER_TASK.value
            groups = [keys[i : i + n] for i in range(0, len(keys), n)]
            with ex.batch():
                submitted = [
                    ex.submit(jobs.run_cells, _TABLE.value, g, workdir, **common) for g in groups
                ]
        else:
            submitted = [
                ex.submit(jobs.run_cells_distributed, _TABLE.value, keys, workdir, **common)
            ]
        print(f"submitted {len(submitted)} job(s): {[j.job_id for j in submitted]}", flush=True)
        if not _WAIT.value:
            print(f"when done: python -m launch.reproduce --report_only --table={spec.name} "
                  f"--workdir={workdir}")  # fmt: skip
            return
        for j in submitted:
            j.results()  # raises the task's exception, with its log
        reproduce.write(spec, workdir)
    except ConfigError as e:
        fail(str(e))
    with open(os.path.join(workdir, "table.md")) as f:
        print(f.read())


if __name__ == "__main__":
    cli.run(main)
