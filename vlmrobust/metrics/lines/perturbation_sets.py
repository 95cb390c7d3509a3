"""Accuracy over natural perturbation sets: ImageNet-Vid-Robust's benign and
pm-k accuracy (Shankar et al. 2019, "Do Image Classifiers Generalize Across
Time?").

A perturbation set s is an anchor frame and the frames the release lists for
it (its neighbours within ±k frames, k = 10 in the release's ``pmsets.json``).
A frame counts as right when the predicted class is any of its valid labels
(the release's ``labels.json`` may list several). Over the S sets:

- benign accuracy = (1/S) Σ_s 1[anchor of s is right]            (their pm-0)
- pm-k accuracy   = (1/S) Σ_s Π_{i ∈ s} 1[frame i is right]      (their pm-10)

so pm-k ≤ benign, and a set whose anchor is right but one neighbour wrong
lowers pm-k only. The unit of both is the set (the anchor), not the frame: a
bootstrap interval resamples sets, which is what the per-set indicators
returned here allow.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.clustered import cluster_ids


def set_correctness(correct: ArrayLike, sets: Sequence[Hashable] | NDArray[Any],
                    anchor: ArrayLike) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Per perturbation set, in order of first appearance in ``sets``:
    (benign_s, pmk_s) with benign_s = correct[the anchor row of s] and
    pmk_s = ∧_{i ∈ s} correct_i. ``sets[i]`` names row i's set (its anchor);
    ``anchor[i]`` says whether row i is its set's anchor (exactly one per set).

    >>> b, p = set_correctness([1, 1, 0, 1, 1, 1, 0, 1], list("aaabbbcc"),
    ...                        [1, 0, 0, 1, 0, 0, 1, 0])
    >>> b.tolist(), p.tolist()
    ([True, True, False], [False, True, False])
    """
    ok = np.asarray(correct)
    is_anchor = np.asarray(anchor)
    if ok.ndim != 1 or is_anchor.shape != ok.shape or len(sets) != ok.size:
        raise ValueError(f"correct, sets and anchor must be 1-D of one length, got {ok.shape}, "
                         f"{len(sets)}, {is_anchor.shape}")
    if ok.size and not (np.isin(ok, (0, 1)).all() and np.isin(is_anchor, (0, 1)).all()):
        raise ValueError("correct and anchor must hold only 0/1 (or bools)")
    ok, is_anchor = ok.astype(bool), is_anchor.astype(bool)
    ids, n_sets = cluster_ids(sets)
    per_set = np.bincount(ids[is_anchor], minlength=n_sets)
    if n_sets and (per_set != 1).any():
        s = int(np.flatnonzero(per_set != 1)[0])
        name = sets[int(np.flatnonzero(ids == s)[0])]
        raise ValueError(f"perturbation set {name!r} has {int(per_set[s])} anchor rows, expected 1")
    benign = np.zeros(n_sets, dtype=bool)
    benign[ids[is_anchor]] = ok[is_anchor]
    pmk = np.bincount(ids, weights=~ok, minlength=n_sets) == 0
    return benign, pmk
