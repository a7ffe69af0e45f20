"""Committed results: a reproduction cell's per-seed data in ``results/``, with its provenance.

A run's workdir holds checkpoints, TensorBoard events and per-evaluation histories; what a
reader needs to check a published comparison is much smaller. ``commit(workdir, cell)`` copies
the per-seed files of a finished run into a *cell* directory of the repository's ``results/``
tree and writes ``provenance.json`` beside them:

    results/<group>/<cell>/
        config.json       the run's config (as in the workdir)
        summary.json      population statistics (success with a Wilson 95% interval, ...)
        seeds.csv         one row per seed (and any other per-seed *.csv the experiment wrote,
                          e.g. ``errors.csv``, ``lengths.csv``, ``reference/seeds.csv``,
                          ``settings/NNN/seeds.csv`` for a sweep)
        provenance.json   one entry per batch of seeds: commit, date, machine, devices
                          (platform and device kind), matmul precision,
                          library versions, wall time, seed-steps/s, seeds, budget, command

A cell is written atomically (a temporary directory renamed into place), so a reader sees the
old cell or the new one. ``status(cell, config)`` says whether a committed cell already holds
``config`` (then a launcher skips it), holds a prefix of its seeds (then only the missing seeds
are run, as a second batch with ``first_seed`` set, and ``merge`` joins them: seed k's numbers
do not depend on which seeds ran beside it, so the merged cell equals one run of all seeds), or
holds another config (then it is left alone unless the launcher is told to overwrite).

Two tables can hold the same experiment: the ICLR 2020 ablation's NMU and NAC• rows are Table 1's
× NMU and × NAC• cells, config for config. A launcher asked for a cell that another committed cell
already holds (``find_same``: the same config with every seed) writes an *alias* in its place,
``same_as.json`` naming that cell, instead of training the same seeds again; ``resolve`` follows
it, and every reader (``status``, the renderer) goes through ``resolve``.

``docs/reproductions.md`` is rendered from this tree (``nalu_jax.reproduce.render``).
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from nalu_jax.config import ConfigError

#: fields that select which seeds run or how a run is watched, not what a seed computes
SEED_FIELDS = ("num_seeds", "first_seed")
IGNORED_FIELDS = ("tensorboard", "checkpoint_every")
#: how the seeds are executed, not what a seed computes (``engine.blocks``: the block sets the
#: last bits, never a verdict): a cell run in blocks of 10 on a CPU is the same protocol as one
#: run in one block of 50 on a GPU, so more seeds run on another platform extend it. The cell's
#: ``config.json`` keeps its first batch's block (what ``check`` re-runs with); each provenance
#: batch records its own.
EXECUTION_FIELDS = ("seed_block",)
#: per-file size limit: results hold per-seed rows, not histories or checkpoints
MAX_FILE_BYTES = 2_000_000
#: summary keys that describe the machine's speed, not the seeds (summed or recomputed on merge)
TIMING_KEYS = (
    "wall_time_s", "compile_time_s", "seed_steps_per_s", "resumed_from_step", "stopped_at_step"
)  # fmt: skip
_SKIP_DIRS = {"checkpoints", "checkpoints-unusable", "tensorboard", "cells"}
#: an alias cell's one file: {"same_as": path of the cell holding its data, relative to it}
ALIAS_FILE = "same_as.json"


def default_root() -> str:
    """``results/`` of the source checkout this package runs from, else ``./results``."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.exists(os.path.join(here, "pyproject.toml")):
        return os.path.join(here, "results")
    return os.path.abspath("results")


# ---------------------------------------------------------------------------- provenance


def _git(*args: str, cwd: str | None = None) -> str:
    here = cwd or os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(
            ["git", "-C", here, *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()


def cpu_name() -> str:
    """The CPU's model name (Linux), else the processor or architecture."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """This machine: CPU, cores, and the JAX devices a run here uses; on XLA:CPU also the
    vector width of its generated loops (``hostenv.cpu_vector_width``), where it is known."""
    import jax

    from nalu_jax.runtime import hostenv

    devices = jax.devices()
    out = {
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "platform": devices[0].platform,
        "devices": len(devices),
        "device_kind": devices[0].device_kind,
    }
    width = hostenv.cpu_vector_width() if out["platform"] == "cpu" else None
    return out if width is None else {**out, "vector_width": width}


def and_list(items) -> str:
    """Items in a sentence: ``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def seed_span(batch: dict) -> str:
    """A provenance batch's seeds, first to last: "0–4"."""
    return f"{batch['first_seed']}–{batch['first_seed'] + batch['num_seeds'] - 1}"


def describe_machine(m: dict, paren: bool = False) -> str:
    """A provenance machine in words: the CPU, its cores and, where recorded, XLA:CPU's vector
    width ("AMD EPYC, 2 cores, 256-bit vectors"; ``paren``: "AMD EPYC (2 cores, …)"), or the
    accelerator's kind."""
    if m["platform"] != "cpu":
        return m["device_kind"]
    detail = f"{m['cores']} cores" + (
        f", {m['vector_width']}-bit vectors" if m.get("vector_width") else ""
    )
    return f"{m['cpu']} ({detail})" if paren else f"{m['cpu']}, {detail}"


def wall_by_machine(batches, walls: dict | None = None) -> dict:
    """Provenance ``batches``' training wall seconds per machine (``describe_machine``),
    added into ``walls`` where given: ``{"AMD EPYC, 2 cores": 1808.1, "NVIDIA H200": 392.0}``."""
    walls = {} if walls is None else walls
    for b in batches:
        where = describe_machine(b["machine"])
        walls[where] = walls.get(where, 0.0) + float(b.get("wall_time_s") or 0.0)
    return walls


def minutes_on(walls: dict) -> str:
    """Wall seconds per machine in words, in the dict's order: "30.1 min on AMD EPYC, 2
    cores; 6.5 min on NVIDIA H200"."""
    return "; ".join(f"{s / 60:.1f} min on {where}" for where, s in walls.items())


def versions() -> dict:
    import flax
    import jax
    import jaxlib
    import optax

    return {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "flax": flax.__version__,
        "optax": optax.__version__,
    }


def code_modified(cwd: str | None = None) -> bool:
    """Whether tracked files of the checkout other than ``results/`` and prose (``docs/``,
    Markdown) differ from its commit. Code, not data: a table run commits its cells one after
    another, so ``results/`` is modified from the second cell on, and a document edited while
    a run trains changes nothing it computes."""
    status = ["status", "--porcelain", "--untracked-files=no"]
    return bool(_git(*status, "--", ":(top)", ":(top,exclude)results", ":(top,exclude)docs",
                     ":(top,exclude,glob)**/*.md", cwd=cwd))  # fmt: skip


def provenance_entry(
    summary: dict, config: dict, command: str | None = None, code_commit: str | None = None
) -> dict:
    """One batch's provenance: code, machine, seeds, budget and timing of a finished run.
    ``code_commit``: the commit the run was made at, when it is not this checkout's HEAD."""
    timings = _timing(summary)
    # a copy of the tree shipped to another machine (a cluster node, a lent GPU) may have no
    # .git or a stale one: the launcher names the commit it shipped in NALU_JAX_COMMIT
    named = os.environ.get("NALU_JAX_COMMIT", "")
    commit = code_commit or named or _git("rev-parse", "HEAD")
    if code_commit:
        dirty = False
    elif named:
        dirty = os.environ.get("NALU_JAX_DIRTY", "") == "1"
    elif commit:
        dirty = code_modified()
    else:
        commit, dirty = "unknown", False
    return {
        "commit": commit,
        "dirty": dirty,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "versions": versions(),
        "first_seed": int(config.get("first_seed", 0)),
        "num_seeds": int(config["num_seeds"]),
        "num_steps": int(config.get("num_steps", 0) or 0),
        "command": command if command is not None else invocation(sys.argv),
        # the platform and device kind are in "machine"; "default" is TF32 on an NVIDIA GPU
        "matmul_precision": config.get("matmul_precision", "highest"),
        **({"seed_block": int(config["seed_block"])} if "seed_block" in config else {}),
        **timings,
    }


#: the checkout (the directory above the package)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def invocation(argv: list[str], root: str = ROOT) -> str:
    """The command line as a reader of the checkout would type it: a script of the checkout
    (``/abs/checkout/launch/reproduce.py``) as ``python -m launch.reproduce``, and paths
    inside the checkout relative to it, so the record names no machine's directories."""
    root = os.path.abspath(root) + os.sep
    head, *rest = argv or [""]
    path = os.path.abspath(head)
    if head.endswith(".py") and path.startswith(root):
        module = os.path.relpath(path, root)[: -len(".py")].replace(os.sep, ".")
        head = f"python -m {module}"
    return " ".join([head, *(a.replace(root, "") for a in rest)])


def _timing(summary: dict) -> dict:
    """Wall time and seed-steps/s of a workdir's summary (a sweep: over its settings; the grid
    world: summed over its agents, one program each, which report seed-updates/s)."""
    if summary.get("agents") and not summary.get("wall_time_s"):
        parts = [{**a, "seed_steps_per_s": a.get("seed_updates_per_s")} for a in summary["agents"]]
        walls = [float(a.get("wall_time_s") or 0.0) for a in parts]
        compiles = [float(a.get("compile_time_s") or 0.0) for a in parts]
        rates = [float(a["seed_steps_per_s"]) for a in parts if a.get("seed_steps_per_s")]
        return {
            "wall_time_s": round(sum(walls), 1),
            "compile_time_s": round(sum(compiles), 1),
            "seed_steps_per_s": round(float(np.mean(rates)), 1) if rates else None,
        }
    parts = summary.get("settings") or [summary]
    walls = [float(p.get("wall_time_s") or 0.0) for p in parts]
    compiles = [float(p.get("compile_time_s") or 0.0) for p in parts]
    if len(set(compiles)) == 1:  # the settings of one program report the program's time
        wall, compile_s = max(walls), compiles[0]
    else:  # one program per setting (e.g. the identity task's activations)
        wall, compile_s = sum(walls), sum(compiles)
    rates = [float(p["seed_steps_per_s"]) for p in parts if p.get("seed_steps_per_s")]
    stopped = [p.get("stopped_at_step") for p in parts]
    return {
        "wall_time_s": round(wall, 1),
        "compile_time_s": round(compile_s, 1),
        "seed_steps_per_s": round(float(np.mean(rates)), 1) if rates else None,
        # every run of the batch had diverged by then and was not trained on (engine.loop)
        **({"stopped_at_step": max(stopped)} if None not in stopped else {}),
    }


# ------------------------------------------------------------------------------- reading


def read_json(path: str):
    with open(path) as f:
        return json.load(f)


def read_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def config_dict(config) -> dict:
    """A config (ConfigDict, dict, or JSON text) as a plain dict."""
    if isinstance(config, str):
        return json.loads(config)
    if isinstance(config, dict):
        return json.loads(json.dumps(config))
    return json.loads(config.to_json_best_effort())


def _comparable(config: dict) -> dict:
    from nalu_jax.config import with_added_fields

    config = with_added_fields(config)
    return {
        k: v for k, v in config.items() if k not in SEED_FIELDS + IGNORED_FIELDS + EXECUTION_FIELDS
    }


def protocol_difference(have: dict, want: dict) -> str | None:
    """The dotted name of the first field where two configs (plain dicts) differ as protocols
    (seed selection, monitoring and execution fields aside); None when they are the same."""
    from nalu_jax.runtime.workdir import first_difference

    return first_difference(_comparable(have), _comparable(want))


def alias_target(cell: str) -> str | None:
    """The cell an alias ``cell`` names (a path), or None when ``cell`` is not an alias."""
    path = os.path.join(cell, ALIAS_FILE)
    if not os.path.exists(path):
        return None
    return os.path.normpath(os.path.join(cell, read_json(path)["same_as"]))


def resolve(cell: str) -> str:
    """The directory holding ``cell``'s data: ``cell`` itself, or the cell its alias names."""
    return alias_target(cell) or cell


def status(cell: str, config) -> tuple[str, int]:
    """Whether committed cell ``cell`` holds ``config``'s result.

    Returns ``(state, seeds)``: ``("missing", 0)``; ``("done", n)`` when it holds the same
    config with every one of its seeds; ``("extend", n)`` when it holds the same config with
    the first ``n`` of its seeds (n < num_seeds), so only the rest need to run; ``("other", n)``
    when it holds a different config (or seeds that are not a prefix). An alias is "done" when
    the cell it names is, and otherwise "missing" (it holds no data of its own to extend or
    keep: a run replaces it).
    """
    target = alias_target(cell)
    if target is not None:
        state = status(target, config)
        return state if state[0] == "done" else ("missing", 0)
    path = os.path.join(cell, "config.json")
    if not os.path.exists(path) or not os.path.exists(os.path.join(cell, "provenance.json")):
        return "missing", 0
    have, want = read_json(path), config_dict(config)
    n = int(have.get("num_seeds", 0))
    if _comparable(have) != _comparable(want):
        return "other", n
    first, total = int(want.get("first_seed", 0)), int(want["num_seeds"])
    if int(have.get("first_seed", 0)) != first:
        return "other", n
    if n >= total:
        return ("done", n) if n == total else ("other", n)
    return "extend", n


def difference(cell: str, config) -> str | None:
    """The dotted name of the first field where committed cell ``cell`` and ``config`` differ:
    a protocol field (``protocol_difference``), else ``"first_seed"`` or ``"num_seeds"`` (the
    same protocol with other seeds); None when they are the same."""
    have, want = read_json(os.path.join(cell, "config.json")), config_dict(config)
    field = protocol_difference(have, want)
    if field is None:
        for name in ("first_seed", "num_seeds"):
            if int(have.get(name, 0)) != int(want.get(name, 0)):
                return name
    return field


def kept(cell: str, config) -> str | None:
    """``nalu_jax.main --results`` and ``launch.compare_models --results`` replace a committed
    cell of another protocol when their run finishes; a cell holding this protocol with other
    seeds (more of them, or others) would lose seeds, so it is kept: the sentence saying so,
    or None when ``cell`` may be written (missing, the same config, or another protocol)."""
    if status(cell, config)[0] != "other":
        return None
    field = difference(cell, config)
    if field not in SEED_FIELDS:
        return None
    return (f"{cell} holds this config with other seeds ({field} differs): it is kept, and "
            "this run's results stay in its workdir.")  # fmt: skip


def missing_seeds(config, have: int):
    """The config of the seeds that a cell holding the first ``have`` of ``config``'s seeds
    lacks (``status`` "extend"): from seed ``first_seed + have`` on, with an accelerator's
    block fitted to that many (``engine.blocks.fit_seed_block``). ``config`` is not changed."""
    from nalu_jax.engine.blocks import fit_seed_block

    more = config.copy_and_resolve_references()
    more.first_seed = int(config.first_seed) + have
    more.num_seeds = int(config.num_seeds) - have
    return fit_seed_block(more)


# ------------------------------------------------------------------------------- writing


def _files(workdir: str):
    """Relative paths of the per-seed files of a finished workdir."""
    out = []
    for root, dirs, names in os.walk(workdir):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(root, workdir)
        for name in sorted(names):
            if name.startswith("."):
                continue
            if name.endswith(".csv") or name in ("summary.json", "config.json", "reference.json"):
                path = os.path.join(root, name)
                if os.path.getsize(path) > MAX_FILE_BYTES:
                    raise ConfigError(
                        f"{os.path.join(rel, name)} is {os.path.getsize(path):,} bytes; results "
                        f"hold per-seed files of at most {MAX_FILE_BYTES:,} bytes."
                    )
                out.append(os.path.normpath(os.path.join(rel, name)))
    return out


def _replace_dir(tmp: str, cell: str) -> None:
    """Move the finished ``tmp`` directory to ``cell``, replacing it (readers see one or the
    other)."""
    old = None
    if os.path.exists(cell):
        old = tempfile.mkdtemp(prefix=".old-", dir=os.path.dirname(cell))
        os.rmdir(old)
        os.replace(cell, old)
    os.replace(tmp, cell)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def _tmpdir(cell: str) -> str:
    parent = os.path.dirname(os.path.abspath(cell))
    os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=f".{os.path.basename(cell)}-", dir=parent)


@contextlib.contextmanager
def _writing(cell: str):
    """A temporary directory beside ``cell`` to fill: leaving the block without an error
    replaces ``cell`` with it (``_replace_dir``), an error removes it."""
    tmp = _tmpdir(cell)
    try:
        yield tmp
        _replace_dir(tmp, cell)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def commit(
    workdir: str, cell: str, *, command: str | None = None, code_commit: str | None = None
) -> str:
    """Copy the finished run in ``workdir`` into results cell ``cell`` (replacing it), with a
    one-batch ``provenance.json``. Returns ``cell``."""
    from nalu_jax.reporting.report import atomic_write, dumps

    if not os.path.exists(os.path.join(workdir, "summary.json")):
        raise ConfigError(f"{workdir} holds no finished run (no summary.json) to commit.")
    files = _files(workdir)
    config = read_json(os.path.join(workdir, "config.json"))
    summary = read_json(os.path.join(workdir, "summary.json"))
    with _writing(cell) as tmp:
        for rel in files:
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            shutil.copyfile(os.path.join(workdir, rel), os.path.join(tmp, rel))
        entry = provenance_entry(summary, config, command, code_commit)
        atomic_write(os.path.join(tmp, "provenance.json"), dumps({"batches": [entry]}) + "\n")
    return cell


# ------------------------------------------------------------------- merging seed batches


def _merge_summary(experiment, a: dict, b: dict, rows: list[dict]) -> dict:
    """The summary of the union of two batches' seeds (``rows``, sorted by seed): the
    experiment's ``merge_summary`` (its statistics recomputed from the rows), speed fields
    combined."""
    merged = experiment.merge_summary(a, rows)
    merged["num_seeds"] = len(rows)
    merged["first_seed"] = min(int(a["first_seed"]), int(b["first_seed"]))
    wall = float(a.get("wall_time_s") or 0) + float(b.get("wall_time_s") or 0)
    comp = float(a.get("compile_time_s") or 0) + float(b.get("compile_time_s") or 0)
    merged["wall_time_s"], merged["compile_time_s"] = wall, comp
    loop = wall - comp
    trained = sum(_trained_seed_steps(x) for x in (a, b))
    merged["seed_steps_per_s"] = trained / loop if loop > 0 else 0.0
    merged["resumed_from_step"] = None
    merged.pop("stopped_at_step", None)
    if "stopped_at_step" in a and "stopped_at_step" in b:  # neither trained to the end
        merged["stopped_at_step"] = max(int(a["stopped_at_step"]), int(b["stopped_at_step"]))
    return merged


def _trained_seed_steps(summary: dict) -> float:
    """The seed-steps a batch trained: all of them, or, where every run had diverged and
    training stopped (``stopped_at_step``), those its rate and loop time give."""
    if "stopped_at_step" not in summary:
        return int(summary["num_seeds"]) * int(summary["num_steps"])
    loop = float(summary.get("wall_time_s") or 0) - float(summary.get("compile_time_s") or 0)
    return float(summary.get("seed_steps_per_s") or 0) * loop


def _csv_text(rows: list[dict], header: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _merge_population(experiment, a_dir: str, b_dir: str, out_dir: str) -> dict:
    """Merge one population's ``seeds.csv`` + ``summary.json`` (and ``summary.md``)."""
    from nalu_jax.reporting.report import atomic_write, dumps

    with open(os.path.join(a_dir, "seeds.csv"), newline="") as f:
        header = next(csv.reader(f))
    rows_a = read_csv(os.path.join(a_dir, "seeds.csv"))
    rows_b = read_csv(os.path.join(b_dir, "seeds.csv"))
    seeds_a = {int(r["seed"]) for r in rows_a}
    if seeds_a & {int(r["seed"]) for r in rows_b}:
        raise ConfigError(f"{b_dir} repeats seeds of {a_dir}; a batch must bring new seeds.")
    rows = sorted(rows_a + rows_b, key=lambda r: int(r["seed"]))
    summary = _merge_summary(
        experiment,
        read_json(os.path.join(a_dir, "summary.json")),
        read_json(os.path.join(b_dir, "summary.json")),
        rows,
    )
    os.makedirs(out_dir, exist_ok=True)
    atomic_write(os.path.join(out_dir, "seeds.csv"), _csv_text(rows, header))
    atomic_write(os.path.join(out_dir, "summary.json"), dumps(summary) + "\n")
    if os.path.exists(os.path.join(a_dir, "summary.md")):
        atomic_write(os.path.join(out_dir, "summary.md"), experiment.format_summary(summary))
    return summary


def merge(cell: str, workdir: str, *, command: str | None = None) -> str:
    """Add the seeds of the finished run in ``workdir`` (same config, the seeds following the
    cell's) to committed cell ``cell``: seeds.csv rows joined in seed order, summaries
    recomputed, a second provenance batch, and the new seeds' rows of the cell's
    ``random_baseline.csv`` where it holds one. For an experiment whose summary is a function of
    its ``seeds.csv``: one with a ``merge_summary`` hook (``experiments.contract``; the static
    family, the single-module sweeps, the recurrent task, a ``static_task`` of one's own)."""
    from nalu_jax.experiments import experiment_named
    from nalu_jax.reporting.report import atomic_write, dumps

    have = read_json(os.path.join(cell, "config.json"))
    new = read_json(os.path.join(workdir, "config.json"))
    if _comparable(have) != _comparable(new):
        raise ConfigError(f"{workdir} was run with another config than {cell}; cannot merge.")
    if int(new["first_seed"]) != int(have["first_seed"]) + int(have["num_seeds"]):
        raise ConfigError(
            f"{workdir} starts at seed {new['first_seed']}; cell {cell} needs the seeds from "
            f"{int(have['first_seed']) + int(have['num_seeds'])} on."
        )
    try:
        experiment = experiment_named(have.get("experiment", "arithmetic"))
    except KeyError as e:
        raise ConfigError(e.args[0]) from None
    if experiment.merge_summary is None:
        raise ConfigError(
            f"experiment {experiment.name!r} has no merge_summary hook (its summary is not a "
            f"function of seeds.csv alone), so {workdir}'s seeds cannot be added to {cell}: "
            "run the cell whole with all its seeds."
        )
    with _writing(cell) as tmp:
        for rel in _files(cell):  # start from the committed cell
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            shutil.copyfile(os.path.join(cell, rel), os.path.join(tmp, rel))
        summary_b = read_json(os.path.join(workdir, "summary.json"))
        if "settings" in summary_b:  # a sweep: merge each setting, then the combined summary
            settings = []
            for name in sorted(os.listdir(os.path.join(cell, "settings"))):
                settings.append(
                    _merge_population(
                        experiment,
                        os.path.join(cell, "settings", name),
                        os.path.join(workdir, "settings", name),
                        os.path.join(tmp, "settings", name),
                    )
                )
            combined = dict(read_json(os.path.join(cell, "summary.json")))
            combined["settings"] = settings
            for key in ("num_seeds", "first_seed"):
                if key in combined:
                    combined[key] = settings[0][key]
            atomic_write(os.path.join(tmp, "summary.json"), dumps(combined) + "\n")
        else:
            _merge_population(experiment, cell, workdir, tmp)
        _extend_baseline(cell, tmp, new)
        merged_config = dict(have)
        merged_config["num_seeds"] = int(have["num_seeds"]) + int(new["num_seeds"])
        atomic_write(
            os.path.join(tmp, "config.json"),
            json.dumps(merged_config, indent=2, sort_keys=True) + "\n",
        )
        batches = read_json(os.path.join(cell, "provenance.json"))["batches"]
        batches.append(provenance_entry(summary_b, new, command))
        atomic_write(os.path.join(tmp, "provenance.json"), dumps({"batches": batches}) + "\n")
    return cell


def _extend_baseline(cell: str, tmp: str, new: dict) -> None:
    """A cell holding the NALU paper's random baseline (``launch/random_baseline.py``) gets
    the new batch's seeds' rows appended, computed here from the batch's own config; the
    committed rows stay as they are (another machine's bits for them would only move them)."""
    from nalu_jax.experiments.random_baseline import (
        BASELINE_CSV,
        baseline_rows,
        config_from_json,
    )
    from nalu_jax.reporting.report import atomic_write

    path = os.path.join(cell, BASELINE_CSV)
    if not os.path.exists(path):
        return
    with open(path) as f:
        text = f.read()
    rows = baseline_rows(config_from_json(new))
    atomic_write(os.path.join(tmp, BASELINE_CSV), text + "\n".join(rows) + "\n")


def cells(root: str, aliases: bool = True) -> list[str]:
    """Every committed cell under ``root`` (directories holding ``provenance.json``, and with
    ``aliases`` those holding ``same_as.json``)."""
    out = []
    marks = ("provenance.json", ALIAS_FILE) if aliases else ("provenance.json",)
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if any(m in names for m in marks):
            out.append(os.path.relpath(dirpath, root))
            dirs[:] = []
    return out


def find_same(root: str, config, exclude: str | None = None) -> str | None:
    """A committed cell under ``root`` (not an alias, not ``exclude``) that holds ``config``
    with every one of its seeds, as a path; None when there is none."""
    skip = os.path.normpath(exclude) if exclude else None
    for rel in cells(root, aliases=False):
        cell = os.path.join(root, rel)
        if os.path.normpath(cell) != skip and status(cell, config)[0] == "done":
            return cell
    return None


def alias(cell: str, target: str) -> str:
    """Write ``cell`` as an alias of committed cell ``target`` (replacing what ``cell`` held,
    atomically). Returns ``cell``."""
    from nalu_jax.reporting.report import atomic_write, dumps

    if not os.path.exists(os.path.join(target, "provenance.json")):
        raise ConfigError(f"{target} is not a committed cell, so {cell} cannot name it.")
    rel = os.path.relpath(os.path.abspath(target), os.path.abspath(cell))
    with _writing(cell) as tmp:
        atomic_write(os.path.join(tmp, ALIAS_FILE), dumps({"same_as": rel}) + "\n")
    return cell


def main(argv=None) -> int:
    """``python -m nalu_jax.reproduce.results commit WORKDIR CELL [--code_commit SHA]``: commit a
    finished run made outside the launchers as a results cell. The provenance's machine is
    this one, with the CPU devices a launcher here gives a run: commit on the machine that
    made the run."""
    import argparse

    from nalu_jax.runtime.hostenv import configure_host_devices

    configure_host_devices()  # before JAX starts: the devices the run had (``machine()``)

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("action", choices=["commit", "list"])
    p.add_argument("paths", nargs="*")
    p.add_argument("--code_commit", default=None, help="the commit the run was made at")
    p.add_argument("--command", default=None, help="the command that made the run")
    a = p.parse_args(argv)
    if a.action == "list":
        for c in cells(a.paths[0] if a.paths else default_root()):
            print(c)
        return 0
    if len(a.paths) != 2:
        p.error("commit takes WORKDIR CELL")
    try:
        commit(a.paths[0], a.paths[1], command=a.command, code_commit=a.code_commit)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    print(f"committed {a.paths[0]} to {a.paths[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
