"""Published tables: specs, published figures, the merge and overlap verdict (no training)."""

import dataclasses
import math

import numpy as np
import pytest
from conftest import load_config
from flax import nnx

from nalu_jax.config import ConfigError
from nalu_jax.models import MODELS
from nalu_jax.reporting.metrics import wilson_interval
from nalu_jax.reproduce import cell_config, specs, tables
from nalu_jax.reproduce import results as results_lib
from nalu_jax.reproduce.cells import SMOKE, configs, estimate_s
from nalu_jax.units import UNITS


@pytest.mark.parametrize("name", sorted(specs.TABLES))
def test_every_cell_has_a_model_and_a_valid_config(name):
    spec = specs.TABLES[name]
    registry = UNITS if spec.kind == "single_module" else MODELS
    for cell in specs.cells(spec):
        assert cell.variant.model in registry, cell
        if not cell.variant.unavailable:
            c = cell_config(spec, cell)
            steps = dict(cell.variant.overrides).get("num_steps", spec.num_steps)
            if spec.axis is not None and spec.axis.steps:  # the input-size figure's points
                steps = spec.axis.steps[spec.axis.keys.index(cell.point)]
            assert (c.num_seeds, c.num_steps) == (spec.num_seeds, steps)
            assert c.num_steps % c.checkpoint_every == 0


def test_arithmetic_cell_is_the_config_file():
    spec = specs.table("iclr2020-arithmetic")
    cell = next(c for c in specs.cells(spec, ["nau"], ["sub"]))
    ours = cell_config(spec, cell, 10, 200_000)
    theirs = load_config("arithmetic", "model=nau,op=sub,seeds=10,steps=200000")
    theirs.checkpoint_every = ours.checkpoint_every
    assert ours.to_dict() == theirs.to_dict()


def test_ablation_no_clamp_cell_is_the_config_file_variant():
    spec = specs.table("iclr2020-ablation")
    ours = cell_config(spec, specs.cells(spec, ["nmu_no_clamp"])[0], 10, 200_000)
    theirs = load_config("arithmetic", "model=nmu,op=mul,no_clamp,seeds=10,steps=200000")
    theirs.checkpoint_every = ours.checkpoint_every
    assert ours.to_dict() == theirs.to_dict()


def test_single_module_cell_is_the_config_file_with_the_range_sweep():
    spec = specs.table("primer-single-module")
    cell = next(c for c in specs.cells(spec, ["nmu"], ["mul"]))
    ours = cell_config(spec, cell)
    theirs = load_config("single_module", "model=nmu,op=mul")
    theirs.sweep.range_index = tuple(range(1, 10))
    theirs.checkpoint_every = ours.checkpoint_every
    assert ours.to_dict() == theirs.to_dict()


def test_variants_set_their_fields():
    gate = specs.table("iclr2020-gate")
    sep = cell_config(gate, specs.cells(gate, ["nalu_separate"], ["mul"])[0])
    assert sep.model.first_layer == "nac_add" and sep.model.layer2_options.separate_weights
    ablation = specs.table("iclr2020-ablation")
    no_reg = cell_config(ablation, specs.cells(ablation, ["nmu_no_rsparse"])[0])
    assert no_reg.train.reg_scale == 0.0
    cells = specs.cells(ablation)
    assert not any(c.variant.unavailable for c in cells)
    assert len(configs(ablation, cells, 2, 1000, SMOKE)) == len(cells)


@pytest.mark.parametrize(
    ("key", "reg_scale"), [("nmu", None), ("nmu_no_clamp", None), ("nmu_no_rsparse_no_clamp", 0.0)]
)
def test_ablation_no_clamp_cells_build_units_without_projection(key, reg_scale):
    """ "no W-clamp" is the reference's --oob-mode regualized on both layers: the cell's model
    is an NAU and an NMU with ``clamp_w=False``, whose projection leaves W alone."""
    import jax.numpy as jnp

    from nalu_jax.experiments.arithmetic import build_model_factory, build_task

    spec = specs.table("iclr2020-ablation")
    c = cell_config(spec, specs.cells(spec, [key])[0], 2, 1000)
    assert c.train.reg_scale == reg_scale
    factory, names = build_model_factory(c, build_task(c))
    assert tuple(names) == ("nau", "nmu")
    model = factory(nnx.Rngs(0))
    clamped = key == "nmu"
    for layer, (lo, hi) in zip(model.layers, [(-1.0, 1.0), (0.0, 1.0)], strict=True):
        assert layer.clamp_w is clamped
        w = jnp.linspace(lo - 0.5, hi + 0.5, layer.w[...].size).reshape(layer.w[...].shape)
        layer.w[...] = w
        model.project()
        assert jnp.array_equal(layer.w[...], jnp.clip(w, lo, hi) if clamped else w)


def test_primer_cells_follow_the_models_per_op():
    spec = specs.table("primer-single-module")
    cells = specs.cells(spec, ops=["mul", "add"])
    assert [c.key for c in cells if c.op == "add"] == [
        "add-nac_add", "add-nalu", "add-nau", "add-inalu", "add-g_nalu",
    ]  # fmt: skip
    assert len(cells) == 15


def test_bad_names_are_config_errors():
    spec = specs.table("iclr2020-arithmetic")
    with pytest.raises(ConfigError, match="--table"):
        specs.table("iclr2021")
    with pytest.raises(ConfigError, match="--models"):
        specs.cells(spec, ["nmu2"])
    with pytest.raises(ConfigError, match="--ops"):
        specs.cells(spec, ops=["pow"])
    with pytest.raises(ConfigError, match="--steps"):
        cell_config(spec, specs.cells(spec, ["nmu"], ["mul"])[0], 2, 1500)
    # an empty list (--ops=) is refused; None (the flag omitted) is every one
    for kwargs in ({"models": []}, {"ops": []}, {"ops": ["add"], "points": []}):
        flag = "--" + next(k for k, v in kwargs.items() if v == [])
        with pytest.raises(ConfigError, match=f"^{flag} names nothing; omit it to take every"):
            specs.cells(spec, **kwargs)
    assert len(specs.cells(spec, None, None)) == len(spec.ops) * len(spec.variants)


def test_points_pick_cells_of_a_per_point_figure():
    hidden = specs.table("iclr2020-hidden-size")
    assert len(specs.cells(hidden, ["nmu"])) == 9  # every point by default
    picked = specs.cells(hidden, ["nmu", "nac_mul"], points=["h10", "h2"])
    assert [c.key for c in picked] == [  # table order, whatever the order named
        "mul-nmu-h2", "mul-nmu-h10", "mul-nac_mul-h2", "mul-nac_mul-h10",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match=r"--points names 'h11'.*allowed: \['h2'"):
        specs.cells(hidden, points=["h11"])
    # a figure whose points are one program, and a table, have no points to pick
    for name in ("iclr2020-range", "iclr2020-arithmetic"):
        with pytest.raises(ConfigError, match="--points applies to a figure whose points are"):
            specs.cells(specs.table(name), points=["r1"])


@pytest.mark.parametrize("name", ["iclr2020-arithmetic", "iclr2020-gate", "iclr2020-ablation"])
def test_published_figures_are_cells_of_their_table(name):
    spec = specs.table(name)
    pub = tables.published(spec)
    keys = {(c.op, c.variant.key) for c in specs.cells(spec)}
    assert set(pub) == keys
    for row in pub.values():
        assert row["success_lo"] <= row["success_rate"] <= row["success_hi"]


def test_published_arithmetic_figures():
    pub = tables.published(specs.table("iclr2020-arithmetic"))
    assert len(pub) == 66
    nmu = pub[("mul", "nmu")]
    assert (nmu["success_rate"], nmu["solved_at_median"]) == (
        0.98,
        1434500.0,
    )  # 1.434·10⁶ when rounded
    assert nmu["success_lo"] == pytest.approx(wilson_interval(98, 100)[0], abs=1e-9)
    assert pub[("add", "nau")]["solved_at_median"] == 18000.0
    assert math.isnan(pub[("div", "nmu")]["solved_at_mean"])


def test_published_gate_figures_name_their_estimator():
    # export/function_task_static_nalu.r summarises with compute.summary, whose Beta fit falls
    # back to the sample mean only where the errors sit at the fit's bound (the next test): every
    # gating figure is the fit's, + NALU (separate)'s equal offsets (±1.4e-2) included
    pub = tables.published(specs.table("iclr2020-gate"))
    assert pub[("add", "nalu_shared")]["sparsity_error_estimator"] == "beta"
    assert pub[("add", "nalu_separate")]["sparsity_error_estimator"] == "beta"
    assert pub[("add", "nalu_shared")]["sparsity_error_lo"] == pytest.approx(0.18 - 0.021)
    assert {row["sparsity_error_estimator"] for row in pub.values()} == {"beta"}


def test_the_published_fit_falls_back_only_where_the_errors_are_near_zero():
    # on the authors' Table 1 seeds: every row read as the sample mean has a mean solved error
    # below 1e-4 and its figure is their sample mean; every row with errors of order 0.1 is the fit,
    # which our port of it reproduces to the tex's digits
    from nalu_jax.reporting.published_estimators import iclr2020_sparsity_error
    from nalu_jax.reproduce.seedtests import published_seeds

    seeds = published_seeds()
    pub = tables.published(specs.table("iclr2020-arithmetic"))
    large = 0
    for key, row in pub.items():
        if key not in seeds:
            continue
        s = seeds[key]
        x = s["sparsity_error"][s["solved"] & np.isfinite(s["sparsity_error"])]
        if len(x) < 3:
            continue
        if row["sparsity_error_estimator"] == "normal":
            assert x.mean() < 1e-4, key
            assert row["sparsity_error_mean"] == pytest.approx(x.mean(), rel=0.01), key
        elif x.mean() > 0.1:
            large += 1
            fit = iclr2020_sparsity_error(x)
            assert fit["method"] == "beta", key
            for k in ("mean", "lo", "hi"):
                assert fit[k] == pytest.approx(row[f"sparsity_error_{k}"], rel=0.02), (key, k)
    assert large == 10


def test_a_fitted_interval_at_51_seeds_can_round_to_equal_offsets():
    # + NALU (separate) in the gating table: 51 solved seeds, 0.18 ±1.4e-2 to the tex's two
    # digits. The fit of 51 Beta draws with the spread of such errors is asymmetric by 3-6%,
    # less than a step of the second digit (1.4 → 1.5 is 7%), so its offsets often round equal
    from nalu_jax.reporting.published_estimators import iclr2020_sparsity_error

    def digits(v):
        return float(f"{v:.1e}")

    rng = np.random.default_rng(0)
    equal = 0
    for _ in range(10):
        fit = iclr2020_sparsity_error(rng.beta(0.36 * 24, 0.64 * 24, size=51))
        assert fit["method"] == "beta"
        below, above = fit["mean"] - fit["lo"], fit["hi"] - fit["mean"]
        assert 1.0 < above / below < 1.07
        equal += digits(below) == digits(above)
    assert equal >= 2


def test_overlap_is_computed():
    assert tables.overlap((0.2, 0.4), (0.4, 0.6)) == "yes"
    assert tables.overlap((0.0, 0.3), (0.31, 0.6)) == "no"
    assert tables.overlap((0.0, math.nan), (0.0, 1.0)) == "n/a"


def test_estimate_scales_with_runs_and_steps():
    spec = specs.table("primer-single-module")
    c = cell_config(spec, specs.cells(spec, ["nmu"], ["mul"])[0])
    # a timing run of 225 runs × 500 steps at 112,500 seed-steps/s: 1 s of training in 6 s,
    # so 5 s fixed; the cell's 225 × 50,000 seed-steps take 100 s more
    speed = 225 * 50_000 / 100.0
    calibration = {"seed_steps_per_s": speed, "compile_s": 5.0, "wall_s": 6.0,
                   "seed_steps": 225 * 500}  # fmt: skip
    assert estimate_s(c, calibration) == pytest.approx(105.0)


def fake_summary(solved, seeds=10, steps=1000, **extra):
    lo, hi = wilson_interval(solved, seeds)
    nan = float("nan")
    return {
        "num_seeds": seeds, "num_steps": steps, "solved": solved, "diverged": 0,
        "success_rate": solved / seeds, "success_interval": [lo, hi],
        "solved_at_median": 500.0 if solved else nan, "solved_at_mean": 500.0 if solved else nan,
        "solved_at_interval": [400.0, 600.0] if solved > 1 else [nan, nan],
        "sparsity_error_mean": 1e-3 if solved else nan,
        "sparsity_error_interval": [5e-4, 2e-3] if solved > 1 else [nan, nan],
        "wall_time_s": 60.0, **extra,
    }  # fmt: skip


def write_summary(workdir, key, summary):
    import json
    import os

    os.makedirs(os.path.join(workdir, "cells", key), exist_ok=True)
    with open(os.path.join(workdir, "cells", key, "summary.json"), "w") as f:
        json.dump(summary, f)


def test_merge_against_published_figures(tmp_path):
    spec = specs.table("iclr2020-arithmetic")
    write_summary(tmp_path, "mul-nmu", fake_summary(10))  # published 98% [93.0, 99.4]
    write_summary(tmp_path, "add-nmu", fake_summary(9))  # published 0% [0, 3.7]
    rows = tables.collect(spec, str(tmp_path))
    assert [(r["op"], r["model"], r["success_overlap"]) for r in rows] == [
        ("mul", "nmu", "yes"), ("add", "nmu", "no"),
    ]  # fmt: skip
    assert rows[0]["solved_at_overlap"] == "no"  # ours [400, 600] vs the paper's ~1.5e6
    assert rows[1]["solved_at_overlap"] == "n/a"  # no published solved-at
    md = tables.markdown(spec, rows)
    assert "10 seeds × 1,000 iterations (**REDUCED** protocol)" in md
    assert "| × | NMU | 10 × 1,000 | 100% [72%, 100%] | 98% [93%, 99%] | yes |" in md


def test_single_module_rows_per_range_and_the_pivot(tmp_path):
    spec = specs.table("primer-single-module")
    settings = [fake_summary(k, 25, 50_000, setting_values={"range_index": k}) for k in (1, 2)]
    write_summary(tmp_path, "mul-nmu", {"settings": settings})
    rows = tables.collect(spec, str(tmp_path))
    assert [(r["model"], r["range"], r["solved"]) for r in rows] == [("nmu", 1, 1), ("nmu", 2, 2)]
    md = tables.markdown(spec, rows)
    assert "| × | NMU | 1/25 | 2/25 |" in md and "(the published protocol)" in md
    assert "published success" not in md


def test_the_header_counts_each_cell_and_its_programs_wall_time_once(tmp_path):
    # every sweep setting's summary carries its program's wall time (60 s here); a per-point
    # figure's cells share op and model but are programs of their own
    lam = specs.table("iclr2020-lambda")
    settings = [fake_summary(5, setting_values={"reg_scale": v}) for v in (0.0, 0.01, 0.1)]
    write_summary(tmp_path / "lam", "mul-nmu", {"settings": settings})
    md = tables.markdown(lam, tables.collect(lam, str(tmp_path / "lam")))
    assert "Cells measured: 1; training wall time 1.0 min on " in md
    hidden = specs.table("iclr2020-hidden-size")
    for key in ("mul-nmu-h2", "mul-nmu-h4"):
        write_summary(tmp_path / "hidden", key, fake_summary(5))
    md = tables.markdown(hidden, tables.collect(hidden, str(tmp_path / "hidden")))
    assert "Cells measured: 2; training wall time 2.0 min on " in md
    single = specs.table("primer-single-module")
    ranges = [fake_summary(k, 25, 50_000, setting_values={"range_index": k}) for k in (1, 2)]
    write_summary(tmp_path / "single", "mul-nmu", {"settings": ranges})
    md = tables.markdown(single, tables.collect(single, str(tmp_path / "single")))
    assert "Cells measured: 1; training wall time 1.0 min on " in md


def test_the_header_names_the_machine_of_each_batch(tmp_path):
    # a committed cell extended on a GPU: its 36.7 min are 30.1 on the CPU and 6.6 on the GPU,
    # not 36.7 on the machine that wrote the table; a cell without provenance trained here
    import json

    spec = specs.table("iclr2020-range")
    write_summary(tmp_path, "mul-nmu", fake_summary(5, wall_time_s=2202.0))
    cpu = {"platform": "cpu", "cpu": "AMD EPYC", "cores": 2, "devices": 2,
           "device_kind": "cpu"}  # fmt: skip
    gpu = {"platform": "gpu", "cpu": "Intel(R) Xeon(R) Processor", "cores": 16, "devices": 1,
           "device_kind": "NVIDIA H200"}  # fmt: skip
    batches = [{"machine": cpu, "wall_time_s": 1806.0}, {"machine": gpu, "wall_time_s": 396.0}]
    with open(tmp_path / "cells" / "mul-nmu" / "provenance.json", "w") as f:
        json.dump({"batches": batches}, f)
    md = tables.markdown(spec, tables.collect(spec, str(tmp_path)))
    assert (
        "Cells measured: 1; training wall time 30.1 min on AMD EPYC, 2 cores; 6.6 min on "
        "NVIDIA H200." in md
    )
    write_summary(tmp_path, "mul-nac_mul", fake_summary(5, wall_time_s=120.0))
    md = tables.markdown(spec, tables.collect(spec, str(tmp_path)))
    here = results_lib.describe_machine(results_lib.machine())
    assert (
        f"Cells measured: 2; training wall time 30.1 min on AMD EPYC, 2 cores; 6.6 min on "
        f"NVIDIA H200; 2.0 min on {here}." in md
    )


def test_published_sparsity_estimator_per_row():
    pub = tables.published(specs.table("iclr2020-arithmetic"))
    # symmetric published intervals are the analysis' sample-mean fallback, the rest its fit
    assert pub[("mul", "nmu")]["sparsity_error_estimator"] == "normal"
    assert pub[("add", "nau")]["sparsity_error_estimator"] == "normal"
    assert pub[("add", "nac_add")]["sparsity_error_estimator"] == "beta"
    assert pub[("sub", "nau")]["sparsity_error_estimator"] == "beta"
    assert pub[("add", "linear")]["sparsity_error_estimator"] == "beta"
    ablation = tables.published(specs.table("iclr2020-ablation"))
    assert {p["sparsity_error_estimator"] for p in ablation.values()} == {"normal"}


SEEDS_HEADER = (
    "seed,solved,best_step,interpolation_mse,extrapolation_mse,solved_at,sparsity_error,"
    "diverged,diverged_at\n"
)


def write_seeds(workdir, key, errors):
    import os

    with open(os.path.join(workdir, "cells", key, "seeds.csv"), "w") as f:
        f.write(SEEDS_HEADER)
        for i, e in enumerate(errors):
            f.write(f"{i},{int(not math.isnan(e))},0,0,0,0,{'' if math.isnan(e) else e},0,-1\n")


def test_sparsity_overlap_uses_the_published_estimator(tmp_path):
    from nalu_jax.reporting.published_estimators import iclr2020_sparsity_error

    spec = specs.table("iclr2020-arithmetic")
    # + NAC₊: published 0.227 [0.220, 0.233] is the Beta fit's μ (half the fitted mean)
    errors = [0.44, 0.46, 0.45, 0.47, 0.43, 0.455, 0.465, 0.445, float("nan"), 0.452]
    t_mean = float(np.mean([e for e in errors if not math.isnan(e)]))
    s = fake_summary(9, sparsity_error_mean=t_mean, sparsity_error_interval=[0.44, 0.46])
    write_summary(tmp_path, "add-nac_add", s)
    write_seeds(tmp_path, "add-nac_add", errors)
    # × NMU: published figure is a sample mean, so ours is compared as it is
    write_summary(tmp_path, "mul-nmu", fake_summary(10))
    rows = {r["model"]: r for r in tables.collect(spec, str(tmp_path))}
    fit = iclr2020_sparsity_error([e for e in errors if not math.isnan(e)])
    nac = rows["nac_add"]
    assert nac["published_sparsity_error_estimator"] == "beta"
    assert nac["sparsity_error_like_published_mean"] == fit["mean"]
    assert (nac["sparsity_error_like_published_lo"], nac["sparsity_error_like_published_hi"]) == (
        fit["lo"], fit["hi"],
    )  # fmt: skip
    assert 0.2 < fit["mean"] < 0.24  # half of ~0.45
    expected = tables.overlap((fit["lo"], fit["hi"]), (0.22007106516393143, 0.23309025650543858))
    assert nac["sparsity_error_overlap"] == expected
    assert tables.overlap((0.44, 0.46), (0.220, 0.233)) == "no"  # the t figure would not
    nmu = rows["nmu"]
    assert nmu["published_sparsity_error_estimator"] == "normal"
    assert (nmu["sparsity_error_like_published_lo"], nmu["sparsity_error_like_published_hi"]) == (
        5e-4, 2e-3,
    )  # fmt: skip
    md = tables.markdown(spec, list(rows.values()))
    assert f"β: {tables._f(fit['mean'])} [" in md and "= ours" in md


def test_a_model_without_sparsity_error_has_none_under_the_paper_estimator(tmp_path):
    # a cell measured before Linear had a sparsity error (before 09046a2): empty for every seed
    spec = specs.table("iclr2020-arithmetic")
    write_summary(tmp_path, "add-linear", fake_summary(3, sparsity_error_mean=float("nan"),
                                                       sparsity_error_interval=[None, None]))  # fmt: skip
    with open(tmp_path / "cells" / "add-linear" / "seeds.csv", "w") as f:
        f.write(SEEDS_HEADER + "0,1,0,0,0,0,,0,-1\n1,1,0,0,0,0,,0,-1\n2,0,0,0,0,,,0,-1\n")
    (row,) = [r for r in tables.collect(spec, str(tmp_path)) if r["model"] == "linear"]
    assert math.isnan(row["sparsity_error_like_published_mean"])
    assert row["sparsity_error_overlap"] == "n/a" and tables.like_published_cell(row) == "—"


def test_register_table_checks_its_record_and_names():
    from nalu_jax.reproduce import TABLES, TableSpec, Variant, register_table

    def config(cell):
        return load_config("arithmetic", "model=nau,op=add")

    own = TableSpec("mine-test", "experiment", ("add",), (Variant("nau", "NAU", "nau"),), 3, 2000,
                    "a test", None, config=config)  # fmt: skip
    try:
        assert register_table(own) == "mine-test" and register_table(own) == "mine-test"
        cell = specs.cells(own)[0]
        c = cell_config(own, cell, num_steps=1000)
        assert (c.num_seeds, c.num_steps, c.model.name, c.checkpoint_every) == (
            3,
            1000,
            "nau",
            1000,
        )
        with pytest.raises(ValueError, match="already registered; pass replace=True"):
            register_table(dataclasses.replace(own, num_seeds=4))
        register_table(dataclasses.replace(own, num_seeds=4), replace=True)
        assert TABLES["mine-test"].num_seeds == 4
        with pytest.raises(ConfigError, match="--extra_models adds units to a published table"):
            specs.with_extra(own, ["nmu"])
    finally:
        TABLES.pop("mine-test", None)
    with pytest.raises(ValueError, match="needs config\\(cell\\)"):
        register_table(dataclasses.replace(own, config=None))
    with pytest.raises(ValueError, match="needs config\\(cell\\)"):
        register_table(dataclasses.replace(own, kind="arithmetic"))
    with pytest.raises(ValueError, match="'iclr2020-arithmetic' is already registered.$"):
        register_table(dataclasses.replace(own, name="iclr2020-arithmetic"), replace=True)
    with pytest.raises(ConfigError, match="register_table"):
        specs.table("nosuch")
