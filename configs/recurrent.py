"""The recurrent arithmetic task (tasks.md §3): a recurrent cell over sequences, many seeds.

    python -m nalu_jax.main --config=configs/recurrent.py:model=nau,op=add --workdir=runs/rec_nau_add

Variants (comma-separated in the config string):
  model=NAME   the cell: a unit of ``nalu_jax.units.UNITS`` (nau, nac_add, nalu, nmu, …) or a
               recurrent baseline (lstm, gru, rnn_tanh, rnn_relu)
  op=OP        add, sub, mul, div, squared, root (the readout follows the op: ``model.readout``)
  seeds=N      number of seeds (a vmap axis)
  steps=N      iteration budget (the spec: 100,000; the reproduce protocol: 50,000)
  protocol=P   spec (tasks.md §3 as written; the default) or reproduce (the documented
               protocol of docs/reproductions.md "Recurrent arithmetic", below)
  smoke        a tiny run (2 seeds, 200 steps, short test sequences) for tests and CI

Defaults: sequences of 10-dimensional vectors (input_size 10: 100 inputs over 1,000 steps would
make the length-1,000 test set 4 GB; with s = 0.25, o = 0.5 the subsets are [0, 2) and [1, 3)
plus a per-seed offset in 0…7), train/validation length 10, test length 1,000, hidden size 2,
learnable zero initial state, λ̂ = 0.1 with s(t) = 1 − exp(−1e-5·t), evaluation sets of 1,000
sequences, threshold from 100,000 simulated length-1,000 sequences.

protocol=reproduce departs from the spec where the spec's model cannot pass its own length-1,000
threshold (study: docs/reproductions.md "Recurrent arithmetic"): at the spec's λ̂ = 0.1·(1 −
exp(−1e-5·t)) the hidden-to-hidden weights stay mixed; with a strong sparsity regulariser they
reach exact {−1, 0, 1} structures, but Adam at a constant rate keeps the irrelevant input weights
jittering at ~1e-4, and a 1,000-step sum turns that into an error far above the threshold
(which tolerates ~1e-5). So: λ̂ = 10 ramped linearly over steps 0–20,000, lr 1e-3 falling linearly
to 1e-7 over the second half, the readout's regularisers only from the second half (regularised
from the start, it holds about half the seeds in a wrong structure with a readout weight at 0),
50,000 steps, and test inputs from the training range U[1, 2) (length-only extrapolation, as
stable-nalu's recurrent dataset tests). The judgement — the spec's threshold construction with
ε = 1e-5 at the test length — is unchanged. Measured with the random init: NAU 10/16 solved at
length 1,000 on seeds 0–15 (the seeds the readout schedule was chosen on) and 16/32 on held-out
seeds 16–47; LSTM, GRU, NALU and NAC₊ 0/16 (docs/reproductions.md). With the identity init
(below, now the + default): 12/16 and 54/64 on fresh seeds.

× (``op=mul``, sixth session): the product's MSE on targets of order 10³ outweighs λ̂ = 10, so
the × protocol takes λ̂ = 1,000 and starts the cell's hidden-to-hidden block at the identity
(``model.recurrent_init``; NAU/NMU-type cells), chosen on seeds 0–15 (10/16). Held out, fresh
seeds 16–47: NAU 9/32 solved at length 1,000 (best of 2: 8/16); NALU and LSTM 0/16
(docs/reproductions.md "Recurrent ×").

The identity initialisation on + (seventh session: the × fix, the protocol otherwise
unchanged; 12/16 on seeds 0–15 against 10/16, then checked once on fresh seeds 112–175): 54/64
= 84.4% [73.6%, 91.3%] solved at length 1,000 per initialisation, against 34/64 with the random
init on fresh seeds 48–111 — the NAU majority without restarts. So ``protocol=reproduce`` with
``op=add`` starts the hidden-to-hidden block at the identity; the runs documented before that
(random init: the seeds 0–15 table, the held-out 16–47 and the restarts) are re-run with
``--config.model.recurrent_init=random``. On − it does not help (4/16 at length 1,000 on seeds
0–15 either way, 8/16 against 12/16 at length 100), so − keeps the random init.

Restarts (the protocol's second half, ``launch/best_of.py``): whether a NAU seed reaches the
exact structure is set by its initialisation (seeds that fail, fail under every schedule
tried), and a run that reached it is recognised by its length-10 validation MSE alone. So a
run of the protocol is two initialisations (two consecutive seeds), keeping the one with the
lower validation MSE; the judgement of the kept one is unchanged. Fixed before the held-out
check on the fresh seeds 48–111: 28/32 runs solved at length 1,000 (87.5%, Wilson 95% [71.9%,
95.0%]; one initialisation: 34/64), docs/reproductions.md "Restarts":

    python -m launch.compare_models --config=configs/recurrent.py:op=add,seeds=64,protocol=reproduce \
        --models=nau --config.first_seed=48 --config.model.recurrent_init=random \
        --workdir=runs/recurrent_add_restarts
    python -m launch.best_of --k=2 --models=nau --workdir=runs/recurrent_add_restarts
"""

from nalu_jax.config import ConfigError, base_config, parse_config_arg

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
            # + (seventh session, chosen on seeds 0–15, held out on 112–175: 54/64 at length
            # 1,000 against 34/64 from the random init)
            c.model.recurrent_init = "identity"
        if v["op"] == "mul":
            # × (sixth session, chosen on seeds 0–15): the product's MSE on targets of order
            # 10³ outweighs λ̂ = 10, and at λ̂ = 1,000 alone the hidden-to-hidden block settles
            # in a rank-1 mix; from the identity it stays an accumulator
            c.train.reg_scale = MUL_REG_SCALE
            c.model.recurrent_init = "identity"
    return c
