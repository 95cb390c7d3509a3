"""Accuracy per ImageNet-X factor (Idrissi et al. 2023, "ImageNet-X: Understanding
Model Mistakes with Factor of Variation Annotations"): for each factor f,

    acc_f = Σ_i 1[f ∈ F(i)]·1[ŷ_i = y_i] / Σ_i 1[f ∈ F(i)],

over the scored images i that carry an annotation, F(i) being the factors
annotated for image i (one in the top-factor file seed 001 uses, possibly
several in the multi-factor file). A factor no scored image carries has n = 0
and accuracy None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlmrobust.core.imagenet_x import FACTORS, NAMED_FACTORS

__all__ = ["FACTORS", "NAMED_FACTORS", "factor_accuracies"]


def factor_accuracies(correct: ArrayLike, keys: Sequence[str],
                      annotations: Mapping[str, frozenset[str]],
                      factors: Sequence[str] = FACTORS) -> dict[str, dict[str, float | int | None]]:
    """{factor: {"n": images with the factor, "accuracy": acc_f or None}} plus
    ``"annotated"`` (how many scored images have an annotation at all).

    >>> ann = {"a": frozenset({"pose"}), "b": frozenset({"pose", "color"}), "c": frozenset()}
    >>> out = factor_accuracies([1, 0, 1, 1], ["a", "b", "c", "d"], ann, ("pose", "color"))
    >>> out["pose"], out["color"], out["annotated"]
    ({'n': 2, 'accuracy': 0.5}, {'n': 1, 'accuracy': 0.0}, {'n': 3, 'accuracy': 0.6666666666666666})
    """
    ok = np.asarray(correct, dtype=bool)
    if ok.shape != (len(keys),):
        raise ValueError(f"correct has shape {ok.shape}, expected ({len(keys)},)")
    known = np.array([k in annotations for k in keys], dtype=bool)
    out: dict[str, dict[str, float | int | None]] = {}
    for f in factors:
        has = np.array([f in annotations.get(k, ()) for k in keys], dtype=bool)
        n = int(has.sum())
        out[f] = {"n": n, "accuracy": float(ok[has].mean()) if n else None}
    n_known = int(known.sum())
    out["annotated"] = {"n": n_known, "accuracy": float(ok[known].mean()) if n_known else None}
    return out
