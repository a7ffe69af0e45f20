"""Identity-extrapolation failure (tasks.md §6; Trask et al. 2018, Fig. 1) as an experiment.

For each activation, MLP autoencoders of a scalar ``1 → 8 → 8 → 8 → 1`` (hidden layers of
``identity.hidden_layers`` units with that activation, a ``linear`` output layer; for the
arithmetic units ``nac_add``/``nau`` every layer is the unit) are trained with Adam on MSE for
``x ~ U[train_range)`` (fresh batch each step), many seeds at once (fixed-width seed blocks
of ``nalu_jax.population``; seed k's key is ``fold_in(key(seed), k)``, so every activation sees
the same batches). A seed whose loss or parameters become non-finite stops updating and is
counted as diverged (excluded from the statistics). NAU weights are projected after each step.

Test: ``|f(x) − x|`` on a fixed grid of ``identity.grid_size`` points over ``test_range``;
``mae_inside`` / ``mae_outside`` average it over grid points inside / outside the training
range. Workdir (atomic writes): ``config.json``, ``seeds.csv``, ``errors.csv`` (median over
non-diverged seeds per grid point), ``summary.json``, ``summary.md`` (mean with a Student-t
95% interval), ``curves.png``. No checkpoints: a run is short, and is redone if interrupted.
"""

from __future__ import annotations

import csv
import io
import math
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx, struct

from nalu_jax import metrics as metrics_lib
from nalu_jax import reporting
from nalu_jax.config_utils import ConfigError, positive_int
from nalu_jax.engine import prepare_workdir
from nalu_jax.models import ArithmeticNetwork, init_params, split_model
from nalu_jax.population import blocked, pad_seed_numbers
from nalu_jax.train import seed_keys
from nalu_jax.units import UNITS, make_unit

SELF_STACKED = ("nac_add", "nau")  # arithmetic units used in every layer, output included


@struct.dataclass
class IdentityState:
    """One seed's training state (a leading seed axis under vmap)."""

    params: Any
    opt_state: Any
    key: jax.Array  # uint32 raw key data of the seed's training key
    diverged: jax.Array  # bool []
    diverged_at: jax.Array  # int32 [] first step with a non-finite update, −1 if none


def _layer_units(name: str, hidden: tuple[int, ...]) -> list[tuple[str, int, int]]:
    sizes = (1, *hidden, 1)
    units = [name] * len(hidden) + [name if name in SELF_STACKED else "linear"]
    return [(u, sizes[i], sizes[i + 1]) for i, u in enumerate(units)]


def model_factory(name: str, hidden: tuple[int, ...]):
    """``rngs -> ArithmeticNetwork`` mapping ``x [batch, 1]`` → ``[batch, 1]``."""
    layers = _layer_units(name, hidden)
    return lambda rngs: ArithmeticNetwork([make_unit(u, i, o, rngs=rngs) for u, i, o in layers])


def validate(config) -> None:
    """Every field this experiment reads; one ``ConfigError`` sentence for a bad value."""
    for name, value in (
        ("num_seeds", config.num_seeds),
        ("num_steps", config.num_steps),
        ("seed_block", config.seed_block),
        ("identity.grid_size", config.identity.grid_size),
    ):
        positive_int(name, value)
    positive_int("first_seed", config.first_seed, 0)
    positive_int("seed", config.seed, 0)
    positive_int("train.batch_size", config.train.batch_size)
    if not config.train.lr > 0:
        raise ConfigError(f"train.lr must be a positive number, got {config.train.lr!r}.")
    acts = tuple(config.identity.activations)
    unknown = [a for a in acts if a not in UNITS]
    if not acts or unknown or len(set(acts)) != len(acts):
        raise ConfigError(
            f"identity.activations must be distinct names of {sorted(UNITS)}, got {list(acts)}."
        )
    hidden = tuple(config.identity.hidden_layers)
    if not all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in hidden):
        raise ConfigError(f"identity.hidden_layers must be positive integers, got {list(hidden)}.")
    for field in ("train_range", "test_range"):
        lo, hi = getattr(config.identity, field)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"identity.{field} must be (lo, hi) with lo < hi, got {(lo, hi)}.")


def make_run(config, name: str):
    """Per-seed ``(init(seed_key), train(state), errors(state, grid [G]) -> [G])``."""
    hidden = tuple(int(h) for h in config.identity.hidden_layers)
    factory = model_factory(name, hidden)
    graphdef, _ = split_model(factory)
    tr = config.train
    tx = optax.adam(float(tr.lr), float(tr.beta1), float(tr.beta2), float(tr.adam_eps))
    lo, hi = (float(v) for v in config.identity.train_range)
    batch, steps = int(tr.batch_size), int(config.num_steps)

    def init(seed_key) -> IdentityState:
        init_key, train_key = jax.random.split(seed_key)
        params = init_params(factory, init_key)
        return IdentityState(
            params=params,
            opt_state=tx.init(params),
            key=jax.random.key_data(train_key),
            diverged=jnp.zeros((), bool),
            diverged_at=jnp.full((), -1, jnp.int32),
        )

    def loss_fn(params, x):
        return jnp.mean((nnx.merge(graphdef, params)(x) - x) ** 2)

    def step(state: IdentityState, t):
        key = jax.random.fold_in(jax.random.wrap_key_data(state.key), t)
        x = jax.random.uniform(key, (batch, 1), jnp.float32, lo, hi)
        loss, grads = jax.value_and_grad(loss_fn)(state.params, x)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        model = nnx.merge(graphdef, optax.apply_updates(state.params, updates))
        model.project()
        params = nnx.state(model)
        finite = [jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves((params, opt_state))]
        bad = ~(jnp.isfinite(loss) & jnp.all(jnp.stack(finite)))
        diverged = state.diverged | bad

        def keep(new, old):  # a diverged seed keeps its last finite state
            return jax.tree.map(lambda a, b: jnp.where(diverged, b, a), new, old)

        return state.replace(
            params=keep(params, state.params),
            opt_state=keep(opt_state, state.opt_state),
            diverged=diverged,
            diverged_at=jnp.where(bad & ~state.diverged, t, state.diverged_at),
        ), None

    def train(state):
        return jax.lax.scan(step, state, jnp.arange(steps, dtype=jnp.int32))[0]

    def errors(state, grid):
        return jnp.abs(nnx.merge(graphdef, state.params)(grid[:, None])[:, 0] - grid)

    return init, train, errors


def run_activation(config, name: str, grid) -> dict:
    """Train every seed for one activation → ``{"errors" [S, G], "diverged" [S], ...}``."""
    init, train, errors = make_run(config, name)

    def run_seed(seed_key, grid):
        state = train(init(seed_key))
        return errors(state, grid), state.diverged, state.diverged_at

    block = int(config.seed_block)
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    keys = seed_keys(config.seed, pad_seed_numbers(seeds, block))
    # One program per activation (init, training and test): compiling is most of a short run.
    err, diverged, diverged_at = jax.jit(blocked(run_seed, block, (0, None)))(keys, grid)
    n = len(seeds)
    return {
        "errors": np.asarray(err)[:n],
        "diverged": np.asarray(diverged)[:n],
        "diverged_at": np.asarray(diverged_at)[:n],
    }


def _stats(values, diverged) -> dict:
    v = np.where(diverged, np.nan, values)
    mean, lo, hi = metrics_lib.mean_interval(v)
    return {"mean": mean, "interval": (lo, hi), "median": metrics_lib.median(v)}


def train_and_evaluate(config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Run every activation of ``config.identity.activations``; write the workdir; summary."""
    validate(config)
    prepare_workdir(workdir, config, overwrite)
    ic = config.identity
    grid = jnp.linspace(float(ic.test_range[0]), float(ic.test_range[1]), int(ic.grid_size))
    xs = np.asarray(grid)
    inside = (xs >= ic.train_range[0]) & (xs <= ic.train_range[1])
    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    t0 = time.perf_counter()
    results, per_activation = {}, {}
    bar = _progress(len(ic.activations), progress)
    for name in ic.activations:
        r = run_activation(config, name, grid)
        with np.errstate(all="ignore"):
            r["mae_inside"] = np.mean(r["errors"][:, inside], axis=1)
            r["mae_outside"] = np.mean(r["errors"][:, ~inside], axis=1)
        results[name] = r
        per_activation[name] = {
            "mae_inside": _stats(r["mae_inside"], r["diverged"]),
            "mae_outside": _stats(r["mae_outside"], r["diverged"]),
            "diverged": int(np.sum(r["diverged"])),
        }
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    summary = {
        "experiment": "identity",
        "activations": per_activation,
        "num_seeds": int(config.num_seeds),
        "first_seed": int(config.first_seed),
        "root_seed": int(config.seed),
        "num_steps": int(config.num_steps),
        "hidden_layers": [int(h) for h in ic.hidden_layers],
        "train_range": [float(v) for v in ic.train_range],
        "test_range": [float(v) for v in ic.test_range],
        "wall_time_s": time.perf_counter() - t0,
    }
    write_outputs(workdir, seeds, xs, results, summary)
    return summary


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="activation", dynamic_ncols=True)


def format_summary(summary: dict) -> str:
    """Markdown table: MAE inside / outside the training range, mean [95% CI], per activation."""

    def cell(s):
        lo, hi = s["interval"]
        return f"{s['mean']:.4g} [{lo:.4g}, {hi:.4g}]"

    lo, hi = summary["train_range"]
    lines = [
        f"| activation | MAE inside [{lo:g}, {hi:g}] | MAE outside | diverged |",
        "|---|---|---|---|",
    ]
    for name, s in summary["activations"].items():
        row = (name, cell(s["mae_inside"]), cell(s["mae_outside"]), s["diverged"])
        lines.append("| {} | {} | {} | {} |".format(*row))
    note = (
        f"\n{summary['num_seeds']} seeds, {summary['num_steps']} steps, hidden layers "
        f"{summary['hidden_layers']}, test range {summary['test_range']}. Mean over non-diverged "
        "seeds with a Student-t 95% interval.\n"
    )
    return "\n".join(lines) + "\n" + note


def write_outputs(workdir: str, seeds, xs, results: dict, summary: dict) -> None:
    """seeds.csv, errors.csv, summary.json, summary.md and curves.png (all atomic)."""
    join = lambda name: os.path.join(workdir, name)
    rows = [("activation", "seed", "mae_inside", "mae_outside", "diverged")]
    err_rows = [("activation", "x", "median_abs_error")]
    for name, r in results.items():
        for i, seed in enumerate(seeds):
            rows.append(
                (name, int(seed), repr(float(r["mae_inside"][i])),
                 repr(float(r["mae_outside"][i])), int(r["diverged"][i]))
            )  # fmt: skip
        med = _median_curve(r)
        err_rows += [(name, repr(float(x)), repr(float(m))) for x, m in zip(xs, med, strict=True)]
    reporting.atomic_write(join("seeds.csv"), _csv(rows))
    reporting.atomic_write(join("errors.csv"), _csv(err_rows))
    reporting.atomic_write(join("summary.json"), reporting.dumps(summary) + "\n")
    reporting.atomic_write(join("summary.md"), format_summary(summary))
    reporting.atomic_write(join("curves.png"), curves_png(xs, results, summary["train_range"]))


def _median_curve(r) -> np.ndarray:
    live = r["errors"][~r["diverged"]]
    if live.size == 0:
        return np.full(r["errors"].shape[1], np.nan)
    with np.errstate(all="ignore"):
        return np.nanmedian(np.where(np.isfinite(live), live, np.nan), axis=0)


def _csv(rows) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def curves_png(xs, results: dict, train_range) -> bytes:
    """Median |f(x) − x| over seeds versus x, one line per activation, log-scale y."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    ax.axvspan(*train_range, color="0.9", label="training range")
    colors = plt.cm.tab20(np.linspace(0, 1, max(len(results), 2)))  # > 10 distinct lines
    for (name, r), color in zip(results.items(), colors, strict=False):
        ax.plot(xs, np.maximum(_median_curve(r), 1e-8), label=name, lw=1.2, color=color)
    ax.set(xlabel="x", ylabel="median |f(x) − x| over seeds", yscale="log")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()
