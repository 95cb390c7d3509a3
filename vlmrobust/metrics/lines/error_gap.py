"""Seed 002's relative error gap (Fig. 4, App. B.2): how many times a model's
error rate is a reference model's, per label-set size K.

Seed 002, App. B.2: "in two-way classification on ImageNet, VLMs have a 5.7%
error rate, while CLIP has a 0.2% error rate, resulting in a 28.5x gap"; Fig. 4
plots "the relative error rate between LLaVA1.5-7B and CLIP-L" against K.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _accuracies(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a number or 1-D, got shape {arr.shape}")
    bad = arr[~((arr >= 0.0) & (arr <= 1.0))]  # NaN fails both comparisons
    if bad.size:
        raise ValueError(f"{name} must hold accuracies in [0, 1], got {float(bad[0])!r}")
    return arr


def relative_error_gap(accuracy: ArrayLike, reference_accuracy: ArrayLike) -> NDArray[np.float64]:
    """Elementwise ``gap = (1 − acc) / (1 − acc_ref)``: the model's error rate
    over the reference's (one entry per K, the two arrays aligned). A gap of 1
    is parity; above 1 the model errs more. Where the reference makes no error
    the gap is ``inf`` (``nan`` when the model makes none either).

    >>> relative_error_gap([0.943, 0.820], [0.998, 0.975]).round(1).tolist()
    [28.5, 7.2]
    >>> relative_error_gap(1.0, 1.0).tolist(), relative_error_gap(0.5, 1.0).tolist()
    (nan, inf)
    """
    acc = _accuracies(accuracy, "accuracy")
    ref = _accuracies(reference_accuracy, "reference_accuracy")
    if acc.shape != ref.shape:
        raise ValueError(f"accuracy has shape {acc.shape}, reference_accuracy {ref.shape}; "
                         "give one reference accuracy per accuracy")
    err, ref_err = 1.0 - acc, 1.0 - ref
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(err / ref_err, dtype=np.float64)
