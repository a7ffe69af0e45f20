"""End-to-end behaviour of the seeds-as-a-vmap-axis engine on the arithmetic experiment."""

import csv
import json
import os

import numpy as np
import pytest
from conftest import load_config, tiny

from nalu_jax.config import ConfigError
from nalu_jax.engine import loop as loop_lib
from nalu_jax.engine import train as train_lib
from nalu_jax.experiments import train_and_evaluate
from nalu_jax.runtime import checkpoint as checkpoint_lib


def read_csv(workdir):
    with open(os.path.join(workdir, "seeds.csv")) as f:
        return list(csv.DictReader(f))


def test_figures_off_writes_the_same_numbers_and_no_png(tmp_path, monkeypatch):
    config = tiny(load_config("arithmetic", "model=nmu,op=mul"))
    monkeypatch.setenv("NALU_JAX_FIGURES", "1")
    train_and_evaluate(config, str(tmp_path / "on"), progress=False)
    monkeypatch.setenv("NALU_JAX_FIGURES", "0")
    off = tmp_path / "off"
    off.mkdir()
    (off / "curves.png").write_bytes(b"an earlier run's figure")
    train_and_evaluate(config, str(off), progress=False)
    assert (tmp_path / "on" / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert not (off / "curves.png").exists()  # no figure outlives the numbers it showed
    for name in ("seeds.csv", "metrics.jsonl", "config.json"):
        assert (off / name).read_bytes() == (tmp_path / "on" / name).read_bytes(), name


def test_outputs_exist_and_parse(tmp_path, figures_on):
    config = tiny(load_config("arithmetic", "model=nmu,op=mul"))
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert json.load(open(tmp_path / "config.json"))["model"]["name"] == "nmu"
    lines = [json.loads(x) for x in open(tmp_path / "metrics.jsonl")]
    assert [x["step"] for x in lines] == [0, 500, 1000]
    assert lines[0]["train_loss"] is None and lines[1]["train_loss"]["0.5"] > 0
    for line in lines:
        assert set(line) >= {"interpolation_mse", "extrapolation_mse", "seeds_solved"}
        assert 0 <= line["seeds_solved"] <= 2
    rows = read_csv(tmp_path)
    assert [int(r["seed"]) for r in rows] == [0, 1]
    assert list(rows[0])[:8] == [
        "seed", "solved", "best_step", "interpolation_mse", "extrapolation_mse",
        "solved_at", "sparsity_error", "diverged",
    ]  # fmt: skip
    saved = json.load(open(tmp_path / "summary.json"))
    assert saved["num_seeds"] == 2 and saved["solved"] == summary["solved"]
    assert 0.0 <= saved["success_interval"][0] <= saved["success_interval"][1] <= 1.0
    assert "success rate" in open(tmp_path / "summary.md").read()
    assert open(tmp_path / "curves.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]


def test_nau_learns_two_input_addition(tmp_path):
    config = load_config("single_module", "op=add,model=nau,smoke")
    config.num_steps = 5000
    summary = train_and_evaluate(config, str(tmp_path), progress=False)
    assert summary["solved"] >= 3, summary
    rows = read_csv(tmp_path)
    for r in rows:
        if r["solved"] == "1":
            assert int(r["solved_at"]) <= 5000 and float(r["sparsity_error"]) < 1e-2


def test_diverged_seeds_are_counted_and_isolated(tmp_path):
    # A ReLU network with a huge learning rate overflows on most seeds; the dead-ReLU seeds
    # stay finite. Neither kind may affect another seed's numbers.
    def config(first, num):
        c = tiny(
            load_config("arithmetic", "model=relu,op=mul"), seeds=num, steps=400, eval_every=200
        )
        c.train.lr = 1e6
        c.first_seed = first
        return c

    summary = train_and_evaluate(config(0, 8), str(tmp_path / "all"), progress=False)
    rows = read_csv(tmp_path / "all")
    diverged = [r["seed"] for r in rows if r["diverged"] == "1"]
    assert 0 < summary["diverged"] == len(diverged) < 8
    assert all(r["solved"] == "0" for r in rows if r["diverged"] == "1")
    survivor = next(r for r in rows if r["diverged"] == "0")
    assert "stopped_at_step" not in summary  # a survivor: the population trains to the end
    train_and_evaluate(config(int(survivor["seed"]), 1), str(tmp_path / "one"), progress=False)
    assert read_csv(tmp_path / "one")[0] == survivor


@pytest.mark.slow  # 22 s on 2 idle cores
def test_training_stops_once_every_seed_diverged_with_the_same_results(tmp_path, monkeypatch):
    # lr 1e30 overflows every seed of a ReLU network within two periods; from then on the
    # loop only evaluates the frozen states. Everything it writes must be what training on
    # writes (the trainer told that a diverged state may change: it trains every period).
    def config():
        c = tiny(load_config("arithmetic", "model=relu,op=mul"), seeds=3, steps=2000,
                 eval_every=200)  # fmt: skip
        c.train.lr = 1e30
        c.checkpoint_every = 1000
        return c

    calls = count_compiled_calls(monkeypatch)
    stopped = train_and_evaluate(config(), str(tmp_path / "stopped"), progress=False)
    assert stopped["diverged"] == 3 and stopped["stopped_at_step"] == 400, stopped
    assert "every seed had diverged by step 400" in open(tmp_path / "stopped/summary.md").read()
    # two periods trained; evaluations at 0, 200 and 400, where the frozen states' evaluation
    # returned the state it was given: the 8 later ones are that one's rows, not computed
    assert calls == [2 + 3]

    real_make_train = train_lib.make_train
    monkeypatch.setattr(
        train_lib, "make_train",
        lambda *a, **k: real_make_train(*a, **k)._replace(frozen_when_diverged=False),
    )  # fmt: skip
    calls[0] = 0
    full = train_and_evaluate(config(), str(tmp_path / "full"), progress=False)
    assert "stopped_at_step" not in full and calls == [10 + 11]
    # lr 1e6 in blocks of 2: some blocks diverge whole (skipped in the compiled step), some
    # keep a live run; the same rows as training every block
    mixed = config()
    mixed.train.lr, mixed.num_seeds, mixed.seed_block = 1e6, 8, 2
    train_and_evaluate(mixed, str(tmp_path / "mixed_full"), progress=False)
    monkeypatch.setattr(train_lib, "make_train", real_make_train)
    train_and_evaluate(mixed, str(tmp_path / "mixed"), progress=False)
    rows = read_csv(tmp_path / "mixed")
    assert rows == read_csv(tmp_path / "mixed_full")
    pairs = [{r["diverged"] for r in rows[i : i + 2]} for i in range(0, 8, 2)]
    assert {"1"} in pairs and any("0" in p for p in pairs), rows  # both kinds of block
    assert read_csv(tmp_path / "stopped") == read_csv(tmp_path / "full")
    for name in ("metrics.jsonl", "seeds.csv"):
        assert open(tmp_path / "stopped" / name).read() == open(tmp_path / "full" / name).read()
    a, b = (last_checkpoint(tmp_path / d) for d in ("stopped", "full"))
    assert sorted(a) == sorted(b) and len(a) > 10
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # 3 seeds × 2 periods trained, against 3 × 10
    assert stopped["seed_steps_per_s"] * (stopped["wall_time_s"] - stopped["compile_time_s"]) \
        == pytest.approx(3 * 400, rel=1e-6)  # fmt: skip

    # resumed from a checkpoint taken after the stop, it does not train either
    real_save = stop_after_saving(monkeypatch, 1000)
    with pytest.raises(_Interrupt):
        train_and_evaluate(config(), str(tmp_path / "resumed"), progress=False)
    monkeypatch.setattr(checkpoint_lib.Checkpointer, "save", real_save)
    calls[0] = 0
    again = train_and_evaluate(config(), str(tmp_path / "resumed"), progress=False)
    assert again["stopped_at_step"] == 400 and again["resumed_from_step"] == 1000
    assert calls == [1]  # the state saved after the stop is already a fixed point
    assert read_csv(tmp_path / "resumed") == read_csv(tmp_path / "full")
    for name in ("metrics.jsonl", "seeds.csv"):
        assert open(tmp_path / "resumed" / name).read() == open(tmp_path / "full" / name).read()

    # an evaluation that may read the step is computed every period, to the same results
    monkeypatch.setattr(loop_lib, "evaluation_reads_step", lambda *a: True)
    calls[0] = 0
    train_and_evaluate(config(), str(tmp_path / "computed"), progress=False)
    assert calls == [2 + 11]
    for name in ("metrics.jsonl", "seeds.csv"):
        assert open(tmp_path / "computed" / name).read() == open(tmp_path / "full" / name).read()


def count_compiled_calls(monkeypatch) -> list:
    """``[n]``: how many times the loop dispatched a compiled ``train`` or ``evaluate``."""
    calls, real = [0], loop_lib.DevicePopulation.run

    def run(compiled, *args):
        calls[0] += 1
        return real(compiled, *args)

    monkeypatch.setattr(loop_lib.DevicePopulation, "run", staticmethod(run))
    return calls


def test_seed_result_independent_of_other_seeds(tmp_path):
    # at a fixed seed block, as the README states it (on an accelerator "auto" is one block of
    # all the seeds, whose program, and so last bits, follow their count)
    base = tiny(load_config("arithmetic", "model=nmu,op=mul"), seeds=6)
    base.seed_block = 2
    train_and_evaluate(base, str(tmp_path / "six"), progress=False)
    alone = tiny(load_config("arithmetic", "model=nmu,op=mul"), seeds=1)
    alone.first_seed, alone.seed_block = 3, 2
    train_and_evaluate(alone, str(tmp_path / "alone"), progress=False)
    assert read_csv(tmp_path / "six")[3] == read_csv(tmp_path / "alone")[0]


def test_same_config_same_numbers(tmp_path):
    for name in ("a", "b"):
        train_and_evaluate(
            tiny(load_config("arithmetic", "model=nau,op=add")),
            str(tmp_path / name),
            progress=False,
        )
    assert read_csv(tmp_path / "a") == read_csv(tmp_path / "b")


def last_checkpoint(workdir) -> dict:
    """The arrays of a workdir's final checkpoint but the clock (leaf 0: seconds and steps
    trained) and the digest over them."""
    import orbax.checkpoint as ocp

    ckpt = workdir / "checkpoints"
    step = max(int(d) for d in os.listdir(ckpt) if d.isdigit())
    flat = ocp.StandardCheckpointer().restore(str((ckpt / str(step) / "default").resolve()))
    assert np.shape(flat.pop("leaf_00000")) == (3,)  # the clock
    flat.pop(checkpoint_lib.DIGEST)
    return {k: np.asarray(v) for k, v in flat.items()}


class _Interrupt(Exception):
    pass


def stop_after_saving(monkeypatch, at: int):
    """Make the checkpoint save at step ``at`` stop the run once its file is written (a stop
    that saved); returns the real ``save``."""
    real_save = checkpoint_lib.Checkpointer.save

    def save_then_stop(self, step, tree):
        real_save(self, step, tree)
        if step == at:
            raise _Interrupt

    monkeypatch.setattr(checkpoint_lib.Checkpointer, "save", save_then_stop)
    return real_save


def test_resume_after_interruption_equals_uninterrupted(tmp_path, monkeypatch):
    def config():
        return tiny(load_config("arithmetic", "model=nmu,op=mul"), seeds=3, steps=1500)

    train_and_evaluate(config(), str(tmp_path / "full"), progress=False)

    real_save = stop_after_saving(monkeypatch, 500)  # dies right after its first checkpoint
    with pytest.raises(_Interrupt):
        train_and_evaluate(config(), str(tmp_path / "resumed"), progress=False)
    assert not os.path.exists(tmp_path / "resumed" / "seeds.csv")
    monkeypatch.setattr(checkpoint_lib.Checkpointer, "save", real_save)
    again = train_and_evaluate(config(), str(tmp_path / "resumed"), progress=False)
    assert again["resumed_from_step"] == 500  # went on from the checkpoint, not from scratch
    assert read_csv(tmp_path / "resumed") == read_csv(tmp_path / "full")
    full = open(tmp_path / "full" / "metrics.jsonl").read()
    assert open(tmp_path / "resumed" / "metrics.jsonl").read() == full


def test_progress_file_formats_each_evaluation_once(tmp_path, monkeypatch):
    """metrics.jsonl during training: at each checkpoint the lines of every evaluation so far,
    the same as the final file's; only the evaluations since the last checkpoint are
    formatted (a resumed process formats all of its first checkpoint's)."""
    from nalu_jax.engine import run as run_lib

    calls, files = [], []
    real_call = run_lib.ProgressFile.__call__

    def recording(self, history, done, diverged_at):
        lines = self.lines
        self.lines = lambda h, d, div, first: calls.append((first, d)) or lines(h, d, div, first)
        try:
            real_call(self, history, done, diverged_at)
        finally:
            self.lines = lines
        files.append(open(self.path).read())

    def config():
        return tiny(load_config("arithmetic", "model=nau,op=add"), seeds=2, steps=2500)

    monkeypatch.setattr(run_lib.ProgressFile, "__call__", recording)
    train_and_evaluate(config(), str(tmp_path / "a"), progress=False)
    final = open(tmp_path / "a" / "metrics.jsonl").read().splitlines(keepends=True)
    assert len(final) == 6  # steps 0, 500, …, 2500
    # checkpoints at steps 500 … 2,000, each before that step's evaluation
    assert calls == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert files == ["".join(final[:d]) for _, d in calls]

    calls.clear(), files.clear()
    stop_after_saving(monkeypatch, 1000)
    with pytest.raises(_Interrupt):
        train_and_evaluate(config(), str(tmp_path / "b"), progress=False)
    assert calls == [(0, 1)]  # stopped at the step-1,000 save, before its file
    calls.clear()
    train_and_evaluate(config(), str(tmp_path / "b"), progress=False)
    assert calls == [(0, 3), (3, 4)]  # resumed at step 1,000: its first file holds steps 0–1,000
    assert open(tmp_path / "b" / "metrics.jsonl").read() == "".join(final)


def test_other_config_in_workdir_needs_overwrite(tmp_path):
    train_and_evaluate(
        tiny(load_config("arithmetic", "model=nau,op=add")), str(tmp_path), progress=False
    )
    other = tiny(load_config("arithmetic", "model=nmu,op=mul"))
    with pytest.raises(ConfigError, match=r"config differs in model\.name"):
        train_and_evaluate(other, str(tmp_path), progress=False)
    summary = train_and_evaluate(other, str(tmp_path), overwrite=True, progress=False)
    assert summary["model"] == "nmu"
    assert json.load(open(tmp_path / "config.json"))["model"]["name"] == "nmu"


def test_reproduce_overwrite_resumes_the_cells_own_run_and_restarts_another(
    tmp_path, monkeypatch, capsys
):
    # launch/reproduce.py --overwrite replaces committed cells of another protocol; the same
    # command after a stop must go on from the cell's checkpoints, not start it again
    from nalu_jax.engine.blocks import resolve_seed_block
    from nalu_jax.reproduce import specs
    from nalu_jax.reproduce.cells import run_cell

    cell = specs.cells(specs.table("iclr2020-arithmetic"), ["nau"], ["add"])[0]

    def config():  # as the launcher's cells.configs gives it: the seed block resolved
        c = tiny(load_config("arithmetic", "model=nau,op=add"), seeds=2, steps=2000)
        return resolve_seed_block(c)

    run_cell(cell, config(), "", progress=False, directory=str(tmp_path / "whole"))
    real_save = stop_after_saving(monkeypatch, 1000)
    with pytest.raises(_Interrupt):
        run_cell(cell, config(), "", overwrite=True, progress=False,
                 directory=str(tmp_path / "cell"))  # fmt: skip
    monkeypatch.setattr(checkpoint_lib.Checkpointer, "save", real_save)
    capsys.readouterr()
    run_cell(cell, config(), "", overwrite=True, progress=False, directory=str(tmp_path / "cell"))
    assert "resumed from the checkpoint at step 1000" in capsys.readouterr().err
    assert read_csv(tmp_path / "cell") == read_csv(tmp_path / "whole")

    def no_training(*args, **kwargs):
        raise AssertionError("a finished cell was trained again")

    with monkeypatch.context() as m:  # finished: its summary, nothing run again
        m.setattr("nalu_jax.engine.run.run", no_training)
        summary = run_cell(cell, config(), "", overwrite=True, progress=False,
                           directory=str(tmp_path / "cell"))  # fmt: skip
    assert summary == json.load(open(tmp_path / "cell" / "summary.json"))
    assert read_csv(tmp_path / "cell") == read_csv(tmp_path / "whole")

    other = resolve_seed_block(tiny(load_config("arithmetic", "model=nmu,op=mul")))  # clean
    run_cell(cell, other, "", overwrite=True, progress=False, directory=str(tmp_path / "cell"))
    assert "resumed" not in capsys.readouterr().err
    assert json.load(open(tmp_path / "cell" / "config.json"))["model"]["name"] == "nmu"


def test_a_workdir_resumes_its_own_config_and_extensions_only(tmp_path):
    from nalu_jax.engine.blocks import resolve_seed_block
    from nalu_jax.runtime.workdir import resumes

    def config(**kw):
        return resolve_seed_block(tiny(load_config("arithmetic", "model=nau,op=add"), **kw))

    assert not resumes(str(tmp_path / "none"), config())
    train_and_evaluate(config(steps=1000), str(tmp_path), progress=False)
    assert resumes(str(tmp_path), config(steps=1000))
    assert resumes(str(tmp_path), config(steps=2000))  # an extension
    assert not resumes(str(tmp_path), config(steps=500))  # a budget is never lowered
    assert not resumes(
        str(tmp_path), resolve_seed_block(tiny(load_config("arithmetic", "model=nau,op=sub")))
    )
    (tmp_path / "config.json").write_text("{")  # damaged from outside: one sentence
    assert not resumes(str(tmp_path), config(steps=1000))
    with pytest.raises(ConfigError, match=r"holds a config\.json that is not valid JSON"):
        train_and_evaluate(config(steps=1000), str(tmp_path), progress=False)
    train_and_evaluate(config(steps=1000), str(tmp_path), overwrite=True, progress=False)
    assert resumes(str(tmp_path), config(steps=1000))


def test_quantities_are_per_seed_arrays(tmp_path):
    summary = train_and_evaluate(
        tiny(load_config("single_module", "op=mul,model=nmu"), seeds=3, steps=2000),
        str(tmp_path),
        progress=False,
    )
    rows = read_csv(tmp_path)
    solved = [r for r in rows if r["solved"] == "1"]
    assert summary["solved"] == len(solved)
    for r in solved:
        assert float(r["extrapolation_mse"]) < summary["threshold"]
    assert np.isfinite(summary["seed_steps_per_s"]) and summary["seed_steps_per_s"] > 0
