"""Success against test length for finished recurrent-arithmetic runs, per model.

    python -m launch.compare_models --config=configs/recurrent.py:op=add,seeds=16,protocol=reproduce \
        --models=nau,nac_add,lstm --workdir=runs/recurrent_add
    python -m launch.recurrent_lengths --config=configs/recurrent.py:op=add,seeds=16,protocol=reproduce \
        --models=nau,nac_add,lstm --workdir=runs/recurrent_add --lengths=1,10,100,1000,2000

Each ``WORKDIR/MODEL`` must hold a single-setting run of that config (``compare_models.py``
makes them; the config, overrides included, must be the one the run was made with: its
``config.json`` is compared). Each seed's final network is evaluated on ``config.eval_size``
fixed test sequences of every length and judged against that length's threshold (the run's
construction; ε and samples as the config's). At the run's own ``task.test_length`` the
sequences are the run's test set. Writes ``WORKDIR/lengths.md`` (the table),
``WORKDIR/lengths.png`` (success rate with Wilson intervals and median MSE against length) and
``WORKDIR/lengths.json``; per model ``WORKDIR/MODEL/lengths.csv`` (per seed).

``--smoke`` adds the config file's ``smoke`` variant, as for ``compare_models.py --smoke``
(whose runs it then judges in seconds).
"""

from __future__ import annotations

import os

from nalu_jax.runtime.hostenv import configure_host_devices

configure_host_devices()

from absl import flags, logging  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from nalu_jax import cli  # noqa: E402
from nalu_jax.cli import fail, loaded_config  # noqa: E402
from nalu_jax.config import ConfigError  # noqa: E402
from nalu_jax.reporting import metrics, report  # noqa: E402
from nalu_jax.runtime.workdir import config_json  # noqa: E402

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file with variant string.")
_MODELS = flags.DEFINE_list("models", None, "Model names, e.g. nau,nac_add,lstm.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Parent directory of the runs (one per model).")
_LENGTHS = flags.DEFINE_list("lengths", ["1", "10", "100", "1000"], "Test sequence lengths.")
flags.DEFINE_bool("smoke", False, cli.SMOKE_HELP)  # read by cli.smoke_argv
_SAMPLES = flags.DEFINE_integer(
    "threshold_samples", None, "Simulated sequences per threshold (default: the config's)."
)


def _lengths() -> list[int]:
    try:
        lengths = [int(v) for v in _LENGTHS.value]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 1:
        fail(f"--lengths must be positive integers, got {','.join(_LENGTHS.value)!r}.")
    if len(set(lengths)) < len(lengths):  # each would be simulated and tabulated twice
        fail(f"--lengths names a length twice, got {','.join(_LENGTHS.value)!r}.")
    return lengths


def main(argv) -> None:
    if len(argv) > 1:
        fail(f"unexpected positional arguments {argv[1:]}.")
    base = loaded_config(_CONFIG)
    if not _MODELS.value or not _WORKDIR.value:
        fail("--models and --workdir are required, e.g. --models=nau,lstm --workdir=runs/x.")
    if base.get("experiment") != "recurrent":
        fail(f"--config must be a recurrent config, got experiment {base.get('experiment')!r}.")
    if _SAMPLES.value is not None and _SAMPLES.value < 1:
        fail(f"--threshold_samples must be a positive integer, got {_SAMPLES.value}.")
    lengths = _lengths()
    logging.set_verbosity(logging.FATAL)  # as compare_models: no orbax INFO lines
    from nalu_jax.experiments import recurrent

    summaries, out = [], {}
    configs = cli.model_configs(base, _MODELS.value)
    with cli.reported_errors():  # every model's finished run, before any is evaluated
        for model, config in zip(_MODELS.value, configs, strict=True):
            path = os.path.join(_WORKDIR.value, model, "config.json")
            if not os.path.exists(path) or open(path).read() != config_json(config):
                raise ConfigError(
                    f"{path} is missing or was written by another config: run "
                    "launch/compare_models.py with the same --config and overrides first."
                )
    for model, config in zip(_MODELS.value, configs, strict=True):
        workdir = os.path.join(_WORKDIR.value, model)
        with cli.reported_errors():
            r = recurrent.length_sweep(config, workdir, lengths, threshold_samples=_SAMPLES.value)
        columns = {"seed": r["seeds"]}
        for j, n in enumerate(lengths):
            columns[f"mse_{n}"] = r["mse"][:, j]
            columns[f"solved_{n}"] = r["solved"][:, j].astype(int)
        report.atomic_write(os.path.join(workdir, "lengths.csv"), report.csv_text(columns))
        groups = []
        for j, n in enumerate(lengths):
            g = report.group_summary({"mse_last": r["mse"][:, j]}, r["solved"][:, j])
            g.update(length=n, threshold=float(r["thresholds"][j]))
            groups.append(g)
        summaries.append(
            {
                "setting": model,
                "num_seeds": len(r["seeds"]),
                "num_steps": r["step"],
                "task": f"recurrent {config.task.op}",
                "train_length": int(config.task.train_length),
                "per_length": groups,
            }
        )
        out[model] = {
            "step": r["step"],
            "solved": r["solved"].sum(0).tolist(),
            "mse_median": [metrics.median(c) for c in r["mse"].T],
        }
        print(
            f"== {model}: solved per length {dict(zip(lengths, out[model]['solved'], strict=True))}"
        )
    table, draw = report.comparison(
        summaries, criterion="the recurrent task's threshold at that length (ε as the config's)"
    )
    report.atomic_write(os.path.join(_WORKDIR.value, "lengths.md"), table)
    report.write_png(os.path.join(_WORKDIR.value, "lengths.png"), draw)
    report.atomic_write(
        os.path.join(_WORKDIR.value, "lengths.json"),
        report.dumps({"lengths": lengths, "thresholds": summaries and [
            g["threshold"] for g in summaries[0]["per_length"]], "models": out}) + "\n",
    )  # fmt: skip
    print(table)
    print(f"results in {os.path.abspath(_WORKDIR.value)}")


if __name__ == "__main__":
    cli.run(main, smoke=True)
