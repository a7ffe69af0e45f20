"""Recurrent cells built from any registered unit, recurrent baselines, and ``unroll``.

ArithmeticCell:  h_t = unit(concat(x_t, h_{t−1})), unit ``in + hidden → hidden``.
BaselineCell:    LSTM, GRU and simple RNN (tanh / ReLU) cells of ``flax.nnx``.

Initial state (docs/protocols.md, "Recurrent arithmetic" and "Sequential MNIST"): 0 for additive units, 1 for multiplicative ones (the unit's
class attribute ``multiplicative``), plus an optional learnable offset ``h0`` ``[hidden]``
(init 0: the "learnable zero state").

Log space (``log_space=True``, for the NAC• family: ``LOG_SPACE_UNITS``): the state is
``log h`` and one step is ``log h_t = [log(|x_t| + ε), log h_{t−1}] @ W`` — the NAC• exponent
applied to the log of the new input and to the stored log state, without the exp/log round
trip that would otherwise clip ``h`` at ε and overflow over long sequences. The output is
``h_t = exp(log h_t)``; the initial log state is 0 (h = 1), plus ``h0`` when learned.

Recurrent initialisation (``recurrent_init``): "random" (the unit's own init) or "identity":
the hidden-to-hidden block of the unit's direct weight matrix ``w`` (rows ``in…in+hidden``)
starts at the identity, each state reading only itself — the accumulator's structure, as in
identity-initialised RNNs (Le et al. 2015). It applies to units that hold such a matrix (NAU,
NMU, NAC•,NMU, sNMU, NRU, the dense baselines: ``has_direct_weight``); the other units keep
their init (NAC₊, NAC•, NALU and their kin build W = tanh(Ŵ)σ(M̂), which never reaches 1).

Cells hold no RNG after construction: per-step noise keys are ``fold_in(key, t)`` (``unroll``).

>>> cell = make_cell("nau", 3, 2, rngs=nnx.Rngs(0), learn_initial_state=True)
>>> ys, final, regs = unroll(cell, xs)          # xs [batch, T, 3] → ys [batch, T, 2]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units import UNITS, make_unit
from nalu_jax.units._base import check_choice, float_dtype, thin_matmul
from nalu_jax.units.nac import log_input
from nalu_jax.units.precision import matmul, set_layer_precision

RECURRENT_BASELINES = ("lstm", "gru", "rnn_tanh", "rnn_relu")
#: units whose forward is exp(log(|x| + ε) @ W) and that can therefore run in log space
LOG_SPACE_UNITS = ("nac_mul", "nac_mul_sigma", "nac_mul_nmu")
RECURRENT_INITS = ("random", "identity")


def has_direct_weight(unit, rows: int, cols: int) -> bool:
    """Whether ``unit`` holds its weight matrix itself as ``w`` ``[rows, cols]``."""
    w = getattr(unit, "w", None)
    return isinstance(w, nnx.Param) and tuple(w[...].shape) == (rows, cols)


def _offset(cell, name: str, hidden_size: int) -> None:
    """A learnable ``[hidden]`` initial-state offset (init 0) stored as ``cell.<name>``."""
    setattr(cell, name, nnx.Param(jnp.zeros((hidden_size,), float_dtype())))


class ArithmeticCell(nnx.Module):
    """h_t = unit(concat(x_t, h_{t−1})): any registered unit, in = in_features + hidden_size,
    out = hidden_size. The unit is ``self.unit`` (parameters keep the unit's names).

    State: ``[batch, hidden]`` (``log h`` when ``log_space``). ``__call__`` maps
    ``(state, x [batch, in])`` → ``(new_state, h [batch, hidden])``.
    """

    def __init__(
        self,
        unit: str,
        in_features: int,
        hidden_size: int,
        *,
        rngs: nnx.Rngs,
        learn_initial_state: bool = False,
        log_space: bool = False,
        unit_options: dict | None = None,
        recurrent_init: str = "random",
    ):
        check_choice("recurrent_init", recurrent_init, RECURRENT_INITS)
        if unit not in UNITS:
            raise ValueError(f"cell unit must be one of {sorted(UNITS)}, got {unit!r}.")
        if log_space and unit not in LOG_SPACE_UNITS:
            raise ValueError(
                f"log_space needs a unit of {list(LOG_SPACE_UNITS)} (an exp(log|x| @ W) unit), "
                f"got {unit!r}."
            )
        if isinstance(hidden_size, bool) or not isinstance(hidden_size, int) or hidden_size < 1:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}.")
        self.unit_name = unit
        self.in_features = in_features
        self.hidden_size = hidden_size
        self.log_space = bool(log_space)
        self.learn_initial_state = bool(learn_initial_state)
        self.unit = make_unit(
            unit, in_features + hidden_size, hidden_size, rngs=rngs, **dict(unit_options or {})
        )
        self.is_arithmetic = self.unit.is_arithmetic
        self.multiplicative = self.unit.multiplicative
        self.identity_init = recurrent_init == "identity" and has_direct_weight(
            self.unit, self.unit.in_features, hidden_size
        )
        if self.identity_init:  # after the unit's own draws: every other weight is unchanged
            w = self.unit.w[...]
            self.unit.w[...] = w.at[in_features:].set(jnp.eye(hidden_size, dtype=w.dtype))
        if self.learn_initial_state:
            _offset(self, "h0", hidden_size)

    def initial_state(self, batch_size: int):
        """``[batch, hidden]``: 0 (additive, or log space), 1 (multiplicative), plus ``h0``."""
        base = 1.0 if self.multiplicative and not self.log_space else 0.0
        state = jnp.full((batch_size, self.hidden_size), base, float_dtype())
        return state + self.h0[...] if self.learn_initial_state else state

    def hidden(self, state):
        """The hidden value ``h`` ``[batch, hidden]`` of a state."""
        return jnp.exp(state) if self.log_space else state

    def _inputs(self, state, x):
        return jnp.concatenate([x, self.hidden(state)], axis=-1)

    def __call__(self, state, x, *, training: bool = False, key=None):
        """``state [batch, hidden]``, ``x [batch, in]`` → ``(new_state, h_t [batch, hidden])``."""
        if self.log_space:
            logs = jnp.concatenate([log_input(x), state], axis=-1)
            new = thin_matmul(logs, self.unit.weight())
            return new, jnp.exp(new)
        h = self.unit(self._inputs(state, x), training=training, key=key)
        return h, h

    def regularizers(self, state, x, *, training: bool = False, key=None) -> dict:
        """The unit's regularisers on its (linear-space) input concat(x, h_{t−1}); ``training``
        and ``key`` as the step's ``__call__`` gets them (an sNMU takes R_z on the input noised
        with the same key)."""
        return self.unit.regularizers(self._inputs(state, x), training=training, key=key)

    def project(self) -> None:
        self.unit.project()

    def sparsity_error(self):
        return self.unit.sparsity_error()


class BaselineCell(nnx.Module):
    """LSTM / GRU / simple RNN (tanh or ReLU) cell with the ``ArithmeticCell`` interface.

    ``kind`` in ``RECURRENT_BASELINES``. State: ``(c, h)`` for the LSTM, else ``h``, each
    ``[batch, hidden]`` and zero (plus learnable ``c0``/``h0`` when ``learn_initial_state``).
    No regularisers, no projection, sparsity error NaN.
    """

    is_arithmetic = False
    multiplicative = False

    def __init__(
        self,
        kind: str,
        in_features: int,
        hidden_size: int,
        *,
        rngs: nnx.Rngs,
        learn_initial_state: bool = False,
    ):
        if kind not in RECURRENT_BASELINES:
            raise ValueError(f"cell must be one of {list(RECURRENT_BASELINES)}, got {kind!r}.")
        self.kind = kind
        self.in_features = in_features
        self.hidden_size = hidden_size
        self.learn_initial_state = bool(learn_initial_state)
        if kind == "lstm":
            self.core = nnx.LSTMCell(in_features, hidden_size, rngs=rngs)
        elif kind == "gru":
            self.core = nnx.GRUCell(in_features, hidden_size, rngs=rngs)
        else:
            act = jnp.tanh if kind == "rnn_tanh" else jax.nn.relu
            self.core = nnx.SimpleCell(in_features, hidden_size, activation_fn=act, rngs=rngs)
        set_layer_precision(self.core)  # flax's cells take no precision: their gates' Linears
        if self.learn_initial_state:
            _offset(self, "h0", hidden_size)
            if kind == "lstm":
                _offset(self, "c0", hidden_size)

    def initial_state(self, batch_size: int):
        """Zeros ``[batch, hidden]`` (plus ``h0``); the LSTM's is the pair ``(c, h)``."""
        zeros = jnp.zeros((batch_size, self.hidden_size), float_dtype())
        h = zeros + self.h0[...] if self.learn_initial_state else zeros
        if self.kind != "lstm":
            return h
        return (zeros + self.c0[...] if self.learn_initial_state else zeros, h)

    def __call__(self, state, x, *, training: bool = False, key=None):
        """``(state, x [batch, in])`` → ``(new_state, h_t [batch, hidden])``."""
        return self.core(state, x)

    def gate_weights(self):
        """The LSTM's four gates (i, f, g, o) as one matrix each: ``(w_in [in, 4·hidden],
        w_h [hidden, 4·hidden], bias [4·hidden])``, read from the ``nnx.LSTMCell``'s own
        parameters (nothing is stored twice; the parameter tree is the flax cell's)."""
        if self.kind != "lstm":
            raise ValueError(f"gate_weights needs an lstm cell, got {self.kind!r}.")
        core = self.core
        gates_in, gates_h = (
            (core.ii, core.if_, core.ig, core.io),
            (core.hi, core.hf, core.hg, core.ho),
        )
        w_in = jnp.concatenate([g.kernel[...] for g in gates_in], axis=1)
        w_h = jnp.concatenate([g.kernel[...] for g in gates_h], axis=1)
        bias = jnp.concatenate([g.bias[...] for g in gates_h])
        return w_in, w_h, bias

    def projected_step(self, state, z_in, w_h, bias):
        """One LSTM step from its input's projection ``z_in = x_t @ w_in`` ``[batch, 4·hidden]``
        (``gate_weights``): ``nnx.LSTMCell``'s update with the four gates in one matmul."""
        c, h = state
        gate, act = self.core.gate_fn, self.core.activation_fn
        z = z_in + (matmul(h, w_h) + bias)
        zi, zf, zg, zo = jnp.split(z, 4, axis=-1)
        i, f, g, o = gate(zi), gate(zf), act(zg), gate(zo)
        c = f * c + i * g
        h = o * act(c)
        return (c, h), h

    def regularizers(self, state, x, *, training: bool = False, key=None) -> dict:
        return {}

    def project(self) -> None:
        return None

    def sparsity_error(self):
        return jnp.array(jnp.nan, float_dtype())


def make_cell(name: str, in_features: int, hidden_size: int, *, rngs: nnx.Rngs, **options):
    """A cell by name: a ``UNITS`` key (``ArithmeticCell``) or a ``RECURRENT_BASELINES`` key.

    ``options`` go to the cell (``learn_initial_state``, and for units ``log_space`` and
    ``unit_options``). Unknown names raise ``ValueError`` naming ``cell``.
    """
    if name in RECURRENT_BASELINES:
        return BaselineCell(name, in_features, hidden_size, rngs=rngs, **options)
    if name in UNITS:
        return ArithmeticCell(name, in_features, hidden_size, rngs=rngs, **options)
    raise ValueError(
        f"cell must be a unit of {sorted(UNITS)} or a baseline of {list(RECURRENT_BASELINES)}, "
        f"got {name!r}."
    )


def _scan(cell, xs, training, key, state, keep_outputs: bool):
    """Shared loop of ``unroll`` and ``final_output``; ``xs [batch, T, in]``, T >= 1."""
    if state is None:
        state = cell.initial_state(xs.shape[0])
    xs_t = jnp.swapaxes(xs, 0, 1)
    length = xs_t.shape[0]

    def step(state, x, t):
        k = None if key is None else jax.random.fold_in(key, t)
        regs = cell.regularizers(state, x, training=training, key=k)
        state, y = cell(state, x, training=training, key=k)
        return state, y, regs

    def body(carry, inp):
        state, _, acc = carry
        state, y, regs = step(state, *inp)
        return (state, y, jax.tree.map(jnp.add, acc, regs)), (y if keep_outputs else None)

    # Step 0 runs outside the scan so that the carry has the type of a cell output: under
    # shard_map a constant initial state does not "vary over the seed axis" while the updated
    # state does, and scan requires both to match.
    first = step(state, xs_t[0], jnp.uint32(0))
    steps = jnp.arange(1, length, dtype=jnp.uint32)
    (final, last, acc), ys = jax.lax.scan(body, first, (xs_t[1:], steps))
    regs = {name: v / length for name, v in acc.items()}
    outputs = jnp.concatenate([first[1][None], ys]) if keep_outputs else None
    return outputs, last, final, regs


def unroll(cell, xs, *, training: bool = False, key=None, state=None):
    """Run ``cell`` over time with ``lax.scan``.

    Args:
      xs: ``[batch, T, in]``. key: step t uses ``fold_in(key, t)`` (None: no key).
      state: the initial state (default ``cell.initial_state(batch)``).

    Returns ``(outputs [batch, T, hidden], final_state, regs)``, ``regs`` each regulariser of
    the cell averaged over the T steps (``{}`` for baselines).
    """
    outputs, _, final, regs = _scan(cell, xs, training, key, state, keep_outputs=True)
    return jnp.swapaxes(outputs, 0, 1), final, regs


def unroll_projected(cell: BaselineCell, z_in, *, state=None):
    """An LSTM over time from its inputs' projections ``z_in [batch, T, 4·hidden]`` (T >= 1),
    each ``x_t @ w_in`` of ``cell.gate_weights()``; the same function as ``unroll(cell, xs)``
    (equal up to float rounding: the gates are summed in another order).

    The input projection is hoisted out of the time loop, so the caller can compute it as one
    matmul over every step — or, for embedded tokens, project the embedding table once and
    gather (``NumberTranslationModel.features``). Inside the loop one ``[hidden, 4·hidden]``
    matmul replaces the cell's four. Returns ``(outputs [batch, T, hidden], final_state)``.
    """
    if state is None:
        state = cell.initial_state(z_in.shape[0])
    _, w_h, bias = cell.gate_weights()
    z_t = jnp.swapaxes(z_in, 0, 1)

    def body(state, z):
        return cell.projected_step(state, z, w_h, bias)

    # step 0 outside the scan, as in ``_scan`` (the carry must vary over the seed axis)
    first, y0 = body(state, z_t[0])
    final, ys = jax.lax.scan(body, first, z_t[1:])
    return jnp.swapaxes(jnp.concatenate([y0[None], ys]), 0, 1), final


def final_output(cell, xs, *, training: bool = False, key=None, state=None):
    """As ``unroll`` but keeps only the last output ``[batch, hidden]`` (O(1) memory in T).

    Returns ``(last_output [batch, hidden], final_state, regs)``.
    """
    _, last, final, regs = _scan(cell, xs, training, key, state, keep_outputs=False)
    return last, final, regs
