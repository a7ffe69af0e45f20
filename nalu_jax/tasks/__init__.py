"""Task definitions: the arithmetic task, the single-module benchmark and success thresholds."""

from nalu_jax.tasks.arithmetic import (
    OPS,
    ArithmeticTask,
    normalize_range,
    range_bounds,
    sample_batch,
    sample_inputs,
    sample_offset,
    subset_masks,
    subset_sums,
    target,
    target_from_sums,
)
from nalu_jax.tasks.single_module import (
    INPUT_SIZES,
    MODELS_BY_OP,
    RANGE_PAIRS,
    SINGLE_MODULE_OPS,
    range_pair,
    single_module_task,
)
from nalu_jax.tasks.thresholds import (
    DEFAULT_EPSILON,
    THRESHOLD_KEY_SEED,
    cache_path,
    clear_threshold_cache,
    simulate_threshold,
    success_threshold,
)

__all__ = [
    "DEFAULT_EPSILON",
    "INPUT_SIZES",
    "MODELS_BY_OP",
    "OPS",
    "RANGE_PAIRS",
    "SINGLE_MODULE_OPS",
    "THRESHOLD_KEY_SEED",
    "ArithmeticTask",
    "cache_path",
    "clear_threshold_cache",
    "normalize_range",
    "range_bounds",
    "range_pair",
    "sample_batch",
    "sample_inputs",
    "sample_offset",
    "simulate_threshold",
    "single_module_task",
    "subset_masks",
    "subset_sums",
    "success_threshold",
    "target",
    "target_from_sums",
]
