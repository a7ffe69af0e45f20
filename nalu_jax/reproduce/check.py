"""Re-check a committed cell: re-run a few of its seeds at its own protocol and compare.

    python -m launch.reproduce --table=iclr2020-arithmetic --check=mul-nmu --seeds=2

The cell's committed ``config.json`` is the protocol (every field: budget, ``seed_block``,
evaluation sets), with only ``num_seeds`` lowered to the seeds checked, the cell's first ones.
Seed k's numbers do not depend on which seeds run beside it, so the re-run's rows must equal
the committed rows of the same seeds: character for character on the platform that produced
them (``provenance.json`` names it), and within ``TOLERANCE`` elsewhere (another platform
rounds differently, and over millions of steps the last bits grow).

What a check costs: seeds run in padded blocks of the cell's ``seed_block`` on every device,
and XLA picks its kernels by block size, so a smaller block would change the last bits. Two
seeds of a ``seed_block=10`` cell on two devices therefore cost as much as twenty: one block's
whole budget on each device (``blocks_note``).
"""

from __future__ import annotations

import math
import os

from nalu_jax.config import ConfigError, as_tuples

#: columns that are verdicts: equal on any platform
VERDICT_COLUMNS = ("seed", "solved", "diverged")
#: another platform: every other number within this relative difference (or ``ABS_FLOOR``)
TOLERANCE = 0.1
ABS_FLOOR = 1e-6
TOLERANCE_TEXT = (
    f"on another platform each seed must have the same {', '.join(VERDICT_COLUMNS[1:])} "
    f"verdicts and every other number within {TOLERANCE:.0%} (relative) or {ABS_FLOOR:g} "
    "(absolute) of the committed one"
)


def _overlay(node, committed: dict, where: str = "") -> None:
    """Set every field of ``committed`` (a plain dict from ``config.json``) on ``node``."""
    for key, value in committed.items():
        if key not in node:
            raise ConfigError(
                f"the committed config has field {where}{key!r}, which this code's config "
                "lacks; check it out at the commit its provenance.json names."
            )
        if isinstance(value, dict):
            _overlay(node[key], value, f"{where}{key}.")
        else:
            with node.unlocked():
                node[key] = as_tuples(value) if isinstance(value, list) else value


def committed_config(committed: dict, num_seeds: int, base=None):
    """The cell's config as committed (``committed``: its ``config.json``) with its first
    ``num_seeds`` seeds, built on ``base`` (a table cell's config; default: the experiment's
    config file, ``configs/EXPERIMENT.py``); fails when this code cannot express it."""
    from nalu_jax.config import load_config
    from nalu_jax.engine.blocks import resolve_seed_block
    from nalu_jax.reproduce.results import _comparable, config_dict

    config = base if base is not None else load_config(committed.get("experiment", "arithmetic"))
    _overlay(config, committed)
    config.num_seeds = int(num_seeds)
    resolve_seed_block(config)  # the committed integer block stays; "cpu_seed_block" goes
    config.tensorboard = False  # not part of a cell's identity (results.IGNORED_FIELDS)
    if _comparable(config_dict(config)) != _comparable(committed):
        raise ConfigError("this code cannot express the committed config of the cell.")
    return config


def blocks_note(config, num_devices: int) -> str:
    """One sentence on what the padded blocks make the check cost."""
    from nalu_jax.engine.loop import padded_size
    from nalu_jax.reproduce.cells import num_runs

    block, n, runs = int(config.seed_block), int(config.num_seeds), num_runs(config)
    padded = padded_size(runs, block * num_devices)
    what = f"{n} seed{'s' if n != 1 else ''}" + (f" × {runs // n} settings" if runs != n else "")
    if padded == runs:
        return f"{what} in blocks of seed_block={block} on {num_devices} device(s)."
    most = n * padded // runs  # the most seeds the same blocks hold
    more = f", so up to --seeds={most} checks more seeds in the same time" if most > n else ""
    return (
        f"{what} run as {padded // block} padded block(s) of seed_block={block} (the cell's "
        f"own, which bit-identity needs) on {num_devices} device(s): the cost of {padded} "
        f"runs{more}."
    )


def batch_of(provenance: dict, seed: int) -> dict:
    """The provenance batch that ran ``seed``."""
    for b in provenance["batches"]:
        if int(b["first_seed"]) <= seed < int(b["first_seed"]) + int(b["num_seeds"]):
            return b
    raise ConfigError(f"provenance.json names no batch that ran seed {seed}.")


def platform_of(machine: dict, vector_width: bool = True) -> str:
    """A machine's platform as provenance records it: the JAX platform and the CPU with the
    vector width of XLA:CPU's loops where recorded (it changes some reductions' last bits; a
    batch from before provenance held it has the CPU's name alone; ``vector_width=False``
    leaves it out) or the accelerator's kind."""
    on_cpu = machine.get("platform") == "cpu"
    kind = machine.get("cpu") if on_cpu else machine.get("device_kind")
    width = machine.get("vector_width") if on_cpu and vector_width else None
    return f"{machine.get('platform')} ({kind}{f', {width}-bit vectors' if width else ''})"


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _close(a: str, b: str) -> bool:
    x, y = _number(a), _number(b)
    if math.isnan(x) or math.isnan(y):
        return a == b
    return abs(x - y) <= max(ABS_FLOOR, TOLERANCE * max(abs(x), abs(y)))


def compare_rows(committed: list[dict], rerun: list[dict], exact: bool) -> list[str]:
    """Differences between rows of the same seeds: ``"seed 3 solved_at: 1337000 ≠ 1338000"``.
    ``exact``: every field character for character; else verdicts equal, numbers close."""
    out = []
    for want, got in zip(committed, rerun, strict=True):
        for col, value in want.items():
            other = got.get(col)
            same = value == other if exact or col in VERDICT_COLUMNS else _close(value, other)
            if not same:
                out.append(f"seed {want['seed']} {col}: committed {value}, re-run {other}")
    return out


def per_seed_files(cell_dir: str) -> list[str]:
    """Relative paths of the cell's CSV files with a ``seed`` column (seeds.csv, and per
    setting or reference population)."""
    from nalu_jax.reproduce.results import read_csv

    out = []
    for root, _, names in os.walk(cell_dir):
        for name in sorted(names):
            path = os.path.join(root, name)
            if name.endswith(".csv") and "seed" in (read_csv(path) or [{}])[0]:
                out.append(os.path.relpath(path, cell_dir))
    return sorted(out)


def compare_cell(cell_dir: str, workdir: str, seeds, exact: bool) -> tuple[int, list[str]]:
    """``(rows compared, differences)`` between the committed cell and a re-run's workdir,
    over the rows of ``seeds`` in every per-seed file."""
    from nalu_jax.reproduce.results import read_csv

    wanted, rows, diffs = {str(s) for s in seeds}, 0, []
    for rel in per_seed_files(cell_dir):
        ours = os.path.join(workdir, rel)
        if not os.path.exists(ours):
            diffs.append(f"{rel}: the re-run wrote no such file")
            continue
        pick = lambda path: [r for r in read_csv(path) if r["seed"] in wanted]  # noqa: B023
        committed, rerun = pick(os.path.join(cell_dir, rel)), pick(ours)
        if len(committed) != len(rerun):
            diffs.append(f"{rel}: {len(committed)} committed rows, {len(rerun)} re-run")
            continue
        rows += len(committed)
        diffs += [f"{rel} {d}" for d in compare_rows(committed, rerun, exact)]
    return rows, diffs


def _table_cell(table: str | None, key: str):
    """``(spec, cell)`` of a table's cell ``key`` (``None`` without a table)."""
    from nalu_jax.reproduce import specs

    if table is None:
        return None
    spec = specs.table(table)
    found = [c for c in specs.cells(spec) if c.key == key]
    if not found:
        keys = [c.key for c in specs.cells(spec)]
        raise ConfigError(f"--check names {key!r}, not a cell of {table!r}; cells: {keys}.")
    return spec, found[0]


def check(
    table: str | None, key: str, *, seeds: int = 2, workdir: str | None = None,
    root: str | None = None, calibration_steps: int = 2_000, progress: bool = True, log=print,
) -> bool:  # fmt: skip
    """Re-run the first ``seeds`` seeds of committed cell ``root/table/key`` (or ``root/key``
        without a table, e.g. ``recurrent/add/nau``; ``root``: the checkout's ``results/``, or
    ``./results`` for a registered table's cell) in
        ``workdir`` (default: a new temporary directory, removed afterwards unless the rows
        differ; never inside ``root``), print the estimated time first (a timing run of
        ``calibration_steps``, 0: none), then compare; True when they agree."""
    import shutil
    import tempfile
    import time

    import jax

    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of
    from nalu_jax.reproduce import cells as cells_lib
    from nalu_jax.reproduce import results, specs

    in_table = _table_cell(table, key)
    if root is None:  # a registered table's cells lie in ./results (launch/reproduce.py)
        own = table is not None and table not in specs.BUILT_IN
        root = "results" if own else results.default_root()
    root = os.path.abspath(root)
    name = f"{table}/{key}" if table else key
    cell_dir = results.resolve(os.path.join(root, name))
    if not os.path.exists(os.path.join(cell_dir, "provenance.json")):
        raise ConfigError(f"--check {key!r}: {cell_dir} holds no committed cell.")
    committed = results.read_json(os.path.join(cell_dir, "config.json"))
    if not 1 <= seeds <= int(committed["num_seeds"]):
        raise ConfigError(f"--seeds must be 1 to {committed['num_seeds']}, the cell's seeds.")
    temporary = workdir is None
    workdir = os.path.abspath(
        workdir or tempfile.mkdtemp(prefix=f"nalu-check-{key.replace(os.sep, '-')}-")
    )
    if os.path.commonpath([workdir, root]) == root:
        raise ConfigError(f"--workdir {workdir} lies inside {root}; a check never writes there.")
    diffs = None
    try:
        steps = int(committed["num_steps"])
        base = specs.cell_config(*in_table, num_steps=steps) if in_table else None
        config = committed_config(committed, seeds, base)
        first = int(config.first_seed)
        checked = list(range(first, first + seeds))
        provenance = results.read_json(os.path.join(cell_dir, "provenance.json"))
        machines = [batch_of(provenance, s)["machine"] for s in checked]
        here = results.machine()
        # a batch that records no vector width is judged by its CPU's name alone, as before
        unrecorded = any(m.get("platform") == "cpu" and "vector_width" not in m for m in machines)
        theirs = {platform_of(m) for m in machines}
        ours = platform_of(here, vector_width=not unrecorded)
        exact = theirs == {ours}
        log(f"checking {name} ({os.path.relpath(cell_dir)}): seeds {first}–{checked[-1]} "
            f"at its committed protocol, {int(config.num_steps):,} steps, in {workdir}")  # fmt: skip
        log(f"  {blocks_note(config, len(jax.local_devices()))}")
        if calibration_steps:
            timing = cells_lib.calibrate(config, calibration_steps)
            log(f"  estimated wall time on this machine: "
                f"{cells_lib.duration(cells_lib.estimate_s(config, timing))}")  # fmt: skip
        log(
            f"  committed on {', '.join(sorted(theirs))}; this machine: {ours}; "
            + ("the rows must be identical" if exact else TOLERANCE_TEXT)
        )
        if exact and unrecorded and here.get("vector_width"):
            log(f"  (the committed batch records no vector width; this machine's XLA:CPU uses "
                f"{here['vector_width']}-bit vectors: where the batch's CPU used others, sequential "
                f"MNIST's and the identity task's reductions differ in the last bits, the "
                f"arithmetic tasks' do not)")  # fmt: skip
        t0 = time.perf_counter()
        run(experiment_of(config), config, workdir, progress=progress)
        rows, diffs = compare_cell(cell_dir, workdir, checked, exact)
        took = cells_lib.duration(time.perf_counter() - t0)
        for d in diffs:
            log(f"  {d}")
        how = "identical" if exact else "within the tolerance"
        verdict = "differ" if diffs else how
        log(f"{name}: {rows} committed rows of seeds {first}–{checked[-1]} {verdict} "
            f"({len(diffs)} differences; re-run took {took})")  # fmt: skip
    finally:
        # a temporary re-run cannot be resumed (the next check starts in a new directory):
        # kept only when its rows differ from the committed ones, to be looked at
        if temporary and diffs:
            log(f"  the re-run stays in {workdir}")
        elif temporary:
            shutil.rmtree(workdir, ignore_errors=True)
    return not diffs
