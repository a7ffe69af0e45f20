"""Seeds as an axis: a population of runs in fixed-width blocks on every device, and the loop.

``run_population`` is the loop every experiment's runs go through (``nalu_jax.engine.run.run`` calls
it): it pads the runs to whole blocks on every local device, compiles once per device, and
loops in Python over evaluation periods: ``evaluate`` (before that step's update) then
``train`` (``eval_every`` updates in a ``lax.scan``). Between periods it records every metric
per run, updates the progress bar and, every ``checkpoint_every`` steps, saves all states and
the history with orbax. Re-running with the same checkpoint directory resumes.

Why blocks:

``jax.vmap`` over all S seeds lets XLA pick kernels by S (e.g. a different dot or reduction
strategy at 100 seeds than at 6), so seed k's floats would depend on how many seeds ran with
it. Here the population is padded to whole blocks of ``block`` seeds and ``lax.map`` runs the
same compiled ``vmap``-of-``block`` body on every block: seed k's result is bitwise the same
alone, among 1,000 others, or at any position (``tests/test_engine.py`` checks this).

When every run has diverged:

A diverged run keeps its last finite parameters and optimiser state (``train.guarded_update``);
with ``Trainer.frozen_when_diverged`` nothing else of its state changes but the step. So a
block whose every run has diverged is not trained: ``lax.cond`` in the compiled step gives it
its step ``eval_every`` further on and NaN losses, what training would give (``blocked``); a
block with one live run trains as before. Once a period ends with every run diverged, the loop
stops calling ``train`` at all: each later period only advances the states' step and records
its evaluation, that of the same frozen states. Either way the history, checkpoints and
results are bitwise those of training on (``tests/test_engine.py``), at the cost of the live
blocks and the evaluations. ``PopulationResult.stopped_at`` says from which step no run
trained; ``trained_steps`` counts the steps trained until then.

Nor are the frozen states evaluated over and over. An evaluation is a pure function of the
state and the fixed evaluation data; where it does not read the state's step (no operation of
one seed's traced evaluation takes the step: ``evaluation_reads_step``) and, after training
stopped, an evaluation returns the state it was given (bitwise, but for the step, which it
does not change), the next evaluation is given the same state again and so gives the same
metrics and state, and so on to the end of the budget. From there the loop records that
evaluation's metrics for each later period without computing them (an arithmetic seed's state
keeps only its last validation error, so its second evaluation after the stop is at the latest
such a fixed point). The history, checkpoints and results are again bitwise the same.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.engine.blocks import padded_size, seed_block_for
from nalu_jax.engine.train import Trainer, default_chunk, num_evaluations
from nalu_jax.runtime.checkpoint import Checkpointer


def pad_seed_numbers(seed_numbers, block: int) -> np.ndarray:
    """Append copies of the last seed number so the population fills whole blocks.

    The copies are computed and thrown away; callers keep the first ``len(seed_numbers)``.
    """
    seeds = np.asarray(seed_numbers)
    extra = padded_size(len(seeds), block) - len(seeds)
    return np.concatenate([seeds, np.repeat(seeds[-1:], extra)])


def init_in_blocks(init, keys, block: int, hparams=None):
    """``jax.vmap(init)(keys, hparams)``, one call per ``block`` seeds, concatenated
    (``hparams``: None, one ``HParams`` for every seed, or ``PerRun`` of one per seed).

    The same bits as one vmap over every seed (vmap's results do not depend on how many seeds
    it holds; ``lax.map`` over blocks, as in training, rounds some inits differently). One vmap
    over every seed never finished for a sequential-MNIST LSTM with a 32-unit readout at 6+
    seeds (an XLA:CPU hang, WORKSPACE "Known gaps"); blocks of ``seed_block`` (1 there) do.
    """
    per_run = isinstance(hparams, PerRun)
    vinit = jax.jit(jax.vmap(init, in_axes=(0, 0 if per_run else None)))

    def hp(i):
        return jax.tree.map(lambda x: x[i : i + block], hparams.value) if per_run else hparams

    parts = [vinit(keys[i : i + block], hp(i)) for i in range(0, len(keys), block)]
    return parts[0] if len(parts) == 1 else jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


def blocked(fn, block: int, in_axes, frozen_steps: int | None = None):
    """``fn`` on one seed → the same on ``[S, ...]`` (S a multiple of ``block``).

    ``in_axes`` as for ``jax.vmap``; arguments with axis ``None`` are shared by all seeds.
    ``frozen_steps``: ``fn`` is ``train`` of a ``Trainer.frozen_when_diverged``, whose first
    argument is the ``TrainState``: a block whose every run has diverged is not computed but
    given what training would give it (module doc): its step ``frozen_steps`` further on and
    NaN losses.
    """
    vfn = jax.vmap(fn, in_axes=in_axes)

    def frozen(state, *rest):
        _, losses = jax.eval_shape(vfn, state, *rest)
        return state.replace(step=state.step + frozen_steps), jnp.full(
            losses.shape, jnp.nan, losses.dtype
        )

    def per_block(*full):
        if frozen_steps is None:
            return vfn(*full)
        return jax.lax.cond(jnp.all(full[0].diverged), frozen, vfn, *full)

    def split(x):
        return x.reshape((x.shape[0] // block, block) + x.shape[1:])

    def merge(x):
        return x.reshape((x.shape[0] * block,) + x.shape[2:])

    def run(*args):
        mapped = [i for i, ax in enumerate(in_axes) if ax == 0]
        blocks = tuple(jax.tree.map(split, args[i]) for i in mapped)

        def body(blocks_i):
            full = list(args)
            for i, value in zip(mapped, blocks_i, strict=True):
                full[i] = value
            return per_block(*full)

        return jax.tree.map(merge, jax.lax.map(body, blocks))

    return run


class DevicePopulation:
    """A padded population split into equal, contiguous shares, one per local device.

    Every device runs the SAME single-device program on its share (dispatch is asynchronous,
    so the devices work concurrently). Sharding one program across devices (``shard_map``,
    ``pmap``) compiles differently from the one-device program and changed the last bits of
    the training results; this way seed k's numbers do not depend on the device count.
    """

    def __init__(self, devices=None):
        self.devices = list(devices if devices is not None else jax.local_devices())

    def split(self, tree) -> list:
        """``tree`` with a leading population axis → one share per device, on that device."""
        size = jax.tree.leaves(tree)[0].shape[0]
        share = size // len(self.devices)
        if share * len(self.devices) != size:
            raise ValueError(f"population {size} does not split over {len(self.devices)} devices")
        return [
            jax.device_put(jax.tree.map(lambda x, i=i: x[i * share : (i + 1) * share], tree), d)
            for i, d in enumerate(self.devices)
        ]

    def replicate(self, tree) -> list:
        """One copy of ``tree`` per device (shared arguments: hyperparameters, data)."""
        return [jax.device_put(tree, d) for d in self.devices]

    def compile(self, fn, *per_device_args, options: dict | None = None) -> list:
        """``fn`` (already jitted) lowered and compiled for each device's arguments, with the
        per-program XLA ``options`` (``compiler_options``)."""
        from concurrent.futures import ThreadPoolExecutor

        def one(args):
            return fn.lower(*args).compile(compiler_options=options or None)

        with ThreadPoolExecutor(len(self.devices)) as pool:  # XLA compiles outside the GIL
            return list(pool.map(one, zip(*per_device_args, strict=True)))

    @staticmethod
    def run(compiled: list, *per_device_args) -> list:
        """Dispatch each device's compiled function on its arguments (returns at once)."""
        return [
            f(*args) for f, args in zip(compiled, zip(*per_device_args, strict=True), strict=True)
        ]

    @staticmethod
    def gather(parts: list):
        """Device shares → one host (numpy) tree in population order."""
        return jax.tree.map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *parts)


class PerRun(NamedTuple):
    """An argument with a leading run axis ``[n, ...]`` (split over devices with the runs)."""

    value: Any


class PopulationResult(NamedTuple):
    history: dict  # {"step": [E], "train_loss": [E, n], metric: [E, n, ...]}
    diverged: np.ndarray  # bool [n]
    diverged_at: np.ndarray  # int [n]
    compile_s: float  # over every segment of a resumed run
    loop_s: float
    trained_steps: int  # steps trained, over every segment of a resumed run
    resumed_from_step: int | None  # the checkpoint this call started from; None: fresh
    stopped_at: int | None = None  # every run had diverged: not trained from this step on


def progress_bar(total: int, initial: int, enabled: bool, desc: str | None = None):
    """A tqdm bar on stderr (steps, elapsed, ETA; postfix set by the caller), or None."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total, initial=initial, unit="step", dynamic_ncols=True, mininterval=1.0, desc=desc
    )


def metrics_dict(metrics) -> dict:
    return metrics._asdict() if hasattr(metrics, "_asdict") else dict(metrics)


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; the run saved a checkpoint at ``step`` (None: nothing to
    save yet) and can be resumed by re-running the same command."""

    def __init__(self, signum: int, step: int | None):
        super().__init__(signum, step)
        self.signum, self.step = signum, step

    @property
    def status(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


class _StopRequest:
    """Turns SIGINT/SIGTERM into a request honoured at the next period boundary (the main
    thread only; a second signal exits at once)."""

    def __init__(self):
        self.signum, self._old = None, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.signum is not None:
            os._exit(128 + signum)
        self.signum = signum
        say(f"{signal.Signals(signum).name} received: saving at the next period boundary.")

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


def say(message: str) -> None:
    """One sentence for the user on stderr."""
    print(f"nalu_jax: {message}", file=sys.stderr, flush=True)


def run_population(
    trainer: Trainer, keys, hparams, config, checkpoint_dir, *, checkpoint_process=None,
    progress=True, desc=None, postfix=None, on_checkpoint=None, on_evaluation=None,
    extend_from=(),
) -> PopulationResult:  # fmt: skip
    """Train ``len(keys)`` runs of ``trainer`` for ``config.num_steps`` steps (module doc).

    Checkpoints hold the ``n`` runs unpadded (so a run resumes on any device count), the
    history and the cumulative timing. SIGINT/SIGTERM save at the next period boundary and
    raise ``Interrupted``.

    Args:
      keys: ``[n]`` typed keys, one per run.
      hparams: one ``HParams`` for every run, or ``PerRun(HParams [n])``.
      postfix: ``(history, num_done) -> dict`` for the progress bar (diverged is added).
      on_checkpoint: ``(history, num_done, diverged_at [n])`` after each intermediate save.
      on_evaluation: ``(history, e)`` after evaluation ``e`` is recorded.
      extend_from: the smaller ``num_steps`` this checkpoint directory was trained with before
        (``nalu_jax.runtime.workdir.extended_from``): their checkpoints restore too, the history is
        padded, and a finished run goes on from its last step.
    """
    with _StopRequest() as stop:
        return _run_population(
            trainer, keys, hparams, config, checkpoint_dir, stop, checkpoint_process, progress,
            desc, postfix, on_checkpoint, on_evaluation, extend_from,
        )  # fmt: skip


def empty_history(shapes: dict, num_evals: int, n: int) -> dict:
    """The evaluation history of ``n`` seeds as checkpoints store it, not yet filled: each
    metric of ``shapes`` (``metrics_dict`` of the vmapped evaluation's shapes, seed axis first)
    ``[num_evals, n, ...]`` and ``train_loss`` ``[num_evals, n]`` NaN, ``step`` ``[num_evals]``
    −1."""
    history = {
        k: np.full((num_evals, n) + v.shape[1:], np.nan, np.float32) for k, v in shapes.items()
    }
    history["train_loss"] = np.full((num_evals, n), np.nan, np.float32)
    history["step"] = np.full((num_evals,), -1, np.int64)
    return history


def extended_history(old: dict, empty: dict) -> dict:
    """A smaller budget's ``history`` in the layout of a larger one (``empty``, not filled).

    A finished run's checkpoint holds its state after its last evaluation, never trained
    past it: that evaluation is marked undone, so the loop evaluates it again (the same
    numbers) and trains on from there, as a run of the larger budget would have done."""
    out = {k: v.copy() for k, v in empty.items()}
    m = len(old["step"])
    for k, v in old.items():
        out[k][:m] = v
    if old["step"][-1] >= 0:  # finished: its last evaluation is redone before training on
        out["step"][m - 1] = -1
    return out


def checkpoint_tree(states, history: dict, clock=None) -> dict:
    """The tree a population checkpoint holds (also the template that restores one): the
    per-seed ``states``, the evaluation ``history`` and the ``clock`` (compile s, loop s,
    steps trained)."""
    clock = np.zeros(3, np.float64) if clock is None else clock
    return {"states": states, "history": history, "clock": clock}


#: XLA:CPU's option naming the fusion kinds it hands to YNNPACK ("": none)
YNN_FUSIONS_OPTION = "xla_cpu_experimental_ynn_fusion_type"


@functools.cache
def cpu_option_known(name: str, value: str = "") -> bool:
    """Whether this jaxlib's XLA:CPU accepts compile option ``name`` (a tiny compile)."""
    try:
        # an argument on a CPU device compiles for XLA:CPU even where the default is a GPU
        x = jax.device_put(np.zeros(2, np.float32), jax.devices("cpu")[0])
        jax.jit(lambda x: x + 1).lower(x).compile(compiler_options={name: value})
    except Exception as e:  # jaxlib's error type moved between versions
        if "No such compile option" in str(e):
            return False
        raise
    return True


def compiler_options(config, platform: str) -> dict:
    """The per-program XLA options ``config`` asks for on ``platform`` (the process's
    ``XLA_FLAGS`` are left as they are): ``cpu_ynn_fusions=False`` on CPU compiles every fusion
    with XLA's own kernels instead of YNNPACK's (a jaxlib without YNNPACK has only those)."""
    if platform == "cpu" and not config.get("cpu_ynn_fusions", True):
        return {YNN_FUSIONS_OPTION: ""} if cpu_option_known(YNN_FUSIONS_OPTION) else {}
    return {}


def _run_population(trainer, keys, hparams, config, checkpoint_dir, stop, checkpoint_process,
                    progress, desc, postfix, on_checkpoint, on_evaluation,
                    extend_from=()):  # fmt: skip
    init, train, evaluate = trainer.init, trainer.train, trainer.evaluate
    train_args = (hparams, trainer.train_data)
    eval_args = (hparams, trainer.eval_data)
    n, pop = len(keys), DevicePopulation()
    # a config whose "auto" is unresolved (engine.run resolves it first) gets the same block
    platform, count = pop.devices[0].platform, len(pop.devices)
    block = seed_block_for(config.seed_block, config.get("cpu_seed_block"), platform=platform,
                           runs=n, devices=count)  # fmt: skip
    pad = np.minimum(np.arange(padded_size(n, block * len(pop.devices))), n - 1)

    def padded(a):
        return jax.tree.map(lambda x: np.asarray(x)[pad], a.value) if isinstance(a, PerRun) else a

    def per_device(args) -> list:
        """Per argument, one value per device (PerRun split, the rest replicated)."""
        return [pop.split(padded(a)) if isinstance(a, PerRun) else pop.replicate(a) for a in args]

    t0 = time.perf_counter()
    init_hp = PerRun(padded(hparams)) if isinstance(hparams, PerRun) else hparams
    states = init_in_blocks(init, keys[pad], block, init_hp)
    t_args, e_args = per_device(train_args), per_device(eval_args)
    axes = lambda args: (0, *(0 if isinstance(a, PerRun) else None for a in args))
    eval_fn = jax.jit(blocked(evaluate, block, axes(eval_args)))
    frozen_steps = int(config.eval_every) if trainer.frozen_when_diverged else None
    train_fn = jax.jit(blocked(train, block, axes(train_args), frozen_steps), donate_argnums=0)
    probe = jax.eval_shape(eval_fn, states, *(padded(a) for a in eval_args))
    shapes = metrics_dict(probe[1])

    num_evals, every = num_evaluations(config), int(config.eval_every)
    ckpt = Checkpointer(checkpoint_dir, process=checkpoint_process)
    unpadded = lambda tree: jax.tree.map(lambda x: np.asarray(x)[:n], tree)
    like = checkpoint_tree(unpadded(states), empty_history(shapes, num_evals, n))
    history, clock = like["history"], like["clock"]  # the clock sums over every segment

    def save(step, snapshot):
        ckpt.save(step, checkpoint_tree(unpadded(snapshot), history, clock))

    shorter = [  # the layouts of the smaller budgets this run had before being extended
        checkpoint_tree(like["states"], empty_history(shapes, steps // every + 1, n))
        for steps in sorted(set(extend_from), reverse=True)
        if steps // every + 1 < num_evals
    ]
    resumed, saved, which = ckpt.restore_latest_of([like, *shorter], say=say)
    if resumed is not None:
        states = jax.tree.map(lambda x: np.asarray(x)[pad], saved["states"])
        history = {k: np.asarray(v) for k, v in saved["history"].items()}
        if which > 0:  # a checkpoint of the smaller budget: pad its history, go on from it
            history = extended_history(history, like["history"])
        clock = np.asarray(saved["clock"], np.float64).copy()
        say(f"resumed from the checkpoint at step {resumed} in {checkpoint_dir}.")
    done = int(np.sum(history["step"] >= 0))
    parts = pop.split(states)
    del states
    if done < num_evals:  # a finished run only reports
        options = compiler_options(config, pop.devices[0].platform)
        evaluate_c = pop.compile(eval_fn, parts, *e_args, options=options)
        train_c = pop.compile(train_fn, parts, *t_args, options=options)
    compile_s = time.perf_counter() - t0
    clock[0] += compile_s
    if stop.signum is not None:
        raise Interrupted(stop.signum, resumed)

    chunk = default_chunk(config)
    bar = progress_bar(int(config.num_steps), done * every, progress, desc)
    t_loop, trained = time.perf_counter(), 0
    # the step from which no run is trained (module doc); a resumed run finds it in its history
    stopped_at = all_diverged_since(history, done, every) if trainer.frozen_when_diverged else None
    repeated = None  # the metrics every later evaluation gives, once found
    may_repeat = None  # whether they may be repeated (module doc), asked once training stopped
    for e in range(done, num_evals):
        if repeated is None:
            if stopped_at is not None and may_repeat is None:
                first = lambda tree: jax.tree.map(lambda x: np.asarray(x)[0], tree)
                one = lambda a: first(a.value) if isinstance(a, PerRun) else a  # one seed's
                may_repeat = not evaluation_reads_step(evaluate, first(parts[0]), *map(one, eval_args))  # fmt: skip
            given = parts if may_repeat else None
            outs = pop.run(evaluate_c, parts, *e_args)
            parts = [o[0] for o in outs]
            metrics = metrics_dict(pop.gather([o[1] for o in outs]))
            if given is not None and all(map(same_bits, given, parts)):
                repeated = metrics
                say(f"the frozen states' evaluation at step {e * every} returned the state it was "
                    "given: recording it for every later evaluation.")  # fmt: skip
        history["step"][e] = e * every
        for name, value in metrics.items():
            history[name][e] = value[:n]
        if on_evaluation is not None:
            on_evaluation(history, e)
        if e == num_evals - 1:
            break
        if stopped_at is None:
            outs = pop.run(train_c, parts, *t_args)
            parts = [o[0] for o in outs]
            with warnings.catch_warnings():  # all-NaN rows: diverged runs
                warnings.simplefilter("ignore", RuntimeWarning)
                losses = np.nanmean(pop.gather([o[1] for o in outs])[:n], axis=1)
            history["train_loss"][e + 1] = losses
            trained += every
            if trainer.frozen_when_diverged and np.all(np.isnan(losses)):
                stopped_at = (e + 1) * every
                say(f"every run has diverged by step {stopped_at}: not training the rest, "
                    "only evaluating the frozen states.")  # fmt: skip
        else:  # what ``train`` does to a diverged run's state (module doc); its losses: NaN
            parts = [advance_steps(p, every) for p in parts]
            history["train_loss"][e + 1] = np.nan
        if bar is not None:
            extra = postfix(history, e + 1) if postfix is not None else {}
            diverged = int(np.sum(np.isnan(history["train_loss"][e + 1])))  # NaN: diverged
            bar.set_postfix(**extra, diverged=diverged)
            bar.update(every)
        boundary = (e + 1) % chunk == 0 or stop.signum is not None
        if boundary and e + 1 < num_evals - 1:  # the last one is saved below
            snapshot = pop.gather(parts)
            clock[1:] += (time.perf_counter() - t_loop, trained)
            t_loop, trained = time.perf_counter(), 0
            save((e + 1) * every, snapshot)
            if on_checkpoint is not None:
                on_checkpoint(history, e + 1, snapshot.diverged_at[:n])
            if stop.signum is not None:
                if bar is not None:
                    bar.close()
                ckpt.close()
                raise Interrupted(stop.signum, (e + 1) * every)
    clock[1:] += (time.perf_counter() - t_loop, trained)
    if bar is not None:
        bar.close()
    final = pop.gather(parts)
    if done < num_evals:
        save(int(config.num_steps), final)
    ckpt.close()
    return PopulationResult(
        history, final.diverged[:n], final.diverged_at[:n], float(clock[0]), float(clock[1]),
        int(clock[2]), resumed, stopped_at,
    )  # fmt: skip


def evaluation_reads_step(evaluate, state, *args) -> bool:
    """Whether one seed's ``evaluate(state, *args)`` (metrics, and the state it returns but for
    its step) may depend on ``state.step``: traced with the step as its own input, False only
    when no operation takes that input (a call that receives it counts as reading it)."""

    def probe(step, rest):
        out, metrics = evaluate(rest.replace(step=step), *args)
        return out.replace(step=jnp.zeros_like(step)), metrics

    jaxpr = jax.make_jaxpr(probe)(state.step, state).jaxpr
    step = jaxpr.invars[0]
    used = [v for eqn in jaxpr.eqns for v in eqn.invars] + list(jaxpr.outvars)
    return any(v is step for v in used)


def same_bits(a, b) -> bool:
    """Whether two pytrees hold the same arrays, bit for bit (NaNs included)."""
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    if jax.tree.structure(a) != jax.tree.structure(b):
        return False
    pairs = [(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb, strict=True)]
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
               for x, y in pairs)  # fmt: skip


def all_diverged_since(history: dict, done: int, every: int) -> int | None:
    """The step after the first period (of the ``done`` evaluations recorded) whose training
    losses were NaN for every run — every run had diverged by then — or None."""
    rows = np.flatnonzero(np.all(np.isnan(history["train_loss"][1:done]), axis=1))
    return None if rows.size == 0 else int(rows[0] + 1) * every


@functools.partial(jax.jit, static_argnums=1)
def advance_steps(state, count: int):
    """``state`` with its step ``count`` further on, the rest the same arrays' values."""
    return state.replace(step=state.step + count)
