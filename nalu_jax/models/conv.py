"""2-D convolution and 2×2 max-pooling written as matmuls and elementwise ops, for XLA:CPU.

``lax.conv`` is slow on XLA:CPU at the digit CNN's sizes (small images, 1–20 channels), and
under ``jax.vmap`` over per-seed kernels it becomes a feature-grouped convolution, slower still;
``max_pool``'s gradient is a select-and-scatter. Here a convolution is one matmul against either

* a dense "Toeplitz" matrix ``T[(p, c), (q, o)] = K[tap(p, q), c, o]`` built from the kernel
  with a constant one-hot tap table (small images: no patch copies, and fewer multiplies than
  im2col when most taps fall in the SAME padding), or
* a banded matrix ``B[(i, x, c), (b, o)] = K[i, x − b, c, o]`` against blocks of the input
  (larger images: a block of ``kw − 1`` output columns of one output row is one matmul over the
  ``kh × (2kw − 2)`` window of input it reads; (2kw − 2)/kw times im2col's multiplies, but
  ``2kh`` copies of the input instead of ``kh·kw``: im2col at 28×28 is bandwidth-bound), or
* im2col patches (static slices concatenated along the channel axis),

so that a vmapped convolution is a batched matmul. Both compute the same function as
``lax.conv_general_dilated(x, K, (1, 1), padding, ("NHWC", "HWIO", "NHWC"))`` up to float
rounding (``tests/test_conv.py``). Layout NHWC, kernels HWIO (``nnx.Conv``'s).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from nalu_jax.units.precision import einsum, matmul

#: Toeplitz when its multiply count is at most this many times im2col's (it moves far less memory)
TOEPLITZ_MAX_RATIO = 4.0
#: else bands when W ≤ this × kw, else im2col. 28×28 digit CNN on the idle 2-core EPYC: 640
#: images, forward + input and kernel gradients, conv1 72 ms against im2col's 132, conv2 122
#: against 180 (whole-row bands); blocks of kw − 1 columns cut the CNN's forward + backward by
#: 9% at 640 images and 13–16% at 128 (WORKSPACE at bcf7708, "Profile: sequence step")
BAND_MAX_RATIO = 8.0


def _pads(size: int, padding: str) -> tuple[int, int]:
    if padding == "VALID":
        return 0, 0
    return (size - 1) // 2, size - 1 - (size - 1) // 2  # lax's SAME for stride 1


def output_side(side: int, size: int, padding: str) -> int:
    return side if padding == "SAME" else side - size + 1


def use_toeplitz(in_shape, kernel_shape, padding: str) -> bool:
    """Whether the dense matrix costs at most ``TOEPLITZ_MAX_RATIO`` × im2col's multiplies."""
    (h, w), (kh, kw) = in_shape, kernel_shape[:2]
    out = output_side(h, kh, padding) * output_side(w, kw, padding)
    return h * w * out <= TOEPLITZ_MAX_RATIO * out * kh * kw


def method(in_shape, kernel_shape, padding: str) -> str:
    """``"toeplitz"``, ``"band"`` or ``"im2col"``: how ``conv2d`` computes this convolution."""
    if use_toeplitz(in_shape, kernel_shape, padding):
        return "toeplitz"
    return "band" if in_shape[1] <= BAND_MAX_RATIO * kernel_shape[1] else "im2col"


@functools.lru_cache(maxsize=32)
def axis_taps(size: int, k: int, padding: str) -> np.ndarray:
    """One-hot ``[size, out, k]`` float32 along one image axis: input position x feeds output
    position b through kernel tap j (out = size for SAME, size − k + 1 for VALID)."""
    (before, _) = _pads(k, padding)
    out = output_side(size, k, padding)
    table = np.zeros((size, out, k), np.float32)
    for j in range(k):
        for b in range(out):
            if 0 <= b + j - before < size:
                table[b + j - before, b, j] = 1.0
    return table


@functools.lru_cache(maxsize=32)
def tap_table(in_shape, kernel_hw, padding: str) -> np.ndarray:
    """One-hot ``[H·W, h·w, kh·kw]`` float32: input pixel p feeds output pixel q through tap t
    (the product of the row and column ``axis_taps``)."""
    (h, w), (kh, kw) = in_shape, kernel_hw
    table = np.einsum("yai,xbj->yxabij", axis_taps(h, kh, padding), axis_taps(w, kw, padding))
    oh, ow = table.shape[2], table.shape[3]
    return table.reshape(h * w, oh * ow, kh * kw)


def toeplitz(kernel, in_shape, padding: str):
    """Kernel ``[kh, kw, C, O]`` → the dense matrix ``[H·W·C, h·w·O]`` of the convolution."""
    kh, kw, c, o = kernel.shape
    table = jnp.asarray(tap_table(tuple(in_shape), (kh, kw), padding))
    t = einsum("pqt,tco->pcqo", table, kernel.reshape(kh * kw, c, o))
    return t.reshape(table.shape[0] * c, table.shape[1] * o)


def band_block(out_width: int, kw: int) -> int:
    """Output columns per band block: kw − 1 (a block reads block + kw − 1 input columns, so
    the band does (2kw − 2)/kw times im2col's multiplies, 1.6 for 5×5), or the whole width."""
    return max(1, min(kw - 1, out_width))


def band(kernel, block: int):
    """Kernel ``[kh, kw, C, O]`` → the banded matrix ``[kh·(block + kw − 1)·C, block·O]`` of
    one block of output columns: column x of the block's input window feeds its output column
    b through tap x − b. Every block of every row uses the same matrix."""
    kh, kw, c, o = kernel.shape
    table = jnp.asarray(axis_taps(block + kw - 1, kw, "VALID"))
    t = einsum("xbj,ijco->ixcbo", table, kernel)
    return t.reshape(kh * (block + kw - 1) * c, block * o)


def band_stack(x, kernel_hw, padding: str, block: int):
    """``[N, H, W, C]`` → ``[N, h, nb, kh·(block + kw − 1)·C]``: for each output row and each
    block of ``block`` output columns, the input window it reads (padded as the padding says,
    and on the right to whole blocks; the extra outputs are dropped by ``conv2d``)."""
    (kh, kw), (n, _, w, c) = kernel_hw, x.shape
    out = output_side(w, kw, padding)
    blocks = -(-out // block)
    (left, right) = _pads(kw, padding)
    x = jnp.pad(x, ((0, 0), _pads(kh, padding), (left, right + blocks * block - out), (0, 0)))
    h, span = x.shape[1] - kh + 1, block + kw - 1
    rows = jnp.stack([x[:, i : i + h] for i in range(kh)], axis=2)  # [N, h, kh, W', C]
    cols = [rows[:, :, :, b * block : b * block + span] for b in range(blocks)]
    return jnp.stack(cols, axis=2).reshape(n, h, blocks, kh * span * c)


def patches(x, kernel_hw, padding: str):
    """``[N, H, W, C]`` → im2col patches ``[N, h, w, kh·kw·C]`` in (i, j, c) order."""
    (kh, kw) = kernel_hw
    x = jnp.pad(x, ((0, 0), _pads(kh, padding), _pads(kw, padding), (0, 0)))
    h, w = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    cols = [x[:, i : i + h, j : j + w] for i in range(kh) for j in range(kw)]
    return jnp.concatenate(cols, axis=-1)


def _rows_matmul(a, b):
    """``a [..., K] @ b [K, O]`` as one 2-D matmul over the flattened rows of ``a``. The same
    values and gradients, bit for bit; but the transposed dot that autodiff derives for ``b``'s
    gradient then contracts one flattened axis instead of three, which XLA:CPU lays out far
    better: the 28×28 training step went from 31–33% to 34–37% of the matmul rate
    (WORKSPACE at bcf7708, "Profile: sequence step")."""
    return matmul(a.reshape(-1, a.shape[-1]), b).reshape(*a.shape[:-1], b.shape[-1])


def conv2d(x, kernel, bias, padding: str):
    """Stride-1 convolution: x ``[N, H, W, C]``, kernel ``[kh, kw, C, O]``, bias ``[O]`` →
    ``[N, h, w, O]`` (h = H for SAME, H − kh + 1 for VALID)."""
    n, hi, wi, c = x.shape
    kh, kw, _, o = kernel.shape
    h, w = output_side(hi, kh, padding), output_side(wi, kw, padding)
    how = method((hi, wi), kernel.shape, padding)
    if how == "toeplitz":
        y = matmul(x.reshape(n, hi * wi * c), toeplitz(kernel, (hi, wi), padding))
    elif how == "band":
        block = band_block(w, kw)
        y = _rows_matmul(band_stack(x, (kh, kw), padding, block), band(kernel, block))
        y = y.reshape(n, h, -1, o)[:, :, :w]
    else:
        y = _rows_matmul(patches(x, (kh, kw), padding), kernel.reshape(kh * kw * c, o))
    return y.reshape(n, h, w, o) + bias


def _windows(x):
    """``[N, H, W, C]`` (H, W cropped to even) → ``[N, H/2, W/2, C, 4]``, window in row-major."""
    n, h, w, c = x.shape
    x = x[:, : h // 2 * 2, : w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c)
    return x.transpose(0, 1, 3, 5, 2, 4).reshape(n, h // 2, w // 2, c, 4)


@jax.custom_vjp
def max_pool(x):
    """2×2 max-pooling with stride 2 (VALID: an odd last row/column is dropped), ``[N, H, W, C]``
    → ``[N, H//2, W//2, C]``; the gradient goes to the first maximum of each window in row-major
    order, as ``lax``'s select-and-scatter gives it."""
    n, h, w, c = x.shape
    return x[:, : h // 2 * 2, : w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def _max_pool_fwd(x):
    y = max_pool(x)
    return y, (x, y)


def _max_pool_bwd(res, g):
    x, y = res
    n, h, w, c = x.shape
    hit = _windows(x) == y[..., None]
    taken = jnp.zeros_like(hit[..., 0])
    first = []
    for k in range(4):  # four compares instead of a cumulative sum (a slow reduce-window on CPU)
        first.append(hit[..., k] & ~taken)
        taken = taken | hit[..., k]
    mask = jnp.stack(first, axis=-1).reshape(n, h // 2, w // 2, c, 2, 2)
    dx = jnp.where(mask, g[..., None, None], 0.0).transpose(0, 1, 4, 2, 5, 3)
    dx = dx.reshape(n, h // 2 * 2, w // 2 * 2, c)
    return (jnp.pad(dx, ((0, 0), (0, h - dx.shape[1]), (0, w - dx.shape[2]), (0, 0))),)


max_pool.defvjp(_max_pool_fwd, _max_pool_bwd)
