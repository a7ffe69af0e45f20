"""The PyTorch reference's machine throughput on the arithmetic task, and our ratio to it
(a benchmark, not a test and not part of CI).

    # once: a Python with CPU torch (installs offline here), and the references' checkouts
    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.13.0 numpy scipy pandas tqdm tensorboardX
    python -m benchmarks.throughput --models all --seeds 100 --steps 10000 > ours.jsonl
    python -m benchmarks.reference_throughput --python /tmp/torchenv/bin/python \\
        --stable-nalu /path/to/stable-nalu --nalm-benchmark /path/to/nalm-benchmark \\
        --ours ours.jsonl

Times ``experiments/simple_function_static.py`` of ``AndreasMadsen/stable-nalu`` — the
reference's own training script, unmodified — for every model of ``nalu_jax.models.MODELS``
that it has, with the flags of its ``lfs_batch_jobs/function_task_static.sh``. The models that
only ``bmistry4/nalm-benchmark`` has (NPU, RealNPU, iNALU) run the same script with that
repository's ``stable_nalu`` package on ``PYTHONPATH`` (and the four layer options it lacks
given their nalm-benchmark defaults, ``NALM_SHIM``); models neither has are listed without a
reference. Each timing is taken the same way: ``--processes`` copies of the script run at
once (one per core, one torch thread each, as the reference's cluster jobs ran), first for
``--warm`` iterations and then for ``--warm + --iterations``; a process's rate is
``iterations / (t(warm + iterations) − t(warm))`` (start-up, data set-up and the first
iterations cancel), and the machine throughput is the sum over the processes. Evaluation every
1,000 iterations on the two 10,000-sample sets and the TensorBoard logging are included, as in
ours. The script's imports of ``torchvision`` and ``tensorflow`` (unused on this path) are
satisfied by empty packages written to a temporary directory.

Prints one JSON line per model and, with ``--ours`` (the JSON lines of
``python -m benchmarks.throughput --models``), a table of both throughputs, their ratio and the
project's target (≥ 100× for models the reference has; within 1.5× of our NMU for the rest).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

from benchmarks import refuse_non_positive

# nalu_jax model -> (repository, simple_function_static.py flags); the flags of
# stable-nalu's lfs_batch_jobs/function_task_static.sh.
REFERENCE = {
    "nmu": ("stable-nalu", ["--layer-type", "ReRegualizedLinearNAC", "--nac-mul", "mnac"]),
    "nau": (
        "stable-nalu",
        ["--layer-type", "ReRegualizedLinearNAC", "--regualizer", "0.01",
         "--regualizer-scaling-start", "5000", "--regualizer-scaling-end", "50000"],
    ),
    "nac_mul": ("stable-nalu", ["--layer-type", "NAC", "--nac-mul", "normal"]),
    "nac_mul_sigma": (
        "stable-nalu", ["--layer-type", "PosNAC", "--nac-mul", "normal", "--first-layer", "NAC"]
    ),
    "nac_mul_nmu": (
        "stable-nalu",
        ["--layer-type", "ReRegualizedLinearPosNAC", "--nac-mul", "normal",
         "--first-layer", "ReRegualizedLinearNAC"],
    ),
    "gated_nau_nmu": (
        "stable-nalu",
        ["--layer-type", "ReRegualizedLinearNALU", "--nalu-two-nac", "--nalu-mul", "mnac"],
    ),
    "nac_add": ("stable-nalu", ["--layer-type", "NAC"]),
    "nalu": ("stable-nalu", ["--layer-type", "NALU"]),
    "linear": ("stable-nalu", ["--layer-type", "linear"]),
    "relu": ("stable-nalu", ["--layer-type", "ReLU"]),
    "relu6": ("stable-nalu", ["--layer-type", "ReLU6"]),
    "tanh": ("stable-nalu", ["--layer-type", "Tanh"]),
    "sigmoid": ("stable-nalu", ["--layer-type", "Sigmoid"]),
    "softsign": ("stable-nalu", ["--layer-type", "Softsign"]),
    "elu": ("stable-nalu", ["--layer-type", "ELU"]),
    "selu": ("stable-nalu", ["--layer-type", "SELU"]),
    # nalm-benchmark's layers, under the same script; an NAU first layer as in our models
    "npu": ("nalm-benchmark", ["--layer-type", "NPU", "--first-layer", "ReRegualizedLinearNAC"]),
    "real_npu": (
        "nalm-benchmark", ["--layer-type", "RealNPU", "--first-layer", "ReRegualizedLinearNAC"]
    ),
    "inalu": (
        "nalm-benchmark", ["--layer-type", "iNALU", "--first-layer", "ReRegualizedLinearNAC"]
    ),
}  # fmt: skip

DRIVER = "experiments/simple_function_static.py"  # stable-nalu's

# nalm-benchmark's layers read four options that stable-nalu's driver does not pass; the
# driver runs unmodified under runpy after these defaults (those of nalm-benchmark's own
# experiments/single_layer_benchmark.py) are given to every GeneralizedLayer.
NALM_SHIM = """
import runpy, sys, stable_nalu.layer.generalized as g
_init = g.GeneralizedLayer.__init__
def _with_defaults(self, *a, **k):
    for name, value in (("npu_Wr_init", "xavier-uniform"), ("realnpu_reg_type", "W"),
                        ("regualizer_gate", 0), ("regualizer_npu_w", 0)):
        k.setdefault(name, value)
    _init(self, *a, **k)
g.GeneralizedLayer.__init__ = _with_defaults
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _stubs(tmp: str) -> str:
    for name in ("torchvision", "tensorflow"):
        os.makedirs(os.path.join(tmp, "stubs", name), exist_ok=True)
        open(os.path.join(tmp, "stubs", name, "__init__.py"), "w").close()
    return os.path.join(tmp, "stubs")


def _wall(cmds: list[list[str]], env: dict, cwd: str) -> list[float]:
    """Start every command at once; each one's wall time (s). Raises on a failure."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen(c, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for c in cmds
    ]
    walls = [0.0] * len(procs)
    pending = set(range(len(procs)))
    outputs = [None] * len(procs)
    while pending:
        for i in list(pending):
            if procs[i].poll() is not None:
                walls[i] = time.perf_counter() - start
                outputs[i] = procs[i].communicate()
                pending.discard(i)
        time.sleep(0.01)
    for p, (out, err) in zip(procs, outputs, strict=True):
        # The script's last act, torch.save of the whole model, fails under torch ≥ 2 (the
        # model holds a multiprocessing queue); training and evaluation have finished by then
        # ("finished:" is printed), and the failed save costs the same in every run.
        finished = b"finished:" in out and b"save_model" in err
        if p.returncode and not finished:
            raise RuntimeError(err.decode()[-2000:])
    return walls


def time_model(model: str, args, tmp: str) -> dict:
    repo, flags = REFERENCE[model]
    package = args.stable_nalu if repo == "stable-nalu" else args.nalm_benchmark
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([package, _stubs(tmp)]),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        LSB_DJOB_NUMPROC="1",  # the script's own thread setting (torch.set_num_threads)
        TENSORBOARD_DIR=os.path.join(tmp, "tensorboard"),
    )
    script = os.path.join(args.stable_nalu, DRIVER)

    launcher = [args.python] if repo == "stable-nalu" else [args.python, "-c", NALM_SHIM]

    def cmds(iterations):
        return [
            [*launcher, script, *flags, "--seed", str(p),
             "--max-iterations", str(iterations), "--no-cuda", "--operation", args.operation,
             "--name-prefix", f"p{p}", "--remove-existing-data"]
            for p in range(args.processes)
        ]  # fmt: skip

    try:
        short = _wall(cmds(args.warm), env, package)
        long = _wall(cmds(args.warm + args.iterations), env, package)
    except RuntimeError as e:  # the reference itself failed (e.g. its "nan detected")
        last = [ln for ln in str(e).splitlines() if ln.strip()][-1:]
        return {"model": model, "repository": repo, "flags": " ".join(flags),
                "error": last[0] if last else "failed"}  # fmt: skip
    rates = [args.iterations / max(b - a, 1e-9) for a, b in zip(short, long, strict=True)]
    return {
        "model": model,
        "repository": repo,
        "flags": " ".join(flags),
        "processes": args.processes,
        "per_process_steps_per_s": [round(r, 1) for r in rates],
        "machine_steps_per_s": round(sum(rates), 1),
    }


def ratio_table(ours: dict, refs: dict) -> str:
    """Markdown: ours (100 seeds), reference machine throughput, ratio, target, met."""
    nmu = ours.get("nmu", {}).get("seed_steps_per_s")
    lines = [
        "| model | nalu_jax seed-steps/s | reference steps/s (machine) | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for model, rec in ours.items():
        mine = rec["seed_steps_per_s"]
        ref = refs.get(model)
        if ref is not None and "error" in ref:
            cells, target, met = [f"reference fails: {ref['error']}", "—"], "—", None
        elif ref is not None and ref["repository"] == "stable-nalu":
            ratio = mine / ref["machine_steps_per_s"]
            target, met = "≥ 100×", ratio >= 100
            cells = [f"{ref['machine_steps_per_s']:,.0f}", f"{ratio:,.0f}×"]
        else:
            cells = [
                f"{ref['machine_steps_per_s']:,.0f} (nalm-benchmark)" if ref else "—",
                f"{mine / ref['machine_steps_per_s']:,.0f}×" if ref else "—",
            ]
            target = "≥ NMU / 1.5"
            met = nmu is not None and mine >= nmu / 1.5
        lines.append(
            f"| {model} | {mine:,.0f} | {cells[0]} | {cells[1]} | {target} | "
            f"{'—' if met is None else 'yes' if met else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", required=True, help="a Python with CPU torch")
    parser.add_argument(
        "--stable-nalu", required=True, help="checkout of AndreasMadsen/stable-nalu"
    )
    parser.add_argument("--nalm-benchmark", help="checkout of bmistry4/nalm-benchmark")
    parser.add_argument("--models", default="all", help="comma list or 'all' (those it has)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--warm", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--previous", action="append", help="earlier JSON lines to merge")
    parser.add_argument("--operation", default="mul", help="the task's op (ours: mul)")
    parser.add_argument("--ours", help="JSON lines of benchmarks/throughput.py --models")
    args = parser.parse_args()
    refuse_non_positive(args, ("processes", "iterations"))
    # every path and name before the first reference process starts (status 2, argparse's)
    if shutil.which(args.python) is None:
        parser.error(f"--python: {args.python} is not an executable Python.")
    if not os.path.isfile(os.path.join(args.stable_nalu, DRIVER)):
        parser.error(f"--stable-nalu: {args.stable_nalu} has no {DRIVER}.")
    if args.nalm_benchmark is not None and not os.path.isdir(args.nalm_benchmark):
        parser.error(f"--nalm-benchmark: {args.nalm_benchmark} is not a directory.")
    for flag, path in [("--previous", p) for p in args.previous or []] + [("--ours", args.ours)]:
        if path is not None and not os.path.isfile(path):
            parser.error(f"{flag}: {path} is not a file.")
    models = list(REFERENCE) if args.models == "all" else args.models.split(",")
    unknown = [m for m in models if m not in REFERENCE]
    if unknown:
        parser.error(f"--models: no reference for {unknown}; choose from {list(REFERENCE)}.")
    if args.nalm_benchmark is None:
        models = [m for m in models if REFERENCE[m][0] == "stable-nalu"]
    refs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            refs[model] = time_model(model, args, tmp)
            print(json.dumps(refs[model]), flush=True)
    for path in args.previous or []:  # earlier output of this script, for one table
        with open(path) as f:
            for line in f:
                if line.startswith("{"):
                    rec = json.loads(line)
                    refs.setdefault(rec["model"], rec)
    if args.ours:
        with open(args.ours) as f:
            ours = {}
            for line in f:
                if line.startswith("{"):
                    rec = json.loads(line)
                    ours[rec.get("model", "nmu")] = rec
        print(ratio_table(ours, refs))


if __name__ == "__main__":
    main()
