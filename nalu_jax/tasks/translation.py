"""Number translation (docs/protocols.md, "Number translation"): the numbers 1–999 spelled in English, as token ids.

``spell(234) == "two hundred and thirty four"``; the vocabulary has 30 tokens (``VOCAB``: pad,
"and", one … nineteen, twenty … ninety, hundred) and a number is at most 5 tokens, so every
number is a ``[5]`` int32 row padded with id 0 at the end. ``split(seed)`` is the fixed
169 / 200 / 630 train / valid / test split: train holds 1–19 and, for every other token, the
first number of a seeded permutation of 20–999 that uses it; the rest of the permutation fills
test, then valid, then the remaining train places (the NAU paper's construction).
"""

from __future__ import annotations

import numpy as np

ONES = (
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
PAD = "<pad>"
VOCAB = (PAD, "and", *ONES, *TENS, "hundred")
TOKEN_IDS = {token: i for i, token in enumerate(VOCAB)}
MAX_TOKENS = 5
SPLIT_SIZES = {"train": 169, "valid": 200, "test": 630}


def words(n: int) -> list[str]:
    """The English words of ``n`` in 1–999, e.g. 105 → ["one", "hundred", "and", "five"]."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 1 <= n <= 999:
        raise ValueError(f"number must be an integer in 1–999, got {n!r}.")
    hundreds, rest = divmod(int(n), 100)
    out = [ONES[hundreds - 1], "hundred"] if hundreds else []
    if hundreds and rest:
        out.append("and")
    if 0 < rest < 20:
        out.append(ONES[rest - 1])
    elif rest:
        tens, ones = divmod(rest, 10)
        out.append(TENS[tens - 2])
        if ones:
            out.append(ONES[ones - 1])
    return out


def spell(n: int) -> str:
    return " ".join(words(n))


def encode(n: int) -> np.ndarray:
    """Token ids of ``n`` padded with 0 to ``[MAX_TOKENS]`` int32."""
    ids = [TOKEN_IDS[w] for w in words(n)]
    return np.asarray(ids + [0] * (MAX_TOKENS - len(ids)), np.int32)


def split(seed: int = 0) -> dict:
    """``{"train" [169], "valid" [200], "test" [630]}`` arrays of numbers (see module doc)."""
    train = list(range(1, 20))
    missing = set(range(1, len(VOCAB))) - {i for n in train for i in encode(n)}
    valid, test = [], []
    for n in (np.random.default_rng(seed).permutation(980) + 20).tolist():
        ids = set(encode(n).tolist()) - {0}
        if missing & ids:  # a token train has not seen yet goes to train first
            train.append(n)
            missing -= ids
        elif len(test) < SPLIT_SIZES["test"]:
            test.append(n)
        elif len(valid) < SPLIT_SIZES["valid"]:
            valid.append(n)
        else:
            train.append(n)
    return {
        k: np.asarray(v, np.int32) for k, v in (("train", train), ("valid", valid), ("test", test))
    }


def dataset(numbers) -> tuple[np.ndarray, np.ndarray]:
    """numbers ``[N]`` → (tokens ``[N, MAX_TOKENS]`` int32, values ``[N]`` float32)."""
    numbers = np.asarray(numbers)
    tokens = np.stack([encode(int(n)) for n in numbers]) if numbers.size else np.zeros((0, 5))
    return tokens.astype(np.int32), numbers.astype(np.float32)
