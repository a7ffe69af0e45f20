"""The run loop every experiment shares: ``run(experiment, config, workdir)``.

``run`` validates the config, expands ``config.sweep`` into settings, asks the experiment for
its population (one compiled program; per-setting hyperparameters and judging facts), claims
the workdir, takes this process's slice of the (setting, seed) runs (all of them unless
multi-host, ``nalu_jax.distributed``) and trains it with ``run_population``; process 0 merges
the parts and the experiment judges and writes its files.

``run_population`` is the loop itself: it pads the runs to whole blocks on every local device
(``nalu_jax.population``), compiles once per device, and loops in Python over evaluation
periods: ``evaluate`` (before that step's update) then ``train`` (``eval_every`` updates in a
``lax.scan``). Between periods it records every metric per run, updates the progress bar and,
every ``checkpoint_every`` steps, saves all states and the history with orbax. Re-running with
the same checkpoint directory resumes.

An experiment is a module (``nalu_jax.experiments``) with ``validate(config)``,
``SWEEPABLE`` (the sweep names it accepts), ``population(config, settings) -> Population``,
``write_results(workdir, config, outcome) -> summary`` and ``format_summary(summary) -> str``; and
optionally ``programs(config)`` (several compiled programs, e.g. one per activation) and
``prepare(config, workdir, population, progress)`` (work before training, e.g. a reference
population that sets thresholds).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from nalu_jax import distributed, sweep
from nalu_jax.checkpoint import Checkpointer
from nalu_jax.config import ConfigError
from nalu_jax.population import DevicePopulation, blocked, padded_size
from nalu_jax.report import atomic_write, dumps
from nalu_jax.train import Trainer, default_chunk, num_evaluations, seed_keys
from nalu_jax.workdir import prepare_workdir


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


@dataclasses.dataclass
class Population:
    """What an experiment's ``population`` returns: the program every run shares, and per
    sweep setting its ``HParams`` and whatever the experiment needs to judge (``contexts``)."""

    trainer: Trainer
    hparams: list
    contexts: list  # one dict per setting (e.g. its task and success threshold)
    solved: Any = None  # run_setting [n] -> ((history, num_done) -> bool [n]), or None
    metrics_jsonl: Any = None  # (history, num_done, diverged_at) -> str, or None

    def setting(self, h: int) -> Population:
        """The population of setting ``h`` alone (for its report)."""
        return dataclasses.replace(self, hparams=[self.hparams[h]], contexts=[self.contexts[h]])


@dataclasses.dataclass
class Outcome:
    """Everything ``write_results`` gets (one sweep setting): per program label, its population
    and merged results; ``settings[0]`` is the setting, with its resolved config."""

    settings: list
    run_setting: np.ndarray  # [R] setting index of each run (setting-major)
    run_seed: np.ndarray  # [R] seed number of each run
    populations: dict  # label -> Population
    results: dict  # label -> merged results (history, diverged, diverged_at, timing)


def progress_bar(total: int, initial: int, enabled: bool, desc: str | None = None):
    """A tqdm bar on stderr (steps, elapsed, ETA; postfix set by the caller), or None."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total, initial=initial, unit="step", dynamic_ncols=True, mininterval=1.0, desc=desc
    )


def _metrics_dict(metrics) -> dict:
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
    """
    with _StopRequest() as stop:
        return _run_population(
            trainer, keys, hparams, config, checkpoint_dir, stop, checkpoint_process, progress,
            desc, postfix, on_checkpoint, on_evaluation,
        )  # fmt: skip


def _run_population(trainer, keys, hparams, config, checkpoint_dir, stop, checkpoint_process,
                    progress, desc, postfix, on_checkpoint, on_evaluation):  # fmt: skip
    init, train, evaluate = trainer.init, trainer.train, trainer.evaluate
    train_args = (hparams, trainer.train_data)
    eval_args = (hparams, trainer.eval_data)
    n, block, pop = len(keys), int(config.seed_block), DevicePopulation()
    pad = np.minimum(np.arange(padded_size(n, block * len(pop.devices))), n - 1)

    def padded(a):
        return jax.tree.map(lambda x: np.asarray(x)[pad], a.value) if isinstance(a, PerRun) else a

    def per_device(args) -> list:
        """Per argument, one value per device (PerRun split, the rest replicated)."""
        return [pop.split(padded(a)) if isinstance(a, PerRun) else pop.replicate(a) for a in args]

    t0 = time.perf_counter()
    states = jax.jit(jax.vmap(init))(keys[pad])
    t_args, e_args = per_device(train_args), per_device(eval_args)
    axes = lambda args: (0, *(0 if isinstance(a, PerRun) else None for a in args))
    eval_fn = jax.jit(blocked(evaluate, block, axes(eval_args)))
    train_fn = jax.jit(blocked(train, block, axes(train_args)), donate_argnums=0)
    probe = jax.eval_shape(eval_fn, states, *(padded(a) for a in eval_args))
    shapes = _metrics_dict(probe[1])

    num_evals, every = num_evaluations(config), int(config.eval_every)
    history = {
        k: np.full((num_evals, n) + v.shape[1:], np.nan, np.float32) for k, v in shapes.items()
    }
    history["train_loss"] = np.full((num_evals, n), np.nan, np.float32)
    history["step"] = np.full((num_evals,), -1, np.int64)
    clock = np.zeros(3, np.float64)  # compile s, loop s, steps trained: over every segment
    ckpt = Checkpointer(checkpoint_dir, process=checkpoint_process)
    unpadded = lambda tree: jax.tree.map(lambda x: np.asarray(x)[:n], tree)

    def save(step, snapshot):
        ckpt.save(step, {"states": unpadded(snapshot), "history": history, "clock": clock})

    like = {"states": unpadded(states), "history": history, "clock": clock}
    resumed, saved = ckpt.restore_latest(like, say=say)
    if resumed is not None:
        states = jax.tree.map(lambda x: np.asarray(x)[pad], saved["states"])
        history = {k: np.asarray(v) for k, v in saved["history"].items()}
        clock = np.asarray(saved["clock"], np.float64).copy()
        say(f"resumed from the checkpoint at step {resumed} in {checkpoint_dir}.")
    done = int(np.sum(history["step"] >= 0))
    parts = pop.split(states)
    del states
    if done < num_evals:  # a finished run only reports
        evaluate_c = pop.compile(eval_fn, parts, *e_args)
        train_c = pop.compile(train_fn, parts, *t_args)
    compile_s = time.perf_counter() - t0
    clock[0] += compile_s
    if stop.signum is not None:
        raise Interrupted(stop.signum, resumed)

    chunk = default_chunk(config)
    bar = progress_bar(int(config.num_steps), done * every, progress, desc)
    t_loop, trained = time.perf_counter(), 0
    for e in range(done, num_evals):
        outs = pop.run(evaluate_c, parts, *e_args)
        parts = [o[0] for o in outs]
        metrics = _metrics_dict(pop.gather([o[1] for o in outs]))
        history["step"][e] = e * every
        for name, value in metrics.items():
            history[name][e] = value[:n]
        if on_evaluation is not None:
            on_evaluation(history, e)
        if e == num_evals - 1:
            break
        outs = pop.run(train_c, parts, *t_args)
        parts = [o[0] for o in outs]
        with warnings.catch_warnings():  # all-NaN rows: diverged runs
            warnings.simplefilter("ignore", RuntimeWarning)
            history["train_loss"][e + 1] = np.nanmean(pop.gather([o[1] for o in outs])[:n], axis=1)
        trained += every
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
        int(clock[2]), resumed,
    )  # fmt: skip


def events_writer(workdir, label, config, proc, settings, run_setting, solved):
    """TensorBoard events of this program in ``workdir/tensorboard[/label][/process_p]``, or
    None when ``config.tensorboard`` is off."""
    if not config.get("tensorboard", True):
        return None
    from nalu_jax.events import EventWriter

    logdir = _label_dir(workdir, "tensorboard", label)
    if proc.count > 1:
        logdir = os.path.join(logdir, f"process_{proc.index}")
    names = [s.name for s in settings] if len(settings) > 1 else [""]
    return EventWriter(logdir, names, run_setting, int(config.eval_every), solved)


def _nbytes(tree) -> int:
    return int(
        sum(np.prod(x.shape, dtype=np.int64) * x.dtype.itemsize for x in jax.tree.leaves(tree))
    )


def memory_estimate(pop: Population, runs: int, config) -> int:
    """Bytes a population of ``runs`` needs on this host: each run's state about four times
    (on the devices, the checkpoint snapshot, its unpadded copy and orbax's buffer), the
    evaluation history, and the shared data."""
    trainer = pop.trainer
    state = jax.eval_shape(trainer.init, jax.random.key(0))
    metrics = jax.eval_shape(trainer.evaluate, state, pop.hparams[0], trainer.eval_data)[1]
    per_eval = _nbytes(_metrics_dict(metrics)) + 4  # + the training loss
    padded = padded_size(runs, int(config.seed_block) * len(jax.local_devices()))
    shared = _nbytes(trainer.train_data) + _nbytes(trainer.eval_data)
    return 4 * padded * _nbytes(state) + runs * num_evaluations(config) * per_eval + shared


def available_memory() -> int:
    """Bytes this host can still give (``MemAvailable``), or the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(pop: Population, runs: int, config) -> None:
    """Refuse, in one sentence, a population that cannot fit in this host's memory."""
    need, have = memory_estimate(pop, runs, config), available_memory()
    if need > 0.9 * have:
        raise ConfigError(
            f"num_seeds={config.num_seeds} needs about {need / 2**30:.1f} GiB on this host "
            f"({runs} runs), more than the {have / 2**30:.1f} GiB available; use fewer seeds "
            "per process or more processes (--num_processes)."
        )


def _label_dir(workdir: str, name: str, label: str) -> str:
    return os.path.join(workdir, name) if not label else os.path.join(workdir, name, label)


def run(experiment, config, workdir: str, *, overwrite: bool = False, progress: bool = True):
    """Train every seed (of every sweep setting and program), judge, write the workdir.

    Returns the experiment's summary dict, or ``None`` in a non-zero process of a multi-host
    run (process 0 writes the results).
    """
    experiment.validate(config)
    settings = sweep.expand(config, experiment.SWEEPABLE)
    programs = experiment.programs(config) if hasattr(experiment, "programs") else [("", config)]
    populations = {label: experiment.population(cfg, settings) for label, cfg in programs}
    proc = distributed.process_info()
    runs = len(settings) * int(config.num_seeds)
    share = distributed.process_slice(runs, proc)
    for pop in populations.values():  # before the workdir is claimed
        check_memory(pop, share.stop - share.start, config)
    prepare_workdir(workdir, config, overwrite, proc)
    if hasattr(experiment, "prepare"):
        for pop in populations.values():
            experiment.prepare(config, workdir, pop, progress)

    seeds = np.arange(config.first_seed, config.first_seed + config.num_seeds)
    run_setting = np.repeat(np.arange(len(settings)), len(seeds))  # setting-major
    run_seed = np.tile(seeds, len(settings))
    mine = distributed.process_slice(len(run_seed), proc)
    single = len(settings) == 1 and proc.count == 1 and len(programs) == 1
    results = {}
    for label, _ in programs:
        pop = populations[label]
        solved = pop.solved(run_setting[mine]) if pop.solved else None
        postfix = (lambda h, done: {"solved": int(solved(h, done).sum())}) if solved else None
        events = events_writer(workdir, label, config, proc, settings, run_setting[mine], solved)
        on_checkpoint = None
        if single and pop.metrics_jsonl is not None:
            jsonl = os.path.join(workdir, "metrics.jsonl")

            def on_checkpoint(history, done, diverged_at, pop=pop, jsonl=jsonl):
                atomic_write(jsonl, pop.metrics_jsonl(history, done, diverged_at))

        run_hp = (
            pop.hparams[0]
            if len(settings) == 1
            else PerRun(sweep.stack_hparams([pop.hparams[h] for h in run_setting[mine]]))
        )
        ckpt = _label_dir(workdir, "checkpoints", label)
        result = run_population(
            pop.trainer,
            seed_keys(config.seed, run_seed[mine]),
            run_hp,
            config,
            distributed.checkpoint_dir(ckpt, proc),
            checkpoint_process=proc.index if proc.count > 1 else None,
            progress=progress,
            desc=label or None,
            postfix=postfix,
            on_checkpoint=on_checkpoint,
            on_evaluation=events.write if events else None,
        )
        if events:
            events.close()
        part = {
            "history": result.history,
            "diverged": result.diverged,
            "diverged_at": result.diverged_at,
            "runs": np.arange(mine.start, mine.stop),
            "compile_s": result.compile_s,
            "loop_s": result.loop_s,
            "seed_steps": (mine.stop - mine.start) * result.trained_steps,
            "resumed_from_step": -1
            if result.resumed_from_step is None
            else result.resumed_from_step,
        }
        parts_dir = _label_dir(workdir, "parts", label)
        results[label] = distributed.gather_parts(parts_dir, proc, part, len(run_seed))
        if results[label] is None:
            return None
    if len(settings) == 1:
        outcome = Outcome(settings, run_setting, run_seed, populations, results)
        return experiment.write_results(workdir, config, outcome)
    summaries = []  # a sweep: each setting reported alone in settings/NNN, then one table
    for h, setting in enumerate(settings):
        idx = np.flatnonzero(run_setting == h)
        outcome = Outcome(
            [setting],
            np.zeros(len(idx), int),
            run_seed[idx],
            {label: pop.setting(h) for label, pop in populations.items()},
            {label: _select(merged, idx) for label, merged in results.items()},
        )
        out = os.path.join(workdir, "settings", f"{h:03d}")
        os.makedirs(out, exist_ok=True)
        summary = experiment.write_results(out, setting.config, outcome)
        summary.update(setting=setting.name, setting_values=setting.values)
        summaries.append(summary)
    combined = {"settings": summaries}
    atomic_write(os.path.join(workdir, "summary.json"), dumps(combined) + "\n")
    atomic_write(os.path.join(workdir, "summary.md"), experiment.format_summary(combined))
    return combined


def _select(merged: dict, idx) -> dict:
    """The merged results of runs ``idx`` (history ``[E, R, ...]`` → ``[E, len(idx), ...]``)."""
    history = {k: (v if k == "step" else v[:, idx]) for k, v in merged["history"].items()}
    picked = {k: merged[k][idx] for k in ("diverged", "diverged_at", "runs")}
    return {**merged, "history": history, **picked}
