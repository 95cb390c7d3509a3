"""Seeded per-item subsets for classification (issue 23): the half of the
reference set a temperature is fitted on (seed 001), and the K random classes
of a label-set-size config (seed 002 Fig. 2).

Every draw depends only on (seed, item key), through sha256, never on a global
RNG or on which other items exist: adding a row to a variant does not move any
other row's half or label set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def item_seed(seed: int, *parts: str) -> int:
    """A 64-bit seed: the first 8 bytes of sha256("seed␟part₁␟part₂…").

    >>> item_seed(0, "a") == item_seed(0, "a") != item_seed(1, "a")
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int, got {seed!r}")
    digest = hashlib.sha256("\x1f".join((str(int(seed)), *parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little")


def split_half(n: int, seed: int, keys: Sequence[str] | None = None,
               ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(fit rows, held-out rows): the ⌊n/2⌋ items with the smallest
    item_seed(seed, "half", key) and the rest, each sorted ascending.

    ``keys`` name the items (row ids; default the row positions "0".."n−1"), so
    an item's rank depends on its own key alone and the split does not change
    when the rows are reordered. Keys must be distinct.

    >>> a, b = split_half(6, seed=3)
    >>> len(a), len(b), sorted(a.tolist() + b.tolist()) == list(range(6))
    (3, 3, True)
    >>> split_half(6, seed=3)[0].tolist() == a.tolist()
    True
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    names = [str(i) for i in range(n)] if keys is None else list(keys)
    if len(names) != n:
        raise ValueError(f"keys must name the {n} items, got {len(names)}")
    if len(set(names)) != n:
        raise ValueError("keys must be distinct: two items share a key")
    rank = np.array([item_seed(seed, "half", k) for k in names], dtype=np.uint64)
    order = np.argsort(rank, kind="stable")
    return (np.sort(order[: n // 2]).astype(np.int64), np.sort(order[n // 2:]).astype(np.int64))


def label_subset(label: int, n_classes: int, k: int, seed: int, item_key: str) -> NDArray[np.int64]:
    """The k class ids, ascending, of one item's label-set-size config: the
    ground truth ``label`` plus k − 1 others drawn uniformly without
    replacement from the remaining C − 1, with a generator seeded by
    item_seed(seed, "labels", str(k), item_key).

    Each wrong class is in the set with probability (k − 1)/(C − 1).

    >>> s = label_subset(7, 1000, 5, seed=0, item_key="val/ILSVRC2012_val_00000001.JPEG")
    >>> len(s), 7 in s.tolist()
    (5, True)
    >>> bool((s == label_subset(7, 1000, 5, 0, "val/ILSVRC2012_val_00000001.JPEG")).all())
    True
    """
    for name, value in (("n_classes", n_classes), ("k", k), ("label", label)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be an int, got {value!r}")
    if n_classes < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    if not 1 <= k <= n_classes:
        raise ValueError(f"k must be in [1, {n_classes}] (the label space), got {k}")
    if not 0 <= label < n_classes:
        raise ValueError(f"label must be a class id in [0, {n_classes}), got {label}")
    if not isinstance(item_key, str) or not item_key:
        raise ValueError(f"item_key must be a non-empty string, got {item_key!r}")
    rng = np.random.default_rng(item_seed(seed, "labels", str(int(k)), item_key))
    others = rng.choice(n_classes - 1, size=k - 1, replace=False).astype(np.int64)
    others += others >= label  # skip the ground truth: ids 0..C−2 map onto the C − 1 others
    return np.sort(np.append(others, np.int64(label)))


def label_subsets(labels: Sequence[int] | NDArray[np.integer], n_classes: int, k: int, seed: int,
                  keys: Sequence[str]) -> NDArray[np.int64]:
    """(N, k) array: row i is label_subset(labels[i], n_classes, k, seed, keys[i]).

    >>> label_subsets([0, 3], 5, 2, seed=0, keys=["a", "b"]).shape
    (2, 2)
    """
    y = np.asarray(labels)
    if y.ndim != 1 or len(keys) != y.shape[0]:
        raise ValueError(f"labels and keys must name the same rows, got {y.shape} labels and {len(keys)} keys")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    out = np.empty((y.shape[0], int(k)), dtype=np.int64)
    for i, (label, key) in enumerate(zip(y.tolist(), keys, strict=True)):
        out[i] = label_subset(label, n_classes, k, seed, key)
    return out
