"""A table's (or figure's) cost before it runs: total seed-steps, and the wall time one GPU would
take at the throughput measured for this library.

GPU rates: one NVIDIA H100 80GB, commit e7ba609, 2026-11-25, HIGHEST matmul precision, the
arithmetic task (100 inputs), seed-steps/s by the number of runs in the program: NMU 1.67·10⁶ at
100 runs, 5.8·10⁶ at 1,000, 8.6·10⁶ at 10,000; NALU 3.6·10⁶ at 10,000. Between and beyond the
measured sizes the rate is interpolated in log(runs) and held at the ends; the NALU's ratio
to the NMU at 10,000 runs stands for the NALU family (NALU, gated units) at every size.
"""

from __future__ import annotations

import math

#: (runs in the program, NMU seed-steps/s) on one H100 80GB (see the module docstring)
GPU_NMU_RATES = ((100, 1.67e6), (1_000, 5.8e6), (10_000, 8.6e6))
GPU_NALU_FACTOR = 3.6e6 / 8.6e6
GPU_NAME = "one H100 80GB (rates measured at e7ba609, 2026-11-25)"
_NALU_FAMILY = ("nalu", "gated_nau_nmu")


def gpu_rate(runs: int, model: str) -> float:
    """Estimated seed-steps/s of a ``runs``-run program of ``model`` on one H100."""
    xs = [math.log(r) for r, _ in GPU_NMU_RATES]
    ys = [v for _, v in GPU_NMU_RATES]
    x = min(max(math.log(max(runs, 1)), xs[0]), xs[-1])
    i = max(j for j in range(len(xs) - 1) if xs[j] <= x) if x < xs[-1] else len(xs) - 2
    rate = ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])
    return rate * (GPU_NALU_FACTOR if model in _NALU_FAMILY else 1.0)


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
