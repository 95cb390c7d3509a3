"""Per-item random generators derived from a hash of (spec seed, names...), so
that an item's randomness depends only on itself: adding, removing or editing
one variant never changes the questions of another, and no global RNG is used.

>>> a = item_rng(1, "imagenet-r", "n01443537/x.jpg").integers(1 << 30)
>>> b = item_rng(1, "imagenet-r", "n01443537/x.jpg").integers(1 << 30)
>>> c = item_rng(2, "imagenet-r", "n01443537/x.jpg").integers(1 << 30)
>>> bool(a == b), bool(a == c)
(True, False)
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *parts: str) -> int:
    """A 64-bit seed from sha256 over the spec seed and ``parts`` (NUL-separated,
    so ("ab", "c") and ("a", "bc") differ)."""
    text = "\0".join([str(int(seed)), *parts])
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def item_rng(seed: int, *parts: str) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, *parts))


def key_hash(key: str, length: int = 12) -> str:
    """Short stable hex digest of a source key, used in question ids.

    >>> key_hash("a/b.jpg")
    '4a51636246e7'
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:length]
