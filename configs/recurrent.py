"""The recurrent arithmetic task: a recurrent cell over sequences, many seeds.

    python -m nalu_jax.main --config=configs/recurrent.py:model=nau,op=add --workdir=runs/rec_nau_add

Protocol and sources: docs/protocols.md, "Recurrent arithmetic" (Trask et al. 2018, §4.1).

Variants (comma-separated in the config string):
  model=NAME   the cell: a unit of ``nalu_jax.units.UNITS`` (nau, nac_add, nalu, nmu, …) or a
               recurrent baseline (lstm, gru, rnn_tanh, rnn_relu)
  op=OP        add, sub, mul, div, squared, root (the readout follows the op: ``model.readout``)
  seeds=N      number of seeds (a vmap axis)
  steps=N      iteration budget (spec: 100,000; reproduce: 50,000)
  protocol=P   spec (the paper's protocol as the reference code runs it; the default) or
               reproduce (a tuned protocol, below: results under it are "beyond the paper")
  smoke        a tiny run (2 seeds, 200 steps, short test sequences) for tests and CI

Defaults: sequences of 10-dimensional vectors (input_size 10: 100 inputs over 1,000 steps would
make the length-1,000 test set 4 GB; with s = 0.25, o = 0.5 the subsets are [0, 2) and [1, 3)
plus a per-seed offset in 0…7), train/validation length 10, test length 1,000, hidden size 2,
learnable initial state (an offset on 0; on 1 for multiplicative cells outside log space),
λ̂ = 0.1 with s(t) = 1 − exp(−1e-5·t), evaluation sets of 1,000 sequences, threshold from
100,000 simulated length-1,000 sequences.

``protocol=reproduce`` departs from the paper's protocol in six ways, because under it a unit's
hidden-to-hidden weights stay mixed and a 1,000-step sum turns Adam's jitter of ~1e-4 on the
irrelevant weights into an error far above the length-1,000 threshold (which tolerates ~1e-5):
λ̂ = 10 ramped linearly over the first 40% of the budget; lr 1e-3 falling linearly to 1e-7
over the second half; the readout's regularisers only from the second half; 50,000 steps; test
inputs from the training range U[1, 2) (length-only extrapolation, as the reference code's
recurrent dataset); and for + and × the cell's hidden-to-hidden block starts at the identity
(``model.recurrent_init``; NAU/NMU-type cells). × also takes λ̂ = 1,000 (its MSE on targets of
order 10³ outweighs λ̂ = 10). The judgement (ε = 1e-5 threshold at the test length) is
unchanged. The search that chose these settings, and runs of two initialisations per seed
(``python -m launch.best_of --k=2``), are in docs/reproductions/recurrent.md.
"""

from nalu_jax.config import ConfigError, arithmetic_config, parse_config_arg

REPRODUCE_LR = 1e-3
MUL_REG_SCALE = 1_000.0  # protocol=reproduce, op=mul: λ̂


def get_config(arg=None):
    v = parse_config_arg(
        arg, {"model": "nau", "op": "add", "seeds": 100, "steps": 0, "protocol": "spec"}
    )
    if v["protocol"] not in ("spec", "reproduce"):
        raise ConfigError(
            f"config variant protocol must be spec or reproduce, got {v['protocol']!r}."
        )
    reproduce = v["protocol"] == "reproduce"
    c = arithmetic_config()
    c.experiment = "recurrent"
    c.task.kind = "recurrent"
    c.task.op = v["op"]
    c.task.input_size = 10
    c.task.train_length = 10  # training and validation sequence length
    c.task.test_length = 1_000  # extrapolation (test) sequence length
    c.task.threshold_samples = 100_000
    c.model.name = v["model"]
    c.model.hidden_size = 2
    c.model.readout = "auto"  # "auto" (by op), "same" (the cell's unit) or a unit name
    c.model.learn_initial_state = True
    c.model.readout_reg_from = 0  # the readout's regularisers count from this step (0: always)
    c.model.recurrent_init = "random"  # or "identity": the cell's hidden-to-hidden block
    c.train.reg_scale = 0.1
    c.train.reg_schedule = "exp"
    c.num_seeds = v["seeds"]
    c.num_steps = v["steps"] or (50_000 if reproduce else 100_000)
    c.eval_size = 1_000  # sequences per evaluation set ([1000, 1000, 10] floats at test)
    if v["smoke"]:
        c.num_seeds = 2
        c.num_steps = 200
        c.eval_every = 100
        c.checkpoint_every = 100
        c.eval_size = 100
        c.task.test_length = 100
        c.task.threshold_samples = 2_000
    if reproduce:
        c.checkpoint_every = min(10_000, c.num_steps)
        c.train.reg_scale = 10.0
        c.train.reg_schedule = "linear"
        c.train.reg_start, c.train.reg_end = 0.0, 0.4 * c.num_steps
        c.train.lr = REPRODUCE_LR
        c.train.lr_decay_from, c.train.lr_decay_to = 0.5 * c.num_steps, 1e-4
        c.model.readout_reg_from = c.num_steps // 2
        c.task.extrapolation_range = c.task.interpolation_range
        if v["op"] == "add":
            # + : chosen on seeds 0–15, checked on held-out seeds (docs/reproductions/recurrent.md)
            c.model.recurrent_init = "identity"
        if v["op"] == "mul":
            # × (chosen on seeds 0–15): the product's MSE on targets of order
            # 10³ outweighs λ̂ = 10, and at λ̂ = 1,000 alone the hidden-to-hidden block settles
            # in a rank-1 mix; from the identity it stays an accumulator
            c.train.reg_scale = MUL_REG_SCALE
            c.model.recurrent_init = "identity"
    return c
