"""The single-module benchmark (docs/protocols.md, "Single-module benchmark"): one unit, 2 inputs (or 10/100 with redundancy).

    python -m nalu_jax.main --config=configs/single_module.py:op=mul,model=nmu,range=7 --workdir=runs/sm

Variants (comma-separated in the config string):
  op=OP        add, sub, mul, div
  model=UNIT   a unit of ``nalu_jax.units.UNITS`` (nac_mul, nalu, nmu, npu, real_npu, inalu, …)
  range=K      the range pair 1–9 (docs/protocols.md, "Single-module benchmark"; 7: U[1,2) → U[2,6))
  size=N       input size 2, 10 or 100 (redundant inputs)
  seeds=N      number of seeds (default 25)
  steps=N      iteration budget (default 50,000)
  smoke        a tiny run (4 seeds, 2,000 steps) for tests and CI

Seeds run in blocks of 13 (25 seeds fill one block per core on 2 cores).
NAU/NMU use the regulariser ramp 20,000 → 35,000 with λ̂ from
the unit's registration (``nalu_jax.units.SINGLE_UNIT_REG_SCALE``: 0.01 for NAU, 10 for NMU) while
``train.reg_scale`` is None; NPU/RealNPU train with lr 5e-3 while ``train.lr`` is None.
"""

from nalu_jax.config import arithmetic_config, parse_config_arg, smoke


def get_config(arg=None):
    v = parse_config_arg(
        arg,
        {"op": "mul", "model": "nmu", "range": 7, "size": 2, "seeds": 25, "steps": 50_000},
    )
    c = arithmetic_config()
    c.task.kind = "single_module"
    c.task.op = v["op"]
    c.task.input_size = v["size"]
    c.task.range_index = v["range"]
    c.task.interpolation_range = None
    c.task.extrapolation_range = None
    c.model.name = v["model"]
    c.model.single_unit = True
    c.num_seeds = v["seeds"]
    # 25 seeds on 2 cores: one block of 13 per core (26 runs), not two blocks of 10 (40 runs);
    # the arithmetic units' per-seed bits are the same at either width (tools/check_identity.py).
    c.cpu_seed_block = 13
    c.num_steps = v["steps"]
    # XLA's own CPU kernels rather than YNNPACK's for this task's tiny reductions: 1.1-2.8x the
    # seed-steps/s of every unit (WORKSPACE at bcf7708, "Performance: the single-module step");
    # the same seeds solve either way (tests/test_compiler_options.py).
    c.cpu_ynn_fusions = False
    c.train.reg_start = 20_000.0
    c.train.reg_end = 35_000.0
    if v["smoke"]:
        smoke(c)
    return c
