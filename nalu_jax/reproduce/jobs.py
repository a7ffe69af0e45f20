"""What a cluster task runs (``launch/slurm.py``): plain top-level functions submitit pickles.

* ``run_cells``: one array task trains its cells one after another in one process.
* ``run_cells_distributed``: every task of one multi-task job joins ``jax.distributed``
  (coordinator: the job's first host) and the tasks split each cell's seeds × settings
  (``nalu_jax.runtime.distributed``: process p trains the p-th slice, process 0 merges and writes).

Either way the cells land in ``WORKDIR/cells/OP-MODEL`` exactly as a one-process run writes them
(seed k's numbers do not depend on which runs share its program), so the table merge
(``nalu_jax.reproduce.write``) is the same.
"""

from __future__ import annotations

import re


def _cells(table: str, keys, seeds, steps, overrides):
    from nalu_jax.reproduce import cells as cells_lib
    from nalu_jax.reproduce import specs

    spec = specs.table(table)
    chosen = [c for c in specs.cells(spec) if c.key in set(keys)]
    return chosen, cells_lib.configs(spec, chosen, seeds, steps, overrides)


def run_cells(table: str, keys, workdir: str, seeds=None, steps=None, overrides=None) -> list:
    """Train cells ``keys`` of ``table`` (skipping finished ones); returns the keys run."""
    from nalu_jax.runtime.hostenv import configure_host_devices

    configure_host_devices()  # before JAX starts: one CPU device per allotted core
    from nalu_jax.reproduce.cells import run_cell

    chosen, cfgs = _cells(table, keys, seeds, steps, overrides)
    for c in chosen:
        if c.key in cfgs:
            run_cell(c, cfgs[c.key], workdir, progress=False)
    return [c.key for c in chosen if c.key in cfgs]


def coordinator_port(job_id: str, base: int = 12_000, span: int = 20_000) -> int:
    """A port for the job's coordinator, derived from its id (jobs on one host differ)."""
    digits = re.sub(r"\D", "", str(job_id)) or "0"
    return base + int(digits) % span


def run_cells_distributed(
    table: str, keys, workdir: str, seeds=None, steps=None, overrides=None, port: int = 0
) -> list:
    """One task of a multi-task job: join ``jax.distributed`` and train this process's slice of
    every cell in ``keys``. Returns the keys (every task)."""
    import submitit

    from nalu_jax.runtime import distributed
    from nalu_jax.runtime.hostenv import configure_host_devices

    env = submitit.JobEnvironment()
    configure_host_devices()
    port = port or coordinator_port(env.job_id)
    distributed.initialize(f"{env.hostnames[0]}:{port}", env.num_tasks, env.global_rank)
    from nalu_jax.reproduce.cells import run_cell

    chosen, cfgs = _cells(table, keys, seeds, steps, overrides)
    for c in chosen:
        if c.key in cfgs:
            run_cell(c, cfgs[c.key], workdir, progress=False)
    return [c.key for c in chosen if c.key in cfgs]
