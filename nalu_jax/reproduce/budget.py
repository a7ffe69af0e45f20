"""A table's (or figure's) cost before it runs: total seed-steps, and the wall time one GPU would
take at the throughput measured for this library.

GPU rates: one NVIDIA H100 80GB HBM3, commit d450a3c, 2026-11-26, jax 0.11.2, HIGHEST matmul
precision, the arithmetic task (× NMU, 100 inputs), one program alone on the GPU, seed-steps/s
by the number of runs in the program (``tools/accelerator_check.throughput``: the training
program alone, 1,000 steps per call after a first that compiles, no evaluation): 1.97·10⁶ at
100 runs, 4.76·10⁶ at 350, 7.20·10⁶ at 1,000, 8.93·10⁶ at 10,000. Between the measured sizes
the rate is interpolated in log(runs); above 10,000 runs it is held, and below 100 the time of
a step is (51 µs: a small program is bound by the latency of its kernels, not by its runs), so
20 runs × 5·10⁶ steps take ≥ 4 min. The NALU family (NALU, gated units) runs at 3.6/8.6 of
the NMU's rate (its ratio at 10,000 runs, commit e7ba609, 2026-11-25) at every size.

A cell runs through the run loop (evaluations every 1,000 steps, checkpoints), at
``GPU_LOOP_FACTOR`` of its program's rate: on one NVIDIA H200 at commit d5a491c (2026-11-26,
jax 0.11.2; ``benchmarks/loop_breakdown``), 175 runs of the interpolation-range figure's × NMU
task (one block) × 20,000 steps ran at 2.68·10⁶ seed-steps/s through the loop, its training
calls at 3.09·10⁶ and the program alone at 3.10·10⁶ (evaluations 0.03 s, checkpoints 0.09 s
of the loop's 1.3 s); the same 175 runs as the figure's 7-range sweep ran at 2.69·10⁶
(evaluated every 1,000 steps) and 3.03·10⁶ (at both ends only), the plain task at 2.36·10⁶
in a separate measurement. Before that commit a sweep over range pairs resolved its block for its
seeds alone (25), so 175 runs trained as 7 blocks of 25 at ~9.6·10⁵. Two cells of 40 runs
(hidden size 10, 5·10⁶ steps) sharing that H200 ran at 4.9·10⁵ and 5.2·10⁵ seed-steps/s,
6.9 and 6.6 min. A whole cell checks the estimate: the range figure's × NMU seeds 10–49 (280
runs, one block, 5·10⁶ steps; an H200, commit 3f40289, 2026-12-04) ran at 3.60·10⁶, 392 s,
where these rates said 6.3 min (3.7·10⁶); at commit 799822c the same figure's × NAC• seeds
10–49 (280 runs) at 4.37·10⁶, 324 s, where they said 6.4 min (NAC• is cheaper than the NMU they
are measured on), and × NAC•,σ seeds 10–29 (140 runs) at 3.04·10⁶, 234 s, where they said 4.6.
"""

from __future__ import annotations

import math

#: (runs in the program, NMU seed-steps/s) on one H100 80GB (see the module docstring)
GPU_NMU_RATES = ((100, 1.97e6), (350, 4.76e6), (1_000, 7.20e6), (10_000, 8.93e6))
GPU_NALU_FACTOR = 3.6e6 / 8.6e6
#: a cell's rate through the run loop as a fraction of its program's (the module docstring)
GPU_LOOP_FACTOR = 0.87
GPU_NAME = "one H100 80GB (rates measured at d450a3c, loop at d5a491c, 2026-11-26)"
_NALU_FAMILY = ("nalu", "gated_nau_nmu")


def program_rate(runs: int, model: str) -> float:
    """Seed-steps/s of the training program alone of ``runs`` runs of ``model`` on one H100."""
    xs = [math.log(r) for r, _ in GPU_NMU_RATES]
    ys = [v for _, v in GPU_NMU_RATES]
    if runs < GPU_NMU_RATES[0][0]:  # the step time of the smallest measured program, held
        rate = ys[0] * max(runs, 1) / GPU_NMU_RATES[0][0]
    else:
        x = min(math.log(runs), xs[-1])
        i = max(j for j in range(len(xs) - 1) if xs[j] <= x) if x < xs[-1] else len(xs) - 2
        rate = ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])
    return rate * (GPU_NALU_FACTOR if model in _NALU_FAMILY else 1.0)


def gpu_rate(runs: int, model: str) -> float:
    """Estimated seed-steps/s of a cell of ``runs`` runs (seeds × sweep settings) of ``model``
    on one H100, through the run loop: ``GPU_LOOP_FACTOR`` of the program's rate."""
    return GPU_LOOP_FACTOR * program_rate(runs, model)


def plan(cells, cfgs: dict, cpu_estimates: dict | None = None, *, gpu: bool = True) -> list[str]:
    """Lines to print before a run: per cell and in total, seed-steps (runs × steps, runs =
    seeds × sweep settings) and the estimated GPU time; the CPU estimate where
    ``cpu_estimates`` (``{cell.key: seconds}``, from a calibration run) has the cell. ``gpu``:
    whether the measured rates apply (the library's arithmetic tasks; not another experiment,
    whose GPU time is not estimated)."""
    from nalu_jax.reproduce.cells import duration, num_runs

    total, gpu_s, cpu_s, lines = 0, 0.0, 0.0, []
    for c in cells:
        cfg = cfgs[c.key]
        runs, steps = num_runs(cfg), int(cfg.num_steps)
        seconds = runs * steps / gpu_rate(runs, c.variant.model)
        total, gpu_s = total + runs * steps, gpu_s + seconds
        cpu = (cpu_estimates or {}).get(c.key)
        cpu_s += cpu or 0.0
        costs = ([f"GPU ≈ {duration(seconds)}"] if gpu else []) + (
            [f"this CPU ≈ {duration(cpu)}"] if cpu else [])  # fmt: skip
        lines.append(f"  {c.key}: {runs} runs × {steps:,} steps = {runs * steps:.3g} seed-steps"
                     + "".join(f"; {x}" if i == 0 else f", {x}" for i, x in enumerate(costs)))  # fmt: skip
    cpu_text = f"this CPU ≈ {duration(cpu_s)}" if cpu_estimates else "this CPU: not calibrated"
    gpu_text = f"{GPU_NAME} ≈ {duration(gpu_s)}" if gpu else "GPU: not estimated for this task"
    lines.append(f"total {total:.3g} seed-steps; {cpu_text}; {gpu_text}")
    return lines
