"""An experiment of one's own: the static arithmetic task with the target t = a·b + c.

a, b and c are the sums of three overlapping subsets of a 100-number input (as for the
library's ops); the network is NAU → NMU → NAU (docs/own_experiment.md). Importing this module
(``--plugin=abc_task`` with its folder on ``PYTHONPATH``) registers experiment ``"abc"``.
"""

from nalu_jax import register_experiment
from nalu_jax.experiments.arithmetic import static_task
from nalu_jax.tasks import Target


def a_times_b_plus_c(sums):
    """``sums [..., 3]``, the subset sums a, b, c (jnp arrays) -> targets ``[...]``."""
    return sums[..., 0] * sums[..., 1] + sums[..., 2]


EXPERIMENT = static_task("abc", Target("a·b + c", a_times_b_plus_c, subsets=3))
register_experiment(EXPERIMENT)
