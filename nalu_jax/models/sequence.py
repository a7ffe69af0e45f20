"""Models of the recurrent experiments: the digit CNN with an accumulating cell (docs/protocols.md, "Sequential MNIST") and
the embedding → LSTM → arithmetic output of number translation (docs/protocols.md, "Number translation"): a recurrent
output cell (the spec's set-up) or a static unit on the last token (the NALU authors' set-up).

Both are ``nnx.Module``s whose state is parameters only, so the training core can
``nnx.split`` them once and ``jax.vmap`` the parameters over seeds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.models import conv
from nalu_jax.tasks import digits as digits_lib
from nalu_jax.units import make_unit
from nalu_jax.units._base import float_dtype
from nalu_jax.units.precision import matmul, set_layer_precision
from nalu_jax.units.recurrent import (
    LOG_SPACE_UNITS,
    RECURRENT_BASELINES,
    make_cell,
    unroll,
    unroll_projected,
)

SOLVED_ACCUMULATOR = "solved_accumulator"
#: NumberTranslationModel's outputs: a recurrent output cell, or a static head on the last token
TRANSLATION_OUTPUTS = ("recurrent", "last")


def cnn_padding(image_shape, padding: str = "auto") -> str:
    """ "VALID" convolutions (the classic 28×28 MNIST CNN: 28→24→12→8→4) when the image is
    large enough for two 5×5 valid convolutions and two 2×2 pools, else "SAME" (8×8: 8→4→2)."""
    if padding != "auto":
        return padding
    side = min(image_shape)
    return "VALID" if ((side - 4) // 2 - 4) // 2 >= 1 else "SAME"


def _pooled(side: int, padding: str) -> int:
    for _ in range(2):
        side = (side - 4 if padding == "VALID" else side) // 2
    return side


class DigitCNN(nnx.Module):
    """conv 5×5×20 → ReLU → maxpool 2 → conv 5×5×50 → ReLU → maxpool 2 → dense 500 → ReLU →
    dense ``outputs``: images ``[N, H, W]`` → ``[N, outputs]``."""

    def __init__(self, image_shape, outputs: int, *, rngs: nnx.Rngs, padding: str = "auto"):
        self.padding = cnn_padding(image_shape, padding)
        h, w = (_pooled(s, self.padding) for s in image_shape)
        if h < 1 or w < 1:
            raise ValueError(f"model.cnn_padding {padding!r} leaves no pixels of {image_shape}.")
        self.conv1 = nnx.Conv(1, 20, (5, 5), padding=self.padding, rngs=rngs)
        self.conv2 = nnx.Conv(20, 50, (5, 5), padding=self.padding, rngs=rngs)
        self.dense1 = nnx.Linear(50 * h * w, 500, rngs=rngs)
        self.dense2 = nnx.Linear(500, outputs, rngs=rngs)
        set_layer_precision(self)

    def __call__(self, images):
        # nnx.Conv holds the parameters (names, shapes, init); the convolution and pooling run
        # as matmuls (nalu_jax.models.conv), ~4× faster on XLA:CPU, most of all under a seed vmap.
        x = images[..., None]
        for layer in (self.conv1, self.conv2):
            y = conv.conv2d(x, layer.kernel[...], layer.bias[...], self.padding)
            x = conv.max_pool(jax.nn.relu(y))
        x = jax.nn.relu(self.dense1(x.reshape(x.shape[0], -1)))
        return self.dense2(x)


def cell_options(
    name: str,
    *,
    log_space="auto",
    learn_initial_state=False,
    unit_options=None,
    recurrent_init="random",
):
    """``make_cell`` options: NAC• units run in log space unless told otherwise; unit cells take
    ``recurrent_init`` (the baselines keep their own initialisation)."""
    if name in RECURRENT_BASELINES:
        return {"learn_initial_state": learn_initial_state}
    if log_space == "auto":
        log_space = name in LOG_SPACE_UNITS
    return {
        "learn_initial_state": learn_initial_state,
        "log_space": bool(log_space),
        "unit_options": dict(unit_options or {}),
        "recurrent_init": recurrent_init,
    }


class SequentialDigitsModel(nnx.Module):
    """Per image l_t = CNN(x_t) ``[out]``; h_t = Cell(concat(l_t, h_{t−1})) ``[out]``.

    ``out`` is 1 (sum, product) or 10 (count). The cell is ``make_cell(cell, out, out)`` (state
    0 for additive, 1 for multiplicative cells), or, for ``cell="solved_accumulator"``, the
    fixed h_t = h_{t−1} + l_t (· l_t for product): the reference model. ``softmax`` turns the
    CNN's 10 count outputs into class probabilities.

    ``baseline_hidden`` H > 0 (recurrent baselines only): the baseline runs with H hidden units
    and a linear ``H → out`` layer reads each step's state, y_t = h_t W + b. The default 0 is
    stable-nalu's ``SequentialMnistNetwork``: the baseline's state is the output, so an LSTM,
    GRU or RNN-tanh outputs values in (−1, 1) and cannot fit sums, products or counts above 1.
    """

    def __init__(
        self,
        image_shape,
        task: str,
        cell: str,
        *,
        rngs,
        padding="auto",
        softmax=False,
        baseline_hidden=0,
        **options,
    ):
        self.task = task
        self.softmax = bool(softmax)
        out = digits_lib.output_size(task)
        hidden = int(baseline_hidden)
        if hidden < 0 or (hidden and cell not in RECURRENT_BASELINES):
            raise ValueError(
                f"baseline_hidden must be 0, or > 0 for a recurrent baseline "
                f"({', '.join(RECURRENT_BASELINES)}); got {baseline_hidden!r} for {cell!r}."
            )
        self.cnn = DigitCNN(image_shape, out, rngs=rngs, padding=padding)
        self.solved = cell == SOLVED_ACCUMULATOR
        size = hidden or out
        self.cell = None if self.solved else make_cell(cell, out, size, rngs=rngs, **options)
        self.head = nnx.Linear(hidden, out, rngs=rngs) if hidden else None
        set_layer_precision(self)

    def digit_values(self, images):
        """images ``[N, H, W]`` → l ``[N, out]``."""
        values = self.cnn(images)
        return jax.nn.softmax(values, axis=-1) if self.softmax else values

    def accumulate(self, values, *, training=False, key=None):
        """values ``[B, T, out]`` → (states h ``[B, T, out]``, regularisers averaged over T)."""
        if self.solved:
            return digits_lib.solved_accumulate(self.task, values), {}
        ys, _, regs = unroll(self.cell, values, training=training, key=key)
        if self.head is not None:
            ys = self.head(ys)
        return ys, regs

    def __call__(self, images, *, training=False, key=None):
        """images ``[B, T, H, W]`` → (h ``[B, T, out]``, regularisers)."""
        b, t = images.shape[:2]
        values = self.digit_values(images.reshape((b * t,) + images.shape[2:]))
        return self.accumulate(values.reshape(b, t, -1), training=training, key=key)

    def project(self) -> None:
        if self.cell is not None:
            self.cell.project()

    def sparsity_error(self):
        if self.cell is None:
            return jnp.array(jnp.nan, jnp.float32)
        return self.cell.sparsity_error()


def make_head(
    name: str,
    in_features: int,
    out_features: int = 1,
    *,
    rngs,
    unit_options=None,
    learn_initial_state=False,
    log_space=False,
):
    """A static output layer ``in → out`` by the name of a cell: the unit ``name`` (``UNITS``,
    built by ``make_unit`` with ``unit_options``), or for a recurrent baseline
    (``RECURRENT_BASELINES``) the plain ``linear`` unit y = xW + b (an LSTM + linear output).

    ``learn_initial_state`` and ``log_space`` (``cell_options``' recurrent-only options) must be
    off: a static layer has no state.
    """
    for option, value in (("learn_initial_state", learn_initial_state), ("log_space", log_space)):
        if value:
            raise ValueError(f"{option} applies only to a recurrent output cell, got {value!r}.")
    if name in RECURRENT_BASELINES:
        return make_unit("linear", in_features, out_features, rngs=rngs)
    return make_unit(name, in_features, out_features, rngs=rngs, **dict(unit_options or {}))


def last_token_index(tokens):
    """tokens ``[B, T]`` → ``[B]`` int: the position of each row's last non-pad (id ≠ 0) token,
    0 for an all-pad row. Number rows are padded at the end (``tasks.translation.encode``)."""
    positions = jnp.arange(tokens.shape[1], dtype=jnp.int32)
    return jnp.max(jnp.where(tokens != 0, positions, 0), axis=1)


class NumberTranslationModel(nnx.Module):
    """tokens ``[B, T]`` → embedding ``[B, T, E]`` → LSTM ``[B, T, H]`` → the value ``[B]``.

    ``output="recurrent"`` (the spec's set-up): an output cell h_t = Cell(concat(lstm_t,
    h_{t−1})) ``[B, T, 1]``, ``self.cell`` (``make_cell(cell, H, 1)``); the value is the last
    state. Pad tokens (id 0) keep the previous output state (as in the NAU paper's code), so
    padding never counts.

    ``output="last"`` (the NALU authors' set-up): a static layer ``H → 1``, ``self.head``
    (``make_head``: the unit ``cell``, or a linear layer for a recurrent baseline), applied to
    the LSTM output at each sequence's last non-pad token (``last_token_index``).

    The LSTM's outputs lie in (−1, 1); ``readout=True`` adds a dense ``H → H`` layer after it
    so that the output's inputs are unbounded (off by default: the NAU paper's model).
    """

    def __init__(
        self,
        vocab_size,
        cell: str,
        *,
        rngs,
        embedding_size=2,
        hidden_size=2,
        readout=False,
        output="recurrent",
        **options,
    ):
        if output not in TRANSLATION_OUTPUTS:
            raise ValueError(f"output must be one of {list(TRANSLATION_OUTPUTS)}, got {output!r}.")
        self.output = output
        self.embedding = nnx.Embed(vocab_size, embedding_size, rngs=rngs)
        self.lstm = make_cell("lstm", embedding_size, hidden_size, rngs=rngs)
        self.readout = nnx.Linear(hidden_size, hidden_size, rngs=rngs) if readout else None
        set_layer_precision(self)
        if output == "recurrent":
            self.cell = make_cell(cell, hidden_size, 1, rngs=rngs, **options)
        else:
            self.head = make_head(cell, hidden_size, 1, rngs=rngs, **options)

    def features(self, tokens):
        """tokens ``[B, T]`` → the LSTM outputs (after ``readout``) ``[B, T, H]``.

        The LSTM's input projection is linear in the embedding, so it is applied to the
        embedding table (``[vocab, E] @ [E, 4H]``, once per step) and the tokens gather rows of
        the product — the same function as projecting each token's embedding (``unroll`` of
        the LSTM over ``self.embedding(tokens)``, equal up to float rounding) at a fraction of
        the work: the vocabulary has 30 words, a batch 64 × T tokens.
        """
        w_in, _, _ = self.lstm.gate_weights()
        table = matmul(self.embedding.embedding[...], w_in)
        features, _ = unroll_projected(self.lstm, jnp.take(table, tokens, axis=0))
        if self.readout is not None:
            features = self.readout(features)
        return features

    def __call__(self, tokens, *, training=False, key=None):
        """tokens ``[B, T]`` int → (value ``[B]``, regularisers: the cell's averaged over T, or
        the head's on its input batch)."""
        features = self.features(tokens)
        if self.output == "last":
            h = jnp.take_along_axis(features, last_token_index(tokens)[:, None, None], axis=1)
            h = h[:, 0]
            regs = self.head.regularizers(h, training=training, key=key)
            return self.head(h, training=training, key=key)[:, 0], dict(regs)
        keep = (tokens == 0)[..., None]

        def step(carry, inp):
            state, out = carry
            x, pad, t = inp
            k = None if key is None else jax.random.fold_in(key, t)
            regs = self.cell.regularizers(state, x, training=training, key=k)
            new, y = self.cell(state, x, training=training, key=k)
            new = jax.tree.map(lambda a, b: jnp.where(pad, a, b), state, new)
            return (new, jnp.where(pad, out, y)), regs

        b, t = tokens.shape
        xs = (
            jnp.swapaxes(features, 0, 1),
            jnp.swapaxes(keep, 0, 1),
            jnp.arange(t, dtype=jnp.uint32),
        )
        init = (self.cell.initial_state(b), jnp.zeros((b, 1), float_dtype()))
        (_, value), regs = jax.lax.scan(step, init, xs)
        return value[:, 0], {k: jnp.mean(v) for k, v in regs.items()}

    def _output_layer(self):
        return self.head if self.output == "last" else self.cell

    def project(self) -> None:
        self._output_layer().project()

    def sparsity_error(self):
        return self._output_layer().sparsity_error()
