"""Success with restarts: each run is k independent initialisations, the one with the lowest
validation MSE is kept, and the kept one is judged as usual.

    python -m launch.compare_models --config=configs/recurrent.py:op=add,seeds=64,protocol=reproduce \
        --models=nau --config.first_seed=48 --config.model.recurrent_init=random \
        --workdir=runs/recurrent_add_restarts
    python -m launch.best_of --k=2 --models=nau --workdir=runs/recurrent_add_restarts

Seeds ``first_seed + k·i … first_seed + k·i + k − 1`` form run ``i`` (so a run of ``n`` seeds
is ``n / k`` runs). The choice reads only ``seeds.csv``'s ``interpolation_mse`` (the validation
MSE at the evaluation the judgement itself selects; a diverged seed is never kept), never a
test figure; success is the kept seed's ``solved`` (and, where ``MODEL/lengths.csv`` from
``launch/recurrent_lengths.py`` exists, its success at every length). The judgement is not
changed: a run succeeds exactly when the initialisation it keeps does. Writes
``WORKDIR/best_of_K.md`` (and prints it); one initialisation per run is ``--k=1``.
"""

from __future__ import annotations

import csv
import os

import numpy as np
from absl import flags

from nalu_jax import cli
from nalu_jax.cli import fail
from nalu_jax.reporting import metrics, report

_WORKDIR = flags.DEFINE_string("workdir", None, "Parent directory of the runs (one per model).")
_MODELS = flags.DEFINE_list("models", None, "Model names (subdirectories of --workdir).")
_K = flags.DEFINE_integer("k", None, "Initialisations per run (consecutive seeds).")


def _read_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def model_rows(directory: str, k: int) -> dict:
    """``seeds.csv`` (and ``lengths.csv`` when present) of one run directory, grouped into runs
    of ``k`` seeds. Returns ``{"seeds", "kept" (seed numbers), "solved" [S], "kept_solved"
    [R], "lengths": {length: (solved [S], kept_solved [R])}}``."""
    path = os.path.join(directory, "seeds.csv")
    if not os.path.exists(path):
        raise ValueError(f"{directory!r} holds no seeds.csv (a finished run of compare_models).")
    rows = _read_csv(path)
    seeds = np.array([int(r["seed"]) for r in rows])
    if np.any(np.diff(seeds) != 1):
        raise ValueError(f"{path}: the seeds must be consecutive, got {seeds.tolist()}.")
    valid = np.array([float(r["interpolation_mse"] or "nan") for r in rows])
    diverged = np.array([r["diverged"] == "1" for r in rows])
    solved = np.array([r["solved"] == "1" for r in rows])
    kept = metrics.best_of(valid, k, diverged)
    out = {"seeds": seeds, "kept": seeds[kept], "solved": solved, "kept_solved": solved[kept]}
    out["lengths"] = {}
    lpath = os.path.join(directory, "lengths.csv")
    if os.path.exists(lpath):
        lrows = _read_csv(lpath)
        if [int(r["seed"]) for r in lrows] != seeds.tolist():
            raise ValueError(f"{lpath} and seeds.csv hold different seeds.")
        for name in lrows[0]:
            if name.startswith("solved_"):
                per_seed = np.array([r[name] == "1" for r in lrows])
                out["lengths"][int(name[len("solved_") :])] = (per_seed, per_seed[kept])
    return out


def _rate(solved) -> str:
    """``solved/n rate [95% CI]``, the cell format of the reports' success columns."""
    n, s = int(np.size(solved)), int(np.sum(solved))
    group = {"success_rate": s / n, "success_interval": metrics.wilson_interval(s, n)}
    return f"{s}/{n} {report.success_cell(group)}"


def table(results: dict, k: int) -> str:
    """The Markdown table: per model, one initialisation against the best of ``k``."""
    lines = [
        f"| model | seeds | one initialisation: solved [95% CI] | runs of {k} | best of {k}: "
        "solved [95% CI] | kept seeds |",
        "|---|---|---|---|---|---|",
    ]
    for model, r in results.items():
        kept = ", ".join(str(s) for s in r["kept"])
        lines.append(
            f"| {model} | {r['seeds'][0]}–{r['seeds'][-1]} | {_rate(r['solved'])} | "
            f"{len(r['kept'])} | {_rate(r['kept_solved'])} | {kept} |"
        )
    lengths = sorted({n for r in results.values() for n in r["lengths"]})
    if lengths:
        lines += ["", f"Success against test length, best of {k} (one initialisation):", ""]
        lines.append("| length | " + " | ".join(results) + " |")
        lines.append("|---|" + "---|" * len(results))
        for n in lengths:
            cells = []
            for r in results.values():
                one, best = r["lengths"].get(n, (None, None))
                cells.append("—" if one is None else f"{_rate(best)} ({_rate(one)})")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Each run is {k} consecutive seeds; it keeps the seed with the lowest validation MSE "
        "(seeds.csv interpolation_mse; a diverged seed is never kept) and succeeds when that "
        "seed is solved. Wilson 95% intervals.",
    ]
    return "\n".join(lines) + "\n"


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}.")
    if not _WORKDIR.value or not _MODELS.value:
        fail("--workdir and --models are required, e.g. --models=nau --workdir=runs/x.")
    if _K.value is None or _K.value < 1:
        fail(f"--k (initialisations per run) must be a positive integer, got {_K.value}.")
    results = {}
    for model in _MODELS.value:
        try:
            results[model] = model_rows(os.path.join(_WORKDIR.value, model), _K.value)
        except (ValueError, KeyError) as e:
            fail(f"model {model}: {e}")
    text = table(results, _K.value)
    report.atomic_write(os.path.join(_WORKDIR.value, f"best_of_{_K.value}.md"), text)
    print(text)


if __name__ == "__main__":
    cli.run(main)
