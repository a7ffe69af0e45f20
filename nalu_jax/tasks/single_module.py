"""The single-module benchmark (docs/protocols.md, "Single-module benchmark"): one unit 2 → 1 on ``t = x₁ ∘ x₂``.

``n = 2, s = 0.5`` gives ``a = x₁, b = x₂``; the redundant-input variants ``n = 10, s = 0.1``
and ``n = 100, s = 0.01`` keep two relevant inputs among ``n`` (overlap 0, shifted by the
per-seed offset like every arithmetic task). The nine range pairs are numbered 1–9.

>>> task = single_module_task("mul", range_index=7)   # U[1,2) -> U[2,6)
"""

from __future__ import annotations

from nalu_jax.tasks.arithmetic import ArithmeticTask

#: (interpolation range, extrapolation range), in the order of the Primer's
#: benchmark (1-indexed there; docs/protocols.md, "Single-module benchmark").
RANGE_PAIRS = (
    ((-20.0, -10.0), (-40.0, -20.0)),
    ((-2.0, -1.0), (-6.0, -2.0)),
    ((-1.2, -1.1), (-6.1, -1.2)),
    ((-0.2, -0.1), (-2.0, -0.2)),
    ((-2.0, 2.0), ((-6.0, -2.0), (2.0, 6.0))),
    ((0.1, 0.2), (0.2, 2.0)),
    ((1.0, 2.0), (2.0, 6.0)),
    ((1.1, 1.2), (1.2, 6.0)),
    ((10.0, 20.0), (20.0, 40.0)),
)

#: input size n -> subset ratio s (one relevant input per operand; overlap 0)
INPUT_SIZES = {2: 0.5, 10: 0.1, 100: 0.01}

SINGLE_MODULE_OPS = ("add", "sub", "mul", "div")

#: op -> names of the units benchmarked on it (names as in the unit registry)
MODELS_BY_OP = {
    "mul": (
        "nac_mul",
        "nalu",
        "nmu",
        "npu",
        "real_npu",
        "inalu",
        "g_nalu",
        "nru",
        "nmru",
        "snmu",
    ),
    "div": ("nac_mul", "nalu", "npu", "real_npu", "inalu", "g_nalu", "nru", "nmru"),
    "add": ("nac_add", "nalu", "nau", "inalu", "g_nalu"),
    "sub": ("nac_add", "nalu", "nau", "inalu", "g_nalu"),
}


def range_pair(range_index: int) -> tuple:
    """``(interpolation_range, extrapolation_range)`` of pair ``range_index`` in 1–9."""
    if (
        isinstance(range_index, bool)
        or not isinstance(range_index, int)
        or not 1 <= range_index <= len(RANGE_PAIRS)
    ):
        raise ValueError(
            f"range_index must be an integer from 1 to {len(RANGE_PAIRS)}, got {range_index!r}."
        )
    return RANGE_PAIRS[range_index - 1]


def single_module_task(op: str, range_index: int, input_size: int = 2) -> ArithmeticTask:
    """The benchmark's :class:`ArithmeticTask` for ``op`` ∈ {add, sub, mul, div}."""
    if op not in SINGLE_MODULE_OPS:
        raise ValueError(f"op must be one of {list(SINGLE_MODULE_OPS)}, got {op!r}.")
    if input_size not in INPUT_SIZES:
        raise ValueError(f"input_size must be one of {sorted(INPUT_SIZES)}, got {input_size!r}.")
    interpolation, extrapolation = range_pair(range_index)
    return ArithmeticTask(
        op=op,
        input_size=input_size,
        subset_ratio=INPUT_SIZES[input_size],
        overlap_ratio=0.0,
        num_subsets=2,
        interpolation_range=interpolation,
        extrapolation_range=extrapolation,
    )
