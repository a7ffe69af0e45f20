"""Number translation (tasks.md §5): "two hundred and thirty four" → 234.

    python -m nalu_jax.main --config=configs/number_translation.py:model=nau --workdir=runs/translation_nau

Model: token embedding → LSTM → a recurrent arithmetic output cell (1 output, state 0) whose
final state is the value; trained on the 169 training numbers, judged on the 630 test numbers
(MSE and exact-match accuracy) at each seed's lowest-validation-MSE evaluation.

Variants (comma-separated in the config string):
  model=NAME   the output cell's unit (nau, nmu, nac_add, nalu, …) or a recurrent baseline
               (lstm, gru, rnn_tanh, rnn_relu)
  seeds=N      number of seeds (a vmap axis)
  steps=N      iteration budget (default 100,000: the full protocol; 10 seeds take ~12 minutes
               on the shared 2-core CPU, compile included, so no shorter default is needed)
  smoke        a seconds-long run: 2 seeds, 200 steps

Any field can also be set on the command line, e.g. ``--config.model.hidden_size=8``.
"""

import ml_collections

from nalu_jax.config import parse_config_arg, run_config, sequence_train_config


def get_config(arg=None):
    v = parse_config_arg(arg, {"model": "nau", "seeds": 10, "steps": 100_000})
    c = run_config("number_translation", num_seeds=v["seeds"], num_steps=v["steps"], seed_block=5)
    c.eval_every = 1_000
    c.checkpoint_every = 10_000
    c.success_accuracy = 1.0  # solved: this exact-match accuracy on the test numbers

    c.data = ml_collections.ConfigDict()
    c.data.split_seed = 0  # the fixed 169 / 200 / 630 split

    c.model = ml_collections.ConfigDict()
    c.model.name = v["model"]
    c.model.embedding_size = 2
    c.model.hidden_size = 2
    c.model.readout = False  # True: a dense layer between the LSTM and the output cell
    c.model.log_space = "auto"  # NAC• cells accumulate in log space
    c.model.learn_initial_state = False
    c.model.unit_options = ml_collections.ConfigDict()

    c.train = sequence_train_config()

    if v["smoke"]:
        c.num_seeds = 2
        c.seed_block = 2
        c.num_steps = 200
        c.eval_every = 100
        c.checkpoint_every = 100
    return c
