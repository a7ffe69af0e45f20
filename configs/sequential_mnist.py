"""Sequential MNIST (docs/protocols.md, "Sequential MNIST"): a CNN per digit image, a recurrent arithmetic cell on top.

    python -m nalu_jax.main --config=configs/sequential_mnist.py:task=sum,model=nau --workdir=runs/smnist_sum_nau

Variants (comma-separated in the config string):
  task=T       sum (digits 0–9, train length 10, test 1, 10, 100, 200, …, 1000),
               product (digits 1–9, train length 2, test 1…20),
               count (per-class counts, 10 outputs, train length 10, test up to 1000)
  model=NAME   the cell's unit (nau, nmu, nac_add, nac_mul, nalu, …), a recurrent baseline
               (lstm, gru, rnn_tanh, rnn_relu) or solved_accumulator (the reference model)
  seeds=N      number of seeds (a vmap axis)
  protocol=P   hour (the default: a reproduction, reference population included, takes about
               an hour on a 2-core CPU; steps per task in ``HOUR_STEPS``) or paper (the paper's
               length: 100,000 steps); either way the λ ramp runs from 10% to 100% of the steps
  steps=N      iteration budget (0: the protocol's)
  data=SRC     sklearn_digits (8×8, ships with scikit-learn, offline; the default) or mnist_idx
               (the four standard IDX files, optionally .gz, in ``--config.data.directory``)
  smoke        a short run (about a minute on 2 CPU cores): 2 seeds, 100 steps of batch 8,
               short test lengths, sklearn digits, 2 reference seeds

The reference ("solved accumulator") population of ``reference.num_seeds`` seeds trains first
in the same workdir and sets each length's success threshold; pass
``--config.reference.thresholds='(...)'`` (one per test length) to skip it. Any field can be set
on the command line, e.g. ``--config.task.test_lengths='(1,10,100)'``.
"""

import ml_collections

from nalu_jax.config import ConfigError, parse_config_arg, run_config, sequence_train_config
from nalu_jax.tasks import digits

_TASKS = {
    # task: (train length, test lengths)
    "sum": (10, (1, 10, *range(100, 1001, 100))),
    "product": (2, tuple(range(1, 21))),
    "count": (10, (1, 10, *range(100, 1001, 100))),
}
_SMOKE_LENGTHS = {"sum": (1, 10, 30), "product": (1, 2, 4), "count": (1, 10, 30)}
PAPER_STEPS = 100_000
# About an hour each on the shared 2-core CPU (8×8 digits, 10 seeds + 10 reference seeds, 11
# evaluations each, compile included), from rates measured at load average ~10 (sum: ~22
# seed-steps/s training, ~1.2 s per seed-evaluation; product ~100 seed-steps/s): WORKSPACE
# at bcf7708, "Profile: sequence step". 28×28 MNIST (data=mnist_idx) trains ~15× slower per step: ÷ 15
# (product 1,060 steps, sum and count 260; measured: ~10 min per 10-seed model for the
# product, ~8 for the sum). That keeps the hour but is short for learning on MNIST: the sum's
# NAU learns nothing in 260 steps (docs/reproductions/sequential-mnist.md, "On MNIST itself"); use steps=N
# (the docs' MNIST runs that learn: product steps=3180, sum steps=1300).
HOUR_STEPS = {"sum": 4_000, "product": 16_000, "count": 4_000}
HOUR_MNIST_IDX_DIVISOR = 15


def _eval_every(steps: int) -> int:
    """About ten evaluations: the largest divisor of ``steps`` not above ``steps // 10``."""
    limit = max(1, steps // 10)
    return max(d for d in range(1, limit + 1) if steps % d == 0)


def get_config(arg=None):
    v = parse_config_arg(
        arg,
        {
            "task": "sum",
            "model": "nau",
            "seeds": 10,
            "protocol": "hour",
            "steps": 0,
            "data": "sklearn_digits",
        },
    )
    if v["protocol"] not in ("hour", "paper"):
        raise ConfigError(f"config variant protocol must be hour or paper, got {v['protocol']!r}.")
    steps = PAPER_STEPS
    if v["protocol"] == "hour":
        steps = HOUR_STEPS.get(v["task"], PAPER_STEPS)
        if v["data"] == "mnist_idx":  # a multiple of 10, so that ten evaluations divide it
            steps = steps // HOUR_MNIST_IDX_DIVISOR // 10 * 10
    steps = v["steps"] or steps
    # cpu_seed_block 1: the CNN step is memory-bound, and one seed at a time keeps its working set
    # in cache (10 seeds: 1.7–2× the rate of a vmap over 10; benchmarks/sequence_throughput.py).
    c = run_config("sequential_mnist", num_seeds=v["seeds"], num_steps=steps, seed_block=1)
    paper = v["protocol"] == "paper"
    c.eval_every = 1_000 if paper else _eval_every(steps)
    c.checkpoint_every = 10_000 if paper else max(1, steps // 4)

    c.data = ml_collections.ConfigDict()
    c.data.source = v["data"]  # sklearn_digits | mnist_idx | synthetic (tests only)
    c.data.directory = ""  # mnist_idx: folder of the four IDX files
    c.data.train_size = 1_500  # sklearn_digits: the first N images train, the rest test
    c.data.synthetic_side = digits.SYNTHETIC_SIDE  # synthetic: 28 for MNIST-sized images
    c.data.synthetic_size = digits.SYNTHETIC_SIZE  # synthetic: images per split

    c.task = ml_collections.ConfigDict()
    c.task.name = v["task"]
    train_length, test_lengths = _TASKS.get(v["task"], _TASKS["sum"])
    c.task.train_length = train_length
    c.task.test_lengths = test_lengths
    c.task.eval_sequences = 1_000  # fixed test sequences per length

    c.model = ml_collections.ConfigDict()
    c.model.name = v["model"]
    c.model.cnn_padding = "auto"  # VALID for 28×28 MNIST, SAME for 8×8 digits
    c.model.softmax = v["task"] == "count"  # count: class probabilities feed the counters
    c.model.log_space = "auto"  # NAC• cells accumulate in log space
    c.model.learn_initial_state = False
    c.model.recurrent_init = "random"  # or "identity": the unit cell's hidden-to-hidden block
    # recurrent baselines: 0 = stable-nalu's (the state is the output, in (−1, 1)); H > 0 = H
    # hidden units read out by a linear layer (docs/reproductions/sequential-mnist.md, "Baselines with a readout");
    # any H at seed_block <= 5 (1 here): the run initialises seed_block seeds per call, which
    # avoids XLA:CPU's hang of one vmapped init over 6+ seeds at H >= 32
    # (loop.init_in_blocks, tools/repro_init_hang.py)
    c.model.baseline_hidden = 0
    c.model.unit_options = ml_collections.ConfigDict()

    c.train = sequence_train_config()

    c.reference = ml_collections.ConfigDict()
    c.reference.num_seeds = 10  # solved-accumulator seeds setting the thresholds
    c.reference.confidence = 0.99  # threshold = mean + t_confidence·sd/√n
    c.reference.thresholds = ml_collections.FieldReference(None, field_type=tuple)

    if v["smoke"]:
        c.num_seeds = 2
        c.cpu_seed_block = 2
        c.num_steps = 100
        c.eval_every = 50
        c.checkpoint_every = 50
        c.task.test_lengths = _SMOKE_LENGTHS.get(v["task"], (1, 10))
        c.task.eval_sequences = 32
        c.train.batch_size = 8
        c.reference.num_seeds = 2
    # the paper's λ ramp, 1e4 → 1e5 of 1e5 steps, as fractions of the budget
    c.train.reg_start, c.train.reg_end = 0.1 * c.num_steps, float(c.num_steps)
    return c
