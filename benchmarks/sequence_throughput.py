"""Training-step throughput of the sequence experiments against the machine's matmul rate (a
benchmark, not a test).

    python -m benchmarks.sequence_throughput                    # every case, 10 seeds × B vs 1 × 10B
    python -m benchmarks.sequence_throughput --cases mnist8_product --cnn both --rounds 5

For each case it times the experiment's own jitted training period (``trainer_for(config).train``:
``--steps`` updates in a ``lax.scan``, Adam included, evaluation excluded) in one process on one
JAX device (XLA's intra-op threads use every core), for ``--seeds`` seeds of batch B run as
``loop.blocked`` seed blocks (``--blocks``, default: the config's ``seed_block``; padded
to whole blocks as the population loop pads, the padding not counted), and for
one seed of batch ``seeds·B``. Rounds interleave the two (and a float32 1024³ matmul) so that
load from other processes hits them alike; each figure is the best round.

FLOPs are counted analytically per seed-step (forward + backward: every layer's weight gradient,
every input gradient but the first convolution's); the cell, loss and Adam are left out (< 1%).
``%mm`` = FLOPs × seed-steps/s ÷ the matmul rate. ``--cnn lax`` times the former CNN
formulation (``lax.conv`` + ``nnx.max_pool``) for before/after figures. Translation projects
the embedding table rather than every token (``NumberTranslationModel.features``), so its
step does far fewer FLOPs than the per-token LSTM it replaced; the table's %mm counts the FLOPs
the step runs, and a line per translation case adds the rate by the per-token count.

Prints a table and one JSON line per case and mode.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import time

import jax
import jax.numpy as jnp
from flax import nnx

from benchmarks import refuse_non_positive
from nalu_jax.config import load_config
from nalu_jax.engine import loop
from nalu_jax.engine.blocks import resolve_seed_block
from nalu_jax.models import conv
from nalu_jax.models import sequence as sm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# case: (experiment, config arg, image side or None)
CASES = {
    "mnist8_sum": ("sequential_mnist", "task=sum", 8),
    "mnist8_product": ("sequential_mnist", "task=product", 8),
    "mnist8_count": ("sequential_mnist", "task=count", 8),
    "mnist28_sum": ("sequential_mnist", "task=sum", 28),
    "mnist28_product": ("sequential_mnist", "task=product", 28),
    "mnist28_count": ("sequential_mnist", "task=count", 28),
    "translation": ("number_translation", "model=nau", None),
    "translation_authors": ("number_translation", "model=nalu,setup=authors", None),
}


def lax_cnn_call(self, images):
    """The former DigitCNN forward (``lax.conv`` + ``nnx.max_pool``), for before/after runs."""
    pool = lambda x: nnx.max_pool(x, (2, 2), strides=(2, 2))
    x = pool(jax.nn.relu(self.conv1(images[..., None])))
    x = pool(jax.nn.relu(self.conv2(x)))
    return self.dense2(jax.nn.relu(self.dense1(x.reshape(x.shape[0], -1))))


def cnn_macs(side: int, outputs: int, padding: str) -> tuple[int, int]:
    """Multiply-adds of one image through DigitCNN: (all layers, first convolution)."""
    h1 = conv.output_side(side, 5, padding)
    h2 = conv.output_side(h1 // 2, 5, padding)
    h3 = h2 // 2
    first = h1 * h1 * 25 * 1 * 20
    return first + h2 * h2 * 25 * 20 * 50 + h3 * h3 * 50 * 500 + 500 * outputs, first


def step_flops(experiment: str, config, side) -> float:
    """Analytic FLOPs of one seed's training step (forward + backward), as the step runs them."""
    batch = int(config.train.batch_size)
    if experiment == "sequential_mnist":
        out = 10 if config.task.name == "count" else 1
        total, first = cnn_macs(side, out, sm.cnn_padding((side, side)))
        return 2.0 * (3 * total - first) * batch * int(config.task.train_length)
    # translation: the LSTM's input projection runs on the embedding table ([V, E] @ [E, 4H]
    # and its two gradients, once per step: ``NumberTranslationModel.features``), then per
    # token the recurrent matmul (H → 4H) and the output cell (H + 1 → 1)
    e, h, tokens, vocab = translation_sizes(config)
    table = 3 * vocab * e * 4 * h
    return 2.0 * (table + 3 * (4 * h * h + (h + 1)) * tokens * batch)


def translation_sizes(config) -> tuple[int, int, int, int]:
    """(embedding size, LSTM size, tokens per sequence, vocabulary) of a translation config."""
    from nalu_jax.tasks import translation as tr_lib

    tokens = tr_lib.dataset(tr_lib.split(0)["train"])[0].shape[1]
    return (
        int(config.model.embedding_size),
        int(config.model.hidden_size),
        tokens,
        len(tr_lib.VOCAB),
    )


def per_token_flops(config) -> float:
    """Translation FLOPs counted as if every token's embedding were projected (4 gates of
    E + H → H per token: the count of the per-token LSTM that ran before the table projection,
    and of the speed target set against it) — the same function, more work than the step now does."""
    e, h, tokens, _ = translation_sizes(config)
    return 2.0 * 3 * (4 * (e + h) * h + (h + 1)) * tokens * int(config.train.batch_size)


def make_run(experiment: str, config, seeds: int, block: int):
    """A jitted ``state → state`` over ``seeds`` seeds (one training period) and its state."""
    module = importlib.import_module(f"nalu_jax.experiments.{experiment}")
    trainer = module.trainer_for(config)
    # padded to whole blocks like the population loop (the padding is computed, not counted)
    keys = jax.random.split(jax.random.key(0), loop.padded_size(seeds, block))
    states = jax.jit(jax.vmap(trainer.init))(keys)
    train = jax.jit(loop.blocked(trainer.train, block, (0, None, None)))
    return lambda s: train(s, trainer.hparams, trainer.train_data)[0], states


def timed(run, state):
    t = time.perf_counter()
    state = jax.block_until_ready(run(state))
    return time.perf_counter() - t, state


def matmul_seconds(a, mm) -> float:
    return min(timed(lambda x: mm(a), None)[0] for _ in range(5))


def profile(name: str, seeds: int, kinds, rounds: int) -> None:
    """Milliseconds per training step of one sequential-MNIST case, in parts: the image gather,
    the CNN forward, CNN forward + backward, and the whole step (loss, cell, Adam, projection),
    for ``seeds`` vmapped seeds × B and for 1 seed × seeds·B, per CNN formulation."""
    experiment, arg, side = CASES[name]
    config = load_config(experiment, arg)
    b, t = int(config.train.batch_size), int(config.task.train_length)
    out = 10 if config.task.name == "count" else 1
    pool = jax.random.uniform(jax.random.key(0), (1500, side, side))
    fast_call, timers = sm.DigitCNN.__call__, {}
    for kind in kinds:
        graphdef = nnx.split(
            nnx.eval_shape(lambda: sm.DigitCNN((side, side), out, rngs=nnx.Rngs(0)))
        )[0]
        init = lambda k: nnx.split(sm.DigitCNN((side, side), out, rngs=nnx.Rngs(params=k)))[1]
        call = fast_call if kind == "matmul" else lax_cnn_call
        forward = lambda p, x, call=call: call(nnx.merge(graphdef, p), x)
        loss = lambda p, x, forward=forward: jnp.mean(forward(p, x) ** 2)
        grad = jax.value_and_grad(loss)
        gather = lambda key: pool[jax.random.randint(key, (b * t,), 0, 1500)]
        for mode, s_, scale in (("seeds", seeds, 1), ("batch", 1, seeds)):
            params = jax.vmap(init)(jax.random.split(jax.random.key(1), s_))
            keys = jax.random.split(jax.random.key(2), s_)
            images = jax.vmap(lambda k: pool[jax.random.randint(k, (b * t * scale,), 0, 1500)])(
                keys
            )
            step_config = load_config(experiment, arg)
            step_config.data.source, step_config.data.synthetic_side = "synthetic", side
            step_config.train.batch_size, step_config.eval_every = b * scale, 1
            sm.DigitCNN.__call__ = call
            run, state = make_run(experiment, step_config, s_, s_)
            sm.DigitCNN.__call__ = fast_call
            timers[(kind, mode)] = {
                "gather": (jax.jit(jax.vmap(gather)), (keys,)),
                "cnn forward": (jax.jit(jax.vmap(forward)), (params, images)),
                "cnn forward+backward": (jax.jit(jax.vmap(grad)), (params, images)),
                "whole step": (lambda st, run=run: run(st), (state,)),
            }
    best = {}
    for _ in range(rounds):
        for key, parts in timers.items():
            for part, (f, a) in parts.items():
                seconds = min(timed(lambda _: f(*a), None)[0] for _ in range(2))
                best[key + (part,)] = min(best.get(key + (part,), float("inf")), seconds)
    print(f"profile {name}: ms per step ({seeds} seeds × {b}·{t} images, or 1 × {seeds * b}·{t})")
    for key in timers:
        cells = "  ".join(f"{part} {1e3 * best[key + (part,)]:8.1f}" for part in timers[key])
        print(f"  {key[0]:6s} {key[1]:5s}  {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES)
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--blocks", help="seed blocks to compare, e.g. 1,5,10 (default: config's)")
    parser.add_argument("--steps", type=int, default=10, help="updates per timed call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="seeds,batch", help="seeds (S × B), batch (1 × S·B)")
    parser.add_argument("--cnn", choices=("matmul", "lax", "both"), default="matmul")
    parser.add_argument("--profile", action="store_true", help="time the parts of each case")
    args = parser.parse_args()
    refuse_non_positive(args, ("seeds", "steps", "rounds"))
    unknown = sorted(set(args.cases.split(",")) - set(CASES))
    if unknown:
        parser.error(f"--cases: unknown {unknown}; choose from {list(CASES)}.")
    if not set(args.modes.split(",")) <= {"seeds", "batch"}:
        parser.error(f"--modes takes seeds and/or batch, got {args.modes!r}.")
    if args.blocks and not all(b.isdigit() and int(b) >= 1 for b in args.blocks.split(",")):
        parser.error(f"--blocks must be positive integers, got {args.blocks!r}.")
    if args.profile:
        kinds = ("matmul", "lax") if args.cnn == "both" else (args.cnn,)
        for name in args.cases.split(","):
            profile(name, args.seeds, kinds, args.rounds)
        return

    a = jnp.ones((1024, 1024), jnp.float32)
    mm = jax.jit(lambda x: x @ x)
    jax.block_until_ready(mm(a))
    matmul_rates, rows = [], []
    kinds = ("matmul", "lax") if args.cnn == "both" else (args.cnn,)
    fast_call = sm.DigitCNN.__call__
    for name in args.cases.split(","):
        experiment, arg, side = CASES[name]
        runs = {}
        for kind in kinds if side else ("matmul",):
            sm.DigitCNN.__call__ = fast_call if kind == "matmul" else lax_cnn_call
            for mode, seeds, scale in (("seeds", args.seeds, 1), ("batch", 1, args.seeds)):
                if mode not in args.modes.split(","):
                    continue
                config = load_config(experiment, arg)
                if side:
                    config.data.source = "synthetic"  # shapes only: 8×8 or 28×28, 1,500 images
                    config.data.synthetic_side = side
                    config.data.synthetic_size = 1500
                config.eval_every = args.steps
                base_batch = int(config.train.batch_size)
                config.train.batch_size = base_batch * scale
                probe = config.copy_and_resolve_references()  # "auto": the engine's block
                probe.num_seeds = seeds
                blocks = (
                    args.blocks.split(",")
                    if args.blocks
                    else [resolve_seed_block(probe).seed_block]
                )
                for block in dict.fromkeys(min(int(b), seeds) for b in blocks):
                    t0 = time.perf_counter()
                    run, state = make_run(experiment, config, seeds, block)
                    _, state = timed(run, state)  # compile + first period
                    runs[(kind, mode, block)] = dict(
                        run=run,
                        state=state,
                        seeds=seeds,
                        batch=base_batch * scale,
                        block=block,
                        flops=step_flops(experiment, config, side),
                        per_token=per_token_flops(config) if not side else None,
                        compile_s=time.perf_counter() - t0,
                        best=float("inf"),
                    )
        for _ in range(args.rounds):
            matmul_rates.append(2 * 1024**3 / matmul_seconds(a, mm) / 1e9)
            for r in runs.values():
                seconds, r["state"] = timed(r["run"], r["state"])
                r["best"] = min(r["best"], seconds)
        for (kind, mode, _), r in runs.items():
            rate = r["seeds"] * args.steps / r["best"]
            rows.append(
                dict(
                    case=name,
                    cnn=kind if side else "-",
                    mode=mode,
                    seeds=r["seeds"],
                    batch=r["batch"],
                    block=r["block"],
                    flops_per_seed_step=r["flops"],
                    per_token_flops_per_seed_step=r["per_token"],
                    seed_steps_per_s=rate,
                    gflops=rate * r["flops"] / 1e9,
                    compile_s=r["compile_s"],
                )
            )
        del runs
    peak = max(matmul_rates)
    load = os.getloadavg()
    print(
        f"float32 1024³ matmul: {peak:.1f} GFLOP/s (best of {len(matmul_rates)} rounds); "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"device {jax.devices()[0].platform} ×{jax.device_count()}"
    )
    head = f"{'case':16s} {'cnn':6s} {'mode':6s} {'S×B':>9s} {'block':>5s} {'MFLOP/ss':>9s} {'ss/s':>8s} {'GFLOP/s':>8s} {'%mm':>5s}"
    print(head)
    for r in rows:
        r["pct_of_matmul"] = 100 * r["gflops"] / peak
        print(
            f"{r['case']:16s} {r['cnn']:6s} {r['mode']:6s} {r['seeds']:>3d}×{r['batch']:<5d} "
            f"{r['block']:5d} {r['flops_per_seed_step'] / 1e6:9.2f} {r['seed_steps_per_s']:8.1f} "
            f"{r['gflops']:8.2f} {r['pct_of_matmul']:5.1f}"
        )
    for r in rows:
        if r["per_token_flops_per_seed_step"]:
            r["pct_of_matmul_per_token_count"] = (
                100 * r["seed_steps_per_s"] * r["per_token_flops_per_seed_step"] / 1e9 / peak
            )
            print(
                f"{r['case']} {r['mode']}: {r['pct_of_matmul_per_token_count']:.1f}% of the "
                f"matmul rate by the per-token count "
                f"({r['per_token_flops_per_seed_step'] / 1e6:.2f} MFLOP per seed-step, the "
                "work of the same step with every token projected)"
            )
    for case in dict.fromkeys(r["case"] for r in rows):
        for kind in dict.fromkeys(r["cnn"] for r in rows if r["case"] == case):
            pair = {r["mode"]: r for r in rows if r["case"] == case and r["cnn"] == kind}
            if len(pair) == 2:  # (the last block listed, when several)
                # the same examples per step: compare population steps/s
                seeds_rate = pair["seeds"]["seed_steps_per_s"] / pair["seeds"]["seeds"]
                ratio = seeds_rate / pair["batch"]["seed_steps_per_s"]
                print(
                    f"{case} ({kind}): {args.seeds} seeds × B run at {100 * ratio:.0f}% of the "
                    f"steps/s of 1 seed × {args.seeds}B"
                )
    for r in rows:
        r.update(matmul_gflops=peak, load=load[0])
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()}))


if __name__ == "__main__":
    main()
