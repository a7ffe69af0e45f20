"""Several models on one task, each a many-seed run, and one comparison table.

    python -m launch.compare_models --config=configs/single_module.py:op=mul,steps=20000 \
        --models=nmu,nac_mul,nalu --workdir=runs/quickstart

Models change shapes, so each model is its own compiled program (seeds, and any
``config.sweep``, are vmap axes within it). Every model gets ``WORKDIR/MODEL`` with the
usual outputs (and resumes there); ``WORKDIR/comparison.md`` holds the combined table.
Flags as for ``nalu_jax.main`` (``--config.FIELD=VALUE`` overrides apply to every model).

Sequence experiments get ``WORKDIR/comparison.png`` too: success rate against test length per
model with Wilson intervals (sequential MNIST), or per model (number translation). Sequential
MNIST's reference ("solved accumulator") population depends on the config but not on the
model, so it trains once: the first model's ``reference.json`` is kept as
``WORKDIR/reference.json`` and copied into every other model's directory.

    python -m launch.compare_models --config=configs/sequential_mnist.py:task=product \
        --models=nmu,nac_mul,nalu,lstm --workdir=runs/smnist_product

``--smoke`` adds the config file's ``smoke`` variant to ``--config`` (a run of seconds to a
minute through the whole path; ``nalu_jax.cli.smoke_argv``).
"""

from __future__ import annotations

import os
import shutil

from nalu_jax.runtime.hostenv import configure_host_devices

configure_host_devices()

from absl import flags, logging  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from nalu_jax import cli  # noqa: E402
from nalu_jax.cli import fail, loaded_config  # noqa: E402
from nalu_jax.reporting import report  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file with variant string.")
_MODELS = flags.DEFINE_list("models", None, "Model names to compare, e.g. nmu,nac_mul,nalu.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Parent directory: one subdirectory per model.")
_PROGRESS = flags.DEFINE_bool("progress", True, "Show a progress bar per model.")
flags.DEFINE_bool("smoke", False, cli.SMOKE_HELP)  # read by cli.smoke_argv
_RESULTS = flags.DEFINE_string(
    "results",
    None,
    "Commit each finished model's per-seed files to RESULTS/MODEL (results/README.md); a "
    "model already committed there with the same config is not run again, and one committed "
    "with its first seeds runs only the rest, merged into the cell; one holding this config "
    "with other seeds is kept (the run stays in --workdir).",
)


def _share_reference(parent: str, workdir: str, *, before: bool) -> None:
    """Before a model's run, copy ``parent/reference.json`` in (when the model has none);
    after it, keep the model's as ``parent/reference.json`` (when the parent has none)."""
    shared, own = os.path.join(parent, "reference.json"), os.path.join(workdir, "reference.json")
    src, dst = (shared, own) if before else (own, shared)
    if os.path.exists(src) and not os.path.exists(dst):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = dst + ".tmp"
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)  # atomic: a crash never leaves a partial reference


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}.")
    base = loaded_config(_CONFIG)
    if not _MODELS.value or not _WORKDIR.value:
        fail("--models and --workdir are required, e.g. --models=nmu,nac_mul --workdir=runs/x.")
    logging.set_verbosity(logging.FATAL)  # as nalu_jax.main: orbax tracebacks become one sentence
    from nalu_jax.engine.run import run
    from nalu_jax.experiments import experiment_of
    from nalu_jax.reproduce import results
    from nalu_jax.runtime.workdir import refuse_unwritable

    rows = []
    configs = cli.model_configs(base, _MODELS.value)  # every name checked before any training
    # --results is first written after a model has trained, so it is checked here; each
    # model's workdir is refused before that model trains (runtime.workdir.prepare_workdir)
    if _RESULTS.value:
        with cli.reported_errors():
            refuse_unwritable("--results", _RESULTS.value)
    for model, config in zip(_MODELS.value, configs, strict=True):
        # λ̂, lr and other per-model defaults resolve from the name
        print(f"== {model}", flush=True)
        cell = os.path.join(_RESULTS.value, model) if _RESULTS.value else None
        with cli.reported_errors():
            experiment = experiment_of(config)
            workdir = os.path.join(_WORKDIR.value, model)
            state, have = results.status(cell, config) if cell else ("missing", 0)
            if state == "other" and (why := results.kept(cell, config)):
                print(why)
                cell = None
            # the cell holds the first seeds of this config: run the rest, merged into it
            extend = state == "extend" and experiment.merge_summary is not None
            if extend:
                first = int(config.first_seed)
                config, workdir = results.missing_seeds(config, have), f"{workdir}-from{have}"
                print(f"{cell} holds seeds {first}–{first + have - 1}; running the "
                      f"{config.num_seeds} more in {workdir}")  # fmt: skip
            if state == "done":
                print(f"{cell} already holds this config's results; not run again.")
                summary = results.read_json(os.path.join(cell, "summary.json"))
            else:
                _share_reference(_WORKDIR.value, workdir, before=True)
                summary = run(experiment, config, workdir, progress=_PROGRESS.value)
                _share_reference(_WORKDIR.value, workdir, before=False)
                if cell and summary is not None and extend:
                    results.merge(cell, workdir)
                    summary = results.read_json(os.path.join(cell, "summary.json"))
                elif cell and summary is not None:
                    results.commit(workdir, cell)
        rows.extend(summary["settings"] if "settings" in summary else [summary])
        for r in rows[-len(summary.get("settings", [summary])) :]:
            r["setting"] = f"{model} {r.get('setting') or ''}".strip()
    settings_table = lambda rows: experiment.format_summary({"settings": rows})
    table, draw = report.comparison(rows, table=settings_table)
    report.atomic_write(os.path.join(_WORKDIR.value, "comparison.md"), table)
    report.write_png(os.path.join(_WORKDIR.value, "comparison.png"), draw)
    print(table)
    print(f"results in {os.path.abspath(_WORKDIR.value)}")


if __name__ == "__main__":
    cli.run(main, smoke=True)
