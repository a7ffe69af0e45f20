"""Committed results (``nalu_jax.reproduce.results``) through ``launch/reproduce.py``: a finished
cell is committed with its provenance, a cell already committed is skipped, and a cell
extended from 2 to 4 seeds (only seeds 2–3 run) equals one run of 4 seeds, for the static
task and for a single-module cell (nine ranges as one sweep)."""

import csv
import json
import os
import subprocess
import sys

import jax
import pytest
from conftest import ROOT, jax_platform, load_config

from nalu_jax.reproduce import results as results_lib

ENV = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=1")
TIMING = set(results_lib.TIMING_KEYS)


def launch(*args):
    cmd = [sys.executable, "-m", "launch.reproduce", "--noprogress",
           "--steps=1000", "--smoke", "--calibration_steps=0", *args]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def summary_without_timing(path):
    s = json.load(open(os.path.join(path, "summary.json")))
    strip = lambda d: {k: v for k, v in d.items() if k not in TIMING}
    if "settings" in s:
        return {"settings": [strip(p) for p in s["settings"]]}
    return strip(s)


CASES = {
    "static": ("--table=iclr2020-arithmetic", "--ops=add", "--models=nau"),
    "single_module": ("--table=primer-single-module", "--ops=add", "--models=nau"),
}


@pytest.mark.slow  # 22–33 s a case on 2 idle cores
@pytest.mark.parametrize("case", sorted(CASES))
def test_commit_skip_and_extend_equal_one_larger_run(case, tmp_path):
    args, table = CASES[case], CASES[case][0].split("=")[1]
    res, direct = tmp_path / "results", tmp_path / "direct"
    out = launch(*args, "--seeds=2", f"--workdir={tmp_path / 'w2'}", f"--results={res}")
    cell = res / table / "add-nau"
    assert "committed to" in out
    prov = json.load(open(cell / "provenance.json"))["batches"]
    assert [(b["first_seed"], b["num_seeds"], b["num_steps"]) for b in prov] == [(0, 2, 1000)]
    assert prov[0]["machine"]["platform"] == jax_platform() and prov[0]["versions"]["jax"]
    assert prov[0]["machine"]["device_kind"] and prov[0]["matmul_precision"] == "highest"
    assert not (cell / "checkpoints").exists() and not (cell / "metrics.jsonl").exists()

    again = launch(*args, "--seeds=2", f"--workdir={tmp_path / 'w2b'}", f"--results={res}")
    assert "1 cells, 1 already done" in again and "committed to" not in again

    more = launch(*args, "--seeds=4", f"--workdir={tmp_path / 'w4'}", f"--results={res}")
    assert "running the 2 more" in more
    launch(*args, "--seeds=4", f"--workdir={tmp_path / 'w4direct'}", f"--results={direct}")
    one = direct / table / "add-nau"
    for rel in results_lib._files(str(one)):
        if rel.endswith(".csv"):
            assert (cell / rel).read_text() == (one / rel).read_text(), rel
    assert summary_without_timing(cell) == summary_without_timing(one)
    assert json.load(open(cell / "config.json")) == json.load(open(one / "config.json"))
    prov = json.load(open(cell / "provenance.json"))["batches"]
    assert [(b["first_seed"], b["num_seeds"]) for b in prov] == [(0, 2), (2, 2)]
    assert results_lib.status(str(cell), json.load(open(one / "config.json")))[0] == "done"


def test_status_and_refusals(tmp_path):
    cell = tmp_path / "cell"
    config = {"num_seeds": 4, "first_seed": 0, "num_steps": 10, "model": {"name": "nau"}}
    assert results_lib.status(str(cell), config) == ("missing", 0)
    cell.mkdir()
    (cell / "config.json").write_text(json.dumps({**config, "num_seeds": 2}))
    (cell / "provenance.json").write_text('{"batches": []}')
    assert results_lib.status(str(cell), config) == ("extend", 2)
    assert results_lib.status(str(cell), {**config, "num_seeds": 2}) == ("done", 2)
    assert results_lib.status(str(cell), {**config, "num_seeds": 1}) == ("other", 2)
    other = {**config, "model": {"name": "nmu"}}
    assert results_lib.status(str(cell), other) == ("other", 2)
    assert results_lib.status(str(cell), {**config, "tensorboard": False})[0] == "extend"
    # the seed block is how the seeds ran, not the protocol: another platform's block extends
    assert results_lib.status(str(cell), {**config, "seed_block": 50}) == ("extend", 2)
    assert results_lib.status(str(cell), {**config, "num_seeds": 2, "seed_block": 1})[0] == "done"
    assert results_lib.protocol_difference(config, {**other, "seed_block": 3}) == "model.name"
    assert results_lib.protocol_difference(config, {**config, "num_seeds": 9}) is None
    # the same protocol with other seeds: nalu_jax.main and compare_models keep the cell
    assert results_lib.difference(str(cell), {**config, "num_seeds": 1}) == "num_seeds"
    assert results_lib.difference(str(cell), {**config, "first_seed": 2}) == "first_seed"
    assert results_lib.difference(str(cell), other) == "model.name"
    assert results_lib.difference(str(cell), {**config, "num_seeds": 2}) is None
    assert "(num_seeds differs): it is kept" in results_lib.kept(
        str(cell), {**config, "num_seeds": 1}
    )
    assert "(first_seed differs)" in results_lib.kept(str(cell), {**config, "first_seed": 2})
    for replaced in (other, config, {**config, "num_seeds": 2}):  # another protocol, extend, done
        assert results_lib.kept(str(cell), replaced) is None
    assert results_lib.kept(str(tmp_path / "none"), config) is None
    with pytest.raises(results_lib.ConfigError, match="no finished run"):
        results_lib.commit(str(tmp_path / "nothing"), str(tmp_path / "c2"))


@pytest.mark.slow  # 25 s on 2 idle cores
def test_another_block_extends_a_cell_and_another_protocol_is_named(tmp_path):
    # A GPU resolves the block "auto" to all its runs, a CPU to the config's 10: more seeds run
    # on another platform are a batch of the same cell, recorded with the block they ran in.
    args, res = CASES["static"], tmp_path / "results"
    launch(*args, "--seeds=2", f"--workdir={tmp_path / 'w2'}", f"--results={res}")
    cell = res / "iclr2020-arithmetic" / "add-nau"
    first_block = json.load(open(cell / "config.json"))["seed_block"]
    assert first_block != 1
    more = launch(*args, "--seeds=4", "--config.seed_block=1", f"--workdir={tmp_path / 'w4'}",
                  f"--results={res}")  # fmt: skip
    assert "running the 2 more" in more
    prov = json.load(open(cell / "provenance.json"))["batches"]
    assert [(b["first_seed"], b["num_seeds"], b["seed_block"]) for b in prov] == [
        (0, 2, first_block),
        (2, 2, 1),
    ]
    merged = json.load(open(cell / "config.json"))
    assert merged["seed_block"] == first_block and merged["num_seeds"] == 4
    assert [r["seed"] for r in csv.DictReader(open(cell / "seeds.csv"))] == ["0", "1", "2", "3"]
    # another protocol is named by its own field, not by the seeds
    other = launch(*args, "--seeds=4", "--config.train.adam_eps=1e-07", f"--workdir={tmp_path / 'w5'}",
                   f"--results={res}")  # fmt: skip
    assert "holds another protocol (train.adam_eps differs)" in other


def test_provenance_command_names_no_machine_directories(tmp_path):
    from nalu_jax.reproduce.results import invocation

    root = str(tmp_path / "checkout")
    argv = [f"{root}/launch/reproduce.py", "--table=t", f"--workdir={root}/runs/t", "--seeds=2"]
    assert invocation(argv, root) == (
        "python -m launch.reproduce --table=t --workdir=runs/t --seeds=2"
    )
    argv = [f"{root}/nalu_jax/main.py", "--config=configs/identity.py"]
    assert invocation(argv, root) == "python -m nalu_jax.main --config=configs/identity.py"
    # a script outside the checkout keeps its name; other arguments are left alone
    assert invocation(["/elsewhere/x.py", "--a=/tmp/w"], root) == "/elsewhere/x.py --a=/tmp/w"


def test_alias_names_a_cell_holding_the_same_config(tmp_path):
    root = tmp_path / "results"
    config = {"num_seeds": 2, "first_seed": 0, "num_steps": 10, "model": {"name": "nmu"}}
    held = root / "table_a" / "mul-nmu"
    held.mkdir(parents=True)
    (held / "config.json").write_text(json.dumps(config))
    (held / "provenance.json").write_text('{"batches": []}')
    (held / "summary.json").write_text('{"success_rate": 1.0}')
    want = root / "table_b" / "mul-nmu"
    # only a cell with the same config and every seed is the same run
    assert results_lib.find_same(str(root), {**config, "num_seeds": 4}) is None
    assert results_lib.find_same(str(root), {**config, "model": {"name": "nau"}}) is None
    assert results_lib.find_same(str(root), config, exclude=str(held)) is None
    found = results_lib.find_same(str(root), config)
    assert os.path.samefile(found, held)

    results_lib.alias(str(want), found)
    assert sorted(os.listdir(want)) == [results_lib.ALIAS_FILE]
    assert json.load(open(want / results_lib.ALIAS_FILE)) == {"same_as": "../../table_a/mul-nmu"}
    assert os.path.samefile(results_lib.resolve(str(want)), held)
    assert results_lib.resolve(str(held)) == str(held)
    assert results_lib.status(str(want), config) == ("done", 2)
    # the alias holds no seeds of its own: another config (or more seeds) reads as missing
    assert results_lib.status(str(want), {**config, "num_seeds": 4}) == ("missing", 0)
    assert results_lib.cells(str(root)) == ["table_a/mul-nmu", "table_b/mul-nmu"]
    assert results_lib.cells(str(root), aliases=False) == ["table_a/mul-nmu"]
    # an alias is never found as the holder of a config, and names only committed cells
    assert os.path.samefile(results_lib.find_same(str(root), config, exclude=str(want)), held)
    with pytest.raises(results_lib.ConfigError, match="not a committed cell"):
        results_lib.alias(str(root / "c"), str(root / "nowhere"))


def test_launcher_aliases_a_cell_another_table_holds(tmp_path):
    """The ablation's NMU row is Table 1's × NMU cell, config for config: with that cell
    committed, the ablation names it instead of training the same seeds again, and its table
    shows the same figures."""
    from nalu_jax.reproduce.render import Renderer

    res = tmp_path / "results"
    launch("--table=iclr2020-arithmetic", "--ops=mul", "--models=nmu", "--seeds=2",
           f"--workdir={tmp_path / 'a'}", f"--results={res}")  # fmt: skip
    out = launch("--table=iclr2020-ablation", "--models=nmu", "--seeds=2",
                 f"--workdir={tmp_path / 'b'}", f"--results={res}")  # fmt: skip
    assert "holds the same config with all 2 seeds" in out and "1 already done" in out
    assert "committed to" not in out and not (tmp_path / "b" / "cells").exists()
    alias = res / "iclr2020-ablation" / "mul-nmu"
    assert os.listdir(alias) == [results_lib.ALIAS_FILE]
    rows = {}
    for table in ("iclr2020-arithmetic", "iclr2020-ablation"):
        with open(tmp_path / ("a" if table.endswith("arithmetic") else "b") / "table.csv") as f:
            row = next(r for r in csv.DictReader(f) if r["model"] == "nmu" and r["op"] == "mul")
        rows[table] = {k: row[k] for k in ("status", "num_seeds", "solved", "success_rate")}
    assert rows["iclr2020-ablation"] == rows["iclr2020-arithmetic"]
    assert rows["iclr2020-ablation"]["status"] == "done"
    r = Renderer(str(res))
    assert "the same config and seeds as `iclr2020-arithmetic/mul-nmu`" in r.provenance(
        "iclr2020-ablation/mul-nmu"
    )
    assert "the same run as `iclr2020-arithmetic/mul-nmu`" in r.timing_table("iclr2020-ablation")
    # a variant with its own config is not aliased: it runs
    out = launch("--table=iclr2020-ablation", "--models=nmu_no_clamp", "--seeds=2",
                 f"--workdir={tmp_path / 'b'}", f"--results={res}")  # fmt: skip
    assert "committed to" in out
    assert (res / "iclr2020-ablation" / "mul-nmu_no_clamp" / "provenance.json").exists()


def test_a_field_added_later_compares_as_its_old_value(tmp_path):
    """Cells and workdirs written before ``cpu_ynn_fusions`` existed ran with YNNPACK's
    fusions: they hold the config with the field True, and not one with it False."""
    from nalu_jax.config import ADDED_FIELDS
    from nalu_jax.runtime.workdir import prepare_workdir, release

    assert ADDED_FIELDS == {"cpu_ynn_fusions": True, "matmul_precision": "highest"}
    old = {"num_seeds": 2, "first_seed": 0, "num_steps": 10, "model": {"name": "nmu"}}
    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / "config.json").write_text(json.dumps(old))
    (cell / "provenance.json").write_text('{"batches": []}')
    assert results_lib.status(str(cell), {**old, "cpu_ynn_fusions": True}) == ("done", 2)
    assert results_lib.status(str(cell), {**old, "cpu_ynn_fusions": False}) == ("other", 2)
    assert results_lib.status(str(cell), {**old, "matmul_precision": "highest"}) == ("done", 2)
    assert results_lib.status(str(cell), {**old, "matmul_precision": "default"}) == ("other", 2)

    config = load_config("arithmetic", "model=nmu")
    written = json.loads(config.to_json_best_effort())
    del written["cpu_ynn_fusions"]
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.json").write_text(json.dumps(written))
    prepare_workdir(str(work), config)  # resumes: the old run had the default
    release(str(work))
    assert json.load(open(work / "config.json"))["cpu_ynn_fusions"] is True
    (work / "config.json").write_text(json.dumps(written))
    config.cpu_ynn_fusions = False
    with pytest.raises(results_lib.ConfigError, match="differs in cpu_ynn_fusions"):
        prepare_workdir(str(work), config)
    release(str(work))


def test_a_task_field_added_later_compares_as_its_old_value(tmp_path):
    # cells committed before task.exact_targets existed computed float32 targets
    from nalu_jax.config import ADDED_TASK_FIELDS

    # (and judged every evaluation: task.select_from_step 0)
    assert ADDED_TASK_FIELDS == {"exact_targets": False, "select_from_step": 0}
    task = {"op": "mul", "interpolation_range": [1.0, 2.0]}
    old = {"num_seeds": 2, "first_seed": 0, "num_steps": 10, "task": task}
    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / "config.json").write_text(json.dumps(old))
    (cell / "provenance.json").write_text('{"batches": []}')
    for field, value, state in (("exact_targets", False, "done"), ("exact_targets", True, "other"),
                                ("select_from_step", 0, "done"),
                                ("select_from_step", 5, "other")):  # fmt: skip
        new = {**old, "task": {**task, field: value}}
        assert results_lib.status(str(cell), new) == (state, 2)
    config = load_config("arithmetic", "model=nmu")
    assert config.task.exact_targets is False and config.task.select_from_step == 0


def test_provenance_calls_a_tree_modified_for_code_not_for_results(tmp_path):
    repo = tmp_path / "checkout"
    (repo / "results" / "t").mkdir(parents=True)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "unit.py").write_text("x = 1\n")
    (repo / "results" / "t" / "seeds.csv").write_text("seed\n0\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").write_text("a\n")
    (repo / "docs" / "template.md").write_text("b\n")
    (repo / "NOTES.md").write_text("c\n")
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert not results_lib.code_modified(str(repo / "pkg"))
    (repo / "results" / "t" / "seeds.csv").write_text("seed\n0\n1\n")  # a cell just committed
    (repo / "untracked.txt").write_text("")
    assert not results_lib.code_modified(str(repo / "pkg"))
    # prose edited while a run trains: not code
    (repo / "docs" / "guide.md").write_text("a, edited\n")
    (repo / "NOTES.md").write_text("c, edited\n")
    assert not results_lib.code_modified(str(repo / "pkg"))
    (repo / "pkg" / "unit.py").write_text("x = 2\n")
    assert results_lib.code_modified(str(repo / "pkg"))


def test_provenance_takes_the_commit_a_launcher_names_over_the_copys_git(monkeypatch):
    # a tree shipped to another machine may carry a stale .git: NALU_JAX_COMMIT wins, with
    # NALU_JAX_DIRTY; without it, this checkout's HEAD
    summary, config = {"wall_time_s": 3.0, "seed_steps_per_s": 7.0}, {"num_seeds": 2}
    monkeypatch.setenv("NALU_JAX_COMMIT", "f" * 40)
    monkeypatch.setenv("NALU_JAX_DIRTY", "0")
    entry = results_lib.provenance_entry(summary, config)
    assert (entry["commit"], entry["dirty"]) == ("f" * 40, False)
    monkeypatch.setenv("NALU_JAX_DIRTY", "1")
    assert results_lib.provenance_entry(summary, config)["dirty"] is True
    assert results_lib.provenance_entry(summary, config, code_commit="abc")["commit"] == "abc"
    monkeypatch.delenv("NALU_JAX_COMMIT")
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    assert results_lib.provenance_entry(summary, config)["commit"] == (head or "unknown")


def test_commit_command_records_the_devices_a_launcher_gives_a_run(tmp_path):
    """``python -m nalu_jax.reproduce.results commit``: a one-batch provenance with the devices
    JAX gives a launcher: on XLA:CPU one device per usable core, or what XLA_FLAGS says; on an
    accelerator its devices (the XLA:CPU flag does not apply there)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.json").write_text(json.dumps({"num_seeds": 2, "num_steps": 10}))
    (work / "summary.json").write_text(json.dumps({"wall_time_s": 3.0, "seed_steps_per_s": 7.0}))
    (work / "seeds.csv").write_text("seed,solved\n0,1\n1,0\n")
    cmd = [sys.executable, "-m", "nalu_jax.reproduce.results", "commit", str(work)]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    on_cpu = jax_platform() == "cpu"
    for name, environ, cpu_devices in (
        ("cores", env, len(os.sched_getaffinity(0))),
        ("flag", dict(env, XLA_FLAGS="--xla_force_host_platform_device_count=3"), 3),
    ):
        # an accelerator's devices, whatever the XLA:CPU flag says
        devices = cpu_devices if on_cpu else jax.local_device_count()
        cell = tmp_path / name
        out = subprocess.run(
            [*cmd, str(cell), "--code_commit", "abc", "--command", "c"],
            cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        (batch,) = json.load(open(cell / "provenance.json"))["batches"]
        assert batch["machine"]["devices"] == devices
        assert (batch["commit"], batch["command"], batch["num_seeds"]) == ("abc", "c", 2)
        assert (cell / "seeds.csv").read_text() == "seed,solved\n0,1\n1,0\n"


def test_gridworld_wall_time_is_its_agents_summed():
    """The grid world's summary keeps its timings per agent (one program each)."""
    from nalu_jax.reproduce.results import _timing

    summary = {"agents": [
        {"wall_time_s": 261.14, "compile_time_s": 20.7, "seed_updates_per_s": 1300.0},
        {"wall_time_s": 613.42, "compile_time_s": 28.0, "seed_updates_per_s": 577.4},
    ]}  # fmt: skip
    assert _timing(summary) == {"wall_time_s": 874.6, "compile_time_s": 48.7,
                                "seed_steps_per_s": 938.7}  # fmt: skip


def test_a_batch_that_stopped_training_counts_only_the_steps_it_trained():
    """Where every seed of a batch diverged and training stopped (``stopped_at_step``), its
    provenance says so and a merged rate counts the seed-steps it trained, not its budget."""
    from nalu_jax.reproduce.results import _merge_summary, _timing

    class Experiment:
        merge_summary = staticmethod(lambda a, rows: dict(a))

    full = {"first_seed": 0, "num_seeds": 4, "num_steps": 1000, "wall_time_s": 12.0,
            "compile_time_s": 2.0, "seed_steps_per_s": 400.0}  # fmt: skip
    stopped = {**full, "wall_time_s": 4.0, "seed_steps_per_s": 200.0, "stopped_at_step": 100}
    rows = [{}] * 8
    # 4 × 1,000 trained + 200/s × 2 s = 4,400 seed-steps over 10 s + 2 s of loop
    merged = _merge_summary(Experiment, full, stopped, rows)
    assert merged["seed_steps_per_s"] == pytest.approx(4400 / 12)
    assert "stopped_at_step" not in merged  # one batch trained to the end
    both = _merge_summary(Experiment, {**stopped, "stopped_at_step": 300}, stopped, rows)
    assert both["stopped_at_step"] == 300 and both["seed_steps_per_s"] == pytest.approx(200)
    assert _merge_summary(Experiment, full, full, rows)["seed_steps_per_s"] == 8000 / 20
    assert _timing(stopped)["stopped_at_step"] == 100 and "stopped_at_step" not in _timing(full)
    sweep = {"settings": [stopped, {**stopped, "stopped_at_step": 200}]}
    assert _timing(sweep)["stopped_at_step"] == 200
    assert "stopped_at_step" not in _timing({"settings": [stopped, full]})


def test_recurrent_cell_extended_by_a_batch_equals_one_larger_run(tmp_path):
    # the recurrent task's summary is a function of seeds.csv (its merge_summary hook): a cell
    # of seeds 0–1 merged with a batch of seeds 2–3 equals one run of seeds 0–3
    from nalu_jax.experiments import train_and_evaluate

    def run(first, num, name):
        config = load_config("recurrent", "op=add,smoke")
        config.first_seed, config.num_seeds, config.tensorboard = first, num, False
        train_and_evaluate(config, str(tmp_path / name), progress=False)
        return str(tmp_path / name)

    cell = str(tmp_path / "results" / "recurrent" / "add")
    results_lib.commit(run(0, 2, "first"), cell)
    results_lib.merge(cell, run(2, 2, "more"))
    one = tmp_path / "results" / "one"
    results_lib.commit(run(0, 4, "whole"), str(one))
    assert open(os.path.join(cell, "seeds.csv")).read() == (one / "seeds.csv").read_text()
    assert summary_without_timing(cell) == summary_without_timing(one)
    assert json.load(open(os.path.join(cell, "config.json")))["num_seeds"] == 4
    batches = json.load(open(os.path.join(cell, "provenance.json")))["batches"]
    assert [(b["first_seed"], b["num_seeds"]) for b in batches] == [(0, 2), (2, 2)]


def test_an_experiment_without_merge_summary_is_refused_in_one_sentence(tmp_path):
    from nalu_jax.experiments import EXPERIMENTS

    assert EXPERIMENTS["identity"].merge_summary is None
    cell, more = tmp_path / "cell", tmp_path / "more"
    for d, first in ((cell, 0), (more, 2)):
        d.mkdir()
        (d / "config.json").write_text(
            json.dumps({"experiment": "identity", "first_seed": first, "num_seeds": 2})
        )
    with pytest.raises(results_lib.ConfigError, match="'identity' has no merge_summary hook"):
        results_lib.merge(str(cell), str(more))
    (more / "config.json").write_text(
        json.dumps({"experiment": "nosuch", "first_seed": 2, "num_seeds": 2})
    )
    (cell / "config.json").write_text(
        json.dumps({"experiment": "nosuch", "first_seed": 0, "num_seeds": 2})
    )
    with pytest.raises(results_lib.ConfigError, match="register_experiment"):
        results_lib.merge(str(cell), str(more))


def test_describe_machine_names_the_vector_width_where_recorded():
    cpu = {"platform": "cpu", "cpu": "AMD EPYC", "cores": 2, "device_kind": "cpu"}
    assert results_lib.describe_machine(cpu) == "AMD EPYC, 2 cores"
    assert results_lib.describe_machine(cpu, paren=True) == "AMD EPYC (2 cores)"
    wide = {**cpu, "vector_width": 512}
    assert results_lib.describe_machine(wide) == "AMD EPYC, 2 cores, 512-bit vectors"
    assert results_lib.describe_machine(wide, paren=True) == "AMD EPYC (2 cores, 512-bit vectors)"
    gpu = {"platform": "gpu", "cpu": "AMD EPYC", "cores": 16, "device_kind": "NVIDIA H200"}
    assert results_lib.describe_machine(gpu) == "NVIDIA H200"
