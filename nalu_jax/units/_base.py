"""The contract every unit follows, and the initialisers the units share.

A unit is an ``nnx.Module`` built as ``Unit(in_features, out_features, *, rngs, **options)``.
Weights are stored ``[in, out]`` and applied as ``x @ W`` (see the reference implementations).
Besides ``__call__`` each unit offers, as methods that only read its parameters (so that the
training core can call them on ``nnx.merge(graphdef, params)`` inside ``jit``/``vmap``):

* ``regularizers(x, *, training=False, key=None)`` -> ``dict[str, scalar]`` keyed by the
  names the loss knows: ``"sparse"`` (scaled by λ̂·s(t)), ``"z"`` (λ_z), ``"gate"`` (weight 1),
  ``"l1"`` (β(t)), ``"inalu"`` (0.05 once iNALU's condition holds). ``x`` is the unit's input
  batch; ``training``/``key`` are those of ``__call__`` (sNMU's R_z sees its noised input).
* ``project()`` clamps parameters in place (applied after every optimiser update).
* ``sparsity_weights()`` -> the effective weight matrices whose sparsity error is judged;
  empty for units that are not arithmetic (baselines).
* ``weight_matrices()`` -> every weight matrix of the layer, arithmetic or not (by default
  ``sparsity_weights()``; a baseline's kernel): what a model with no arithmetic layer is
  judged over (``ArithmeticNetwork.sparsity_error``).

RNG never lives in a module after construction: a unit that needs noise in training
(sNMU) takes ``key`` in ``__call__``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import nnx

from nalu_jax.units.precision import matmul

EPS = 1e-7
F32_EPS = float(jnp.finfo(jnp.float32).eps)  # ≈ 1.19e-7, the NPU/NMRU ε


def float_dtype():
    """float64 when ``jax_enable_x64`` is on (``config.precision = 64``), float32 otherwise."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def tabs(x):
    """|x| with the reference's (PyTorch's) gradient sign(x): 0 at x = 0, not JAX's +1.

    The log-space units take log(|x| + ε) and the regularisers min(|W|, 1 − |W|); with JAX's
    convention an input of exactly 0 gets an input gradient of ~1/ε and a weight sitting on
    0 is pushed outward. The references (PyTorch) give 0 in both cases.
    """
    return x * jax.lax.stop_gradient(jnp.sign(x))


@jax.custom_jvp
def computed_once(v):
    """``v`` bit for bit, as a value XLA:CPU computes once rather than in each kernel reading it.

    XLA fuses a producer it counts as cheap (elementwise arithmetic, and a real cosine or sine)
    into every fused kernel that reads it, so a value read by many kernels of the backward pass
    (one weight-gradient reduction per parameter) is recomputed in each; on XLA:CPU a cosine is
    a scalar libm call. A floating-point division by a value XLA cannot fold is expensive to it
    and is computed once: ``v / 1`` is exact (``−0``, ``inf``, NaN included; a subnormal reads
    as 0, as XLA:CPU's arithmetic reads it anyway), and the divisor is 1 unless ``v`` is NaN,
    when the quotient is NaN either way. Byte-identical training, faster: WORKSPACE at
    bcf7708, "Values computed once".
    """
    return v / jnp.where(v == v, jnp.ones_like(v), v)


@computed_once.defjvp
def _computed_once_jvp(primals, tangents):
    return computed_once(primals[0]), tangents[0]


@jax.custom_jvp
def cos(t):
    """``jnp.cos(t)`` whose derivative's cosine and sine are each evaluated once (the same
    bits): see ``computed_once``; a differentiated NPU step evaluated its phase's cosine seven
    times and its sine four (``benchmarks/profile_step.py``)."""
    return jnp.cos(t)


@cos.defjvp
def _cos_jvp(primals, tangents):
    (t,), (dt,) = primals, tangents
    return computed_once(jnp.cos(t)), -computed_once(jnp.sin(t)) * dt


def clamp(x, lo: float, hi: float):
    """``torch.clamp``: the value of ``jnp.clip`` with gradient 1 on [lo, hi] *inclusive*.

    ``jnp.clip`` (a max/min pair) passes half the gradient when ``x`` sits exactly on a bound,
    which is where the projection leaves every weight it catches; the references pass it all.
    """
    return jnp.where((x >= lo) & (x <= hi), x, jnp.clip(x, lo, hi))


def check_features(in_features, out_features) -> None:
    """Raise ``ValueError`` naming the argument when a size is not a positive integer."""
    for name, value in (("in_features", in_features), ("out_features", out_features)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}.")


@dataclasses.dataclass(frozen=True)
class TrainingNeeds:
    """What a unit asks of the training core beyond "minimise the loss, then ``project()``".

    Declared by the unit class (``training``), read by the core for the units of a model
    (``nalu_jax.units.training_needs``): the core never tests unit names.
    """

    grad_clip: float | None = None  # element-wise gradient clip when train.grad_clip is None
    lr: float | None = None  # learning rate when train.lr is None
    noise: bool = False  # draws noise in training: __call__ needs a key
    l1_beta: bool = False  # its "l1" regulariser is scaled by the β(t) schedule (NPU)
    gated_regularizer: bool = False  # iNALU: "inalu" term on after 10k steps while valid MSE < 1
    stall_reinit: bool = False  # iNALU: re-initialise a seed whose training loss stalls

    def merge(self, other: TrainingNeeds) -> TrainingNeeds:
        """The needs of a model holding both units (the first set value wins)."""
        pick = lambda a, b: a if a is not None else b
        return TrainingNeeds(
            grad_clip=pick(self.grad_clip, other.grad_clip),
            lr=pick(self.lr, other.lr),
            **{
                f: getattr(self, f) or getattr(other, f)
                for f in ("noise", "l1_beta", "gated_regularizer", "stall_reinit")
            },
        )


class ArithmeticUnit(nnx.Module):
    """Base class: stores the sizes and supplies the default (empty) extras."""

    #: what the unit needs from the training core (see ``TrainingNeeds``)
    training: ClassVar[TrainingNeeds] = TrainingNeeds()

    #: counts toward the model's sparsity error and arithmetic-layer checks
    is_arithmetic: ClassVar[bool] = True
    #: a recurrent cell of this unit starts from state 1 instead of 0
    multiplicative: ClassVar[bool] = False

    def __init__(self, in_features: int, out_features: int):
        check_features(in_features, out_features)
        self.in_features = in_features
        self.out_features = out_features

    def __call__(self, x, *, training: bool = False, key=None):  # pragma: no cover
        raise NotImplementedError

    def regularizers(self, x, *, training: bool = False, key=None) -> dict:
        del x, training, key
        return {}

    def project(self) -> None:
        return None

    def sparsity_weights(self) -> tuple:
        return ()

    def weight_matrices(self) -> tuple:
        return self.sparsity_weights()

    def sparsity_error(self):
        """max_ij min(|W_ij|, |1 - |W_ij||) over ``sparsity_weights()``; NaN if there are none."""
        ws = self.sparsity_weights()
        if not ws:
            return jnp.array(jnp.nan, float_dtype())
        return jnp.max(jnp.stack([sparsity_error(w) for w in ws]))


THIN = 4  # layers with at most this many outputs use ``thin_matmul``'s gradient


@jax.custom_vjp
def _thin_matmul(x, w):
    return matmul(x, w)


def _thin_matmul_fwd(x, w):
    return matmul(x, w), (x, w)


def _thin_matmul_bwd(residuals, g):
    x, w = residuals
    xb = x.reshape(-1, x.shape[-1])  # [batch, in]
    gb = g.reshape(-1, g.shape[-1])  # [batch, out]
    # dW = xᵀg, as products reduced over the batch with `in` as the minor axis: XLA:CPU runs
    # the dot form (a contraction over the major axis) ~3.5× slower for out ≤ 4.
    dw = jnp.sum(xb[:, None, :] * gb[:, :, None], axis=0).T
    return matmul(g, w.T), dw


_thin_matmul.defvjp(_thin_matmul_fwd, _thin_matmul_bwd)


def thin_matmul(x, w):
    """``x [..., in] @ w [in, out]`` with a faster weight gradient when ``out`` is small.

    Same value as ``x @ w`` at ``matmul_precision()``; for ``out ≤ THIN`` the backward pass computes ``xᵀg`` as a
    reduction that vectorises along ``in`` (benchmarks/throughput.py: the arithmetic task's
    first layer, 100 → 2, dominated the training step as a dot).
    """
    if w.shape[-1] > THIN:
        return matmul(x, w)
    return _thin_matmul(x, w)


# Products over at most this many inputs take the closed-form derivative, paired as JAX's rule
# pairs them: the same gradient bits (tests/test_product.py; the NMRU's [x, 1/x] is four
# factors). Longer products (an NMU over 100 inputs) keep JAX's rule: a smaller program.
SMALL_PRODUCT = 4


def _jax_product_rule(z, dz):
    """JAX's own derivative of ``jnp.prod(z, axis=-2)``: value and tangent."""
    return jax.jvp(lambda v: jnp.prod(v, axis=-2), (z,), (dz,))


@jax.custom_jvp
def product_over_inputs(z):
    """``jnp.prod(z, axis=-2)`` for ``z`` ``[..., in, out]``, differentiated in closed form.

    The value is ``jnp.prod``'s. Its derivative, ∂/∂z_i = ∏_{k≠i} z_k, is formed from the
    ``in`` slices of ``z`` directly (the product rule on a product tree of the same order as
    ``jnp.prod``'s own rule): JAX's rule for a product reduction moves the reduced axis in
    front, pads and reshapes, and its transpose cost ~10× the whole forward pass of a small
    NMU on XLA:CPU (benchmarks/profile_step.py).
    """
    return jnp.prod(z, axis=-2)


@product_over_inputs.defjvp
def _product_over_inputs_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    n = z.shape[-2]
    z = computed_once(z)  # the factors, read by the value and by every input's derivative
    if n > SMALL_PRODUCT:  # JAX's own rule: the same bits as before (see SMALL_PRODUCT)
        # Its backward pass reads each level of the product tree in several kernels; unless
        # computed once, the factors (an NMU's W x + 1 − W) are recomputed inside each of them
        # on XLA:CPU: an NMU over 100 inputs then trains ~3× slower (WORKSPACE, Performance).
        return _jax_product_rule(z, dz)
    zs = [z[..., i, :] for i in range(n)]
    dzs = [dz[..., i, :] for i in range(n)]
    # The product rule on the same tree: d(a·b) = da·b + a·db.
    pairs = list(zip(zs, dzs, strict=True))
    while len(pairs) > 1:
        half = (len(pairs) + 1) // 2
        first, second = pairs[:half], pairs[half:]
        pairs = [(a * b, da * b + a * db) for (a, da), (b, db) in zip(first, second, strict=False)]
        pairs += first[len(second) :]
    return pairs[0]


def sparsity_error(w):
    """The spec's sparsity error of one matrix: max_ij min(|W_ij|, |1 − |W_ij||)."""
    a = jnp.abs(w)
    return jnp.max(jnp.minimum(a, jnp.abs(1.0 - a)))


def clamp_param(p: nnx.Param, lo: float, hi: float) -> None:
    p[...] = jnp.clip(p[...], lo, hi)


# ---------------------------------------------------------------- initialisers


def glorot_uniform(key, shape, gain: float = 1.0, dtype=None):
    fan_in, fan_out = shape[0], shape[-1]
    r = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return jax.random.uniform(key, shape, dtype or float_dtype(), -r, r)


def glorot_normal(key, shape, dtype=None):
    std = math.sqrt(2.0 / (shape[0] + shape[-1]))
    return std * jax.random.normal(key, shape, dtype or float_dtype())


def kaiming_uniform(key, shape, gain: float = math.sqrt(2.0), dtype=None):
    r = gain * math.sqrt(3.0 / shape[0])
    return jax.random.uniform(key, shape, dtype or float_dtype(), -r, r)


def uniform(key, shape, lo: float, hi: float, dtype=None):
    return jax.random.uniform(key, shape, dtype or float_dtype(), lo, hi)


def nau_radius(in_features: int, out_features: int) -> float:
    """NAU/NRU/NPU-option init bound: min(0.5, √3·√(2/(in+out)))."""
    return min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (in_features + out_features)))


def _nac_var(r: float) -> float:
    # Var[tanh(Ŵ)σ(M̂)] for Ŵ, M̂ ~ U[-r, r] (the NAC₊ init of the NAU paper).
    return (1.0 / (2.0 * r)) * (1.0 - math.tanh(r) / r) * (r - math.tanh(r / 2.0))


def nac_radius(in_features: int, out_features: int) -> float:
    """The r with F·Var(r) = 2, F = max(fan_in + fan_out, 5), by bisection on [0, 10]."""
    fans = max(in_features + out_features, 5)
    target = 2.0 / fans
    lo, hi = 1e-6, 10.0
    for _ in range(100):  # Var is increasing in r on this interval
        mid = 0.5 * (lo + hi)
        if _nac_var(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
