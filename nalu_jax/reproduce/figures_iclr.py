"""ICLR 2020's dataset-parameter and λ̂ figures as reproduction tables: one ``TableSpec`` each,
with an ``Axis`` of points (Madsen & Johansen 2020, §4.1 Figure 3 and Appendix C.5, C.7).

The protocol is stable-nalu's (``lfs_batch_jobs/function_task_static_mul_*.sh`` and
``function_task_static_regualization.sh`` at commit b3296ac): ×, the task's defaults except the
swept parameter, 50 seeds (λ̂: 25, seeds 25–49), 5·10⁶ iterations (input size: 5, 10 or 15·10⁶,
growing with the size). Interpolation range, overlap and subset ratio and λ̂ change no shape, so
a model's points are one program (``config.sweep``: ``range_pair`` sets both ranges of a point,
``overlap_ratio`` / ``subset_ratio`` the subsets, traced, ``reg_scale`` the λ̂); hidden size and
input size fix the model's shapes, so each of their points is a program (a cell) of its own.

The authors ship no per-seed data of these figures (only PDFs); ``CLAIMS`` holds what the
paper's text says of each, which ``nalu_jax.reproduce.figures_render`` checks against ours.
"""

from __future__ import annotations

from nalu_jax.reproduce.seedtests import more_often
from nalu_jax.reproduce.specs import GATED_BOTH_LAYERS, Axis, TableSpec, Variant

_ICLR = "Madsen & Johansen, Neural Arithmetic Units, ICLR 2020 (arXiv:2001.05016)"
#: the models of the × figures, as the batch scripts list them (their `--layer-type` lines)
_MUL_MODELS = (
    Variant("nmu", "NMU", "nmu"),
    Variant("nac_mul", "NAC•", "nac_mul"),
    Variant("nac_mul_sigma", "NAC•,σ", "nac_mul_sigma"),
    Variant("nac_mul_nmu", "NAC•,NMU", "nac_mul_nmu"),
    Variant("nalu", "NALU", "nalu"),
    Variant("gated_nau_nmu", "Gated NAU/NMU", "gated_nau_nmu", overrides=GATED_BOTH_LAYERS),
)
#: interpolation → extrapolation range (App. C.5; lfs_batch_jobs/function_task_static_mul_range.sh)
RANGE_PAIRS = (
    ((-2.0, -1.0), (-6.0, -2.0)),
    ((-2.0, 2.0), ((-6.0, -2.0), (2.0, 6.0))),
    ((0.0, 1.0), (1.0, 5.0)),
    ((0.1, 0.2), (0.2, 2.0)),
    ((1.0, 2.0), (2.0, 6.0)),
    ((1.1, 1.2), (1.2, 6.0)),
    ((10.0, 20.0), (20.0, 40.0)),
)
_HIDDEN = tuple(range(2, 11))
_INPUT = (4, 10, 25, 50, 75, 100, 125, 150, 175, 200, 225, 250, 275, 300)
#: iterations per input size (the script's max_miters × 10⁶)
_INPUT_STEPS = tuple(m * 1_000_000 for m in (5, 5, 5, 5, 5, 5, 10, 10, 10, 10, 15, 15, 15, 15))
_OVERLAP = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
_SUBSET = (0.05, 0.1, 0.25, 0.5)
_LAMBDA = (0.0, 0.01, 0.1, 1.0, 10.0, 100.0)


def _fig(name, axis, source, seeds=50, steps=5_000_000, ops=("mul",), models=_MUL_MODELS, **kw):
    return TableSpec(name, "arithmetic", ops, models, seeds, steps, f"{_ICLR}, {source}", None,
                     axis=axis, **kw)  # fmt: skip


FIGURES = {spec.name: spec for spec in (  # each figure's TableSpec by its name
    _fig(
        "iclr2020-hidden-size",
        Axis("hidden_size", "hidden size", "model.hidden_size", _HIDDEN,
             tuple(f"h{h}" for h in _HIDDEN)),
        "§4.1 Figure 3 (top) and App. C (hidden size)",
    ),
    _fig(
        "iclr2020-range",
        Axis("range", "interpolation range", "task.range_pair", RANGE_PAIRS,
             tuple(f"r{i}" for i in range(1, len(RANGE_PAIRS) + 1)), sweep="range_pair"),
        "§4.1 Figure 3 (bottom) and App. C.5 (interpolation range)",
    ),
    _fig(
        "iclr2020-input-size",
        Axis("input_size", "input size", "task.input_size", _INPUT,
             tuple(f"i{n}" for n in _INPUT), steps=_INPUT_STEPS),
        "App. C.5 Figure (input size)",
    ),
    _fig(
        "iclr2020-overlap",
        Axis("overlap_ratio", "overlap ratio", "task.overlap_ratio", _OVERLAP,
             tuple(f"o{v:g}" for v in _OVERLAP), sweep="overlap_ratio"),
        "App. C.5 Figure (overlap ratio)",
    ),
    _fig(
        "iclr2020-subset",
        Axis("subset_ratio", "subset ratio", "task.subset_ratio", _SUBSET,
             tuple(f"s{v:g}" for v in _SUBSET), sweep="subset_ratio"),
        "App. C.5 Figure (subset ratio)",
    ),
    _fig(
        "iclr2020-lambda",
        Axis("reg_scale", "λ̂_sparse", "train.reg_scale", _LAMBDA, (), sweep="reg_scale"),
        "App. C.7 Figures (λ̂_sparse: NAU on + and −, NMU on ×)",
        seeds=25, ops=("add", "sub", "mul"),
        models=(Variant("nau", "NAU", "nau"), Variant("nmu", "NMU", "nmu")),
        models_by_op={"add": ("nau",), "sub": ("nau",), "mul": ("nmu",)},
        first_seed=25,
    ),
)}  # fmt: skip


def _hidden_size_check(seeds, have):
    nmu, nac = seeds("nmu", -1), seeds("nac_mul", -1)
    held, p = more_often(nmu, nac)
    return held, (f"NMU {nmu[0]}/{nmu[1]} against NAC• {nac[0]}/{nac[1]} at hidden size 10, "
                  f"Fisher's exact test one-sided p = {p:.2g}")  # fmt: skip


def _range_check(seeds, have):
    both = seeds("nmu", 1)
    narrow = {m.label: seeds(m.key, 5) for m in _MUL_MODELS if have(m.key)}
    held = both[0] > 0 and all(k == 0 for k, _ in narrow.values())
    solved = ", ".join(f"{label} {k}/{n}" for label, (k, n) in narrow.items())
    return held, f"NMU {both[0]}/{both[1]} on U[−2,2]; on U[1.1,1.2] {solved}"


#: what the paper's text says of each figure, as a check of our seeds: ``(claim, check,
#: failure)``; ``check(seeds, have) -> (held, evidence)`` with ``seeds(model, point index) ->
#: (solved, seeds)`` (a model without committed data: no verdict), ``have(model)``: whether the
#: model's cell is committed, and ``evidence`` the counts (and test) the verdict rests on;
#: ``failure``: the part of the claim that says a model fails, or None (below the paper's budget
#: a failure shows nothing: more iterations or seeds may solve)
CLAIMS = {
    "iclr2020-hidden-size": (
        "the NMU handles a much larger hidden size than NAC• (§4.1): at the largest hidden "
        "size (10) the NMU succeeds more often than NAC• (Fisher's exact test, one-sided, 5%)",
        _hidden_size_check,
        None,
    ),
    "iclr2020-range": (
        "the NMU works when the input holds both signs, U[−2,2] (§4.1), and no model learns "
        "U[1.1,1.2] (§4.1 prints U[−1.1,1.2], a range the figure does not have): of the models "
        "committed, the NMU solves some seeds on U[−2,2] and none solves a seed on U[1.1,1.2]",
        _range_check,
        "no model solving U[1.1,1.2]",
    ),
}
