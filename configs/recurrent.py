"""The recurrent arithmetic task (tasks.md §3): a recurrent cell over sequences, many seeds.

    python -m nalu_jax.main --config=configs/recurrent.py:model=nau,op=add --workdir=runs/rec_nau_add

Variants (comma-separated in the config string):
  model=NAME   the cell: a unit of ``nalu_jax.units.UNITS`` (nau, nac_add, nalu, nmu, …) or a
               recurrent baseline (lstm, gru, rnn_tanh, rnn_relu)
  op=OP        add, sub, mul, div, squared, root (the readout follows the op: ``model.readout``)
  seeds=N      number of seeds (a vmap axis)
  steps=N      iteration budget (the spec: 100,000)
  smoke        a tiny run (2 seeds, 200 steps, short test sequences) for tests and CI

Defaults: sequences of 10-dimensional vectors (input_size 10: 100 inputs over 1,000 steps would
make the length-1,000 test set 4 GB; with s = 0.25, o = 0.5 the subsets are [0, 2) and [1, 3)
plus a per-seed offset in 0…7), train/validation length 10, test length 1,000, hidden size 2,
learnable zero initial state, λ̂ = 0.1 with s(t) = 1 − exp(−1e-5·t), evaluation sets of 1,000
sequences, threshold from 100,000 simulated length-1,000 sequences.
"""

from nalu_jax.config import base_config, parse_config_arg


def get_config(arg=None):
    v = parse_config_arg(arg, {"model": "nau", "op": "add", "seeds": 100, "steps": 100_000})
    c = base_config()
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
    c.train.reg_scale = 0.1
    c.train.reg_schedule = "exp"
    c.num_seeds = v["seeds"]
    c.num_steps = v["steps"]
    c.eval_size = 1_000  # sequences per evaluation set ([1000, 1000, 10] floats at test)
    if v["smoke"]:
        c.num_seeds = 2
        c.num_steps = 200
        c.eval_every = 100
        c.checkpoint_every = 100
        c.eval_size = 100
        c.task.test_length = 100
        c.task.threshold_samples = 2_000
    return c
