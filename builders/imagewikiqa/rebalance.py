"""Answer-letter rebalancing: over N rows with K options, every answer position
is used floor(N/K) or ceil(N/K) times (so within ±1 of N/K)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def balanced_positions(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A seeded arrangement of answer positions: position p appears
    ``n // k + (1 if p < n % k else 0)`` times before shuffling.

    >>> pos = balanced_positions(10, 4, np.random.default_rng(0))
    >>> sorted(np.bincount(pos, minlength=4).tolist())
    [2, 2, 3, 3]
    """
    if k < 1 or n < 0:
        raise ValueError(f"need n >= 0 and k >= 1, got n={n}, k={k}")
    base = np.arange(n, dtype=np.int64) % k
    # Which positions get the n % k extra uses is seeded too, not always A, B, ...
    relabel = rng.permutation(k)
    return rng.permutation(relabel[base])


def place_answer(choices: Sequence[str], answer: int, target: int,
                 rng: np.random.Generator) -> tuple[tuple[str, ...], int]:
    """Reorder ``choices`` so the correct one sits at ``target``; the distractors
    take the other positions in a seeded order.

    >>> place_answer(["right", "w1", "w2", "w3"], 0, 2, np.random.default_rng(1))[0][2]
    'right'
    """
    k = len(choices)
    if not 0 <= answer < k or not 0 <= target < k:
        raise ValueError(f"answer {answer} / target {target} out of range 0..{k - 1}")
    wrong = [c for i, c in enumerate(choices) if i != answer]
    wrong = [wrong[int(i)] for i in rng.permutation(len(wrong))]
    out = [*wrong[:target], choices[answer], *wrong[target:]]
    return tuple(out), target
