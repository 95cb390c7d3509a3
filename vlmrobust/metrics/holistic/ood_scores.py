"""OOD scores from label-space logits (seed 001 §OOD): higher means "more
in-distribution", the convention :mod:`vlmrobust.metrics.holistic.ood` expects.

- MSP (Hendrycks & Gimpel): max_k softmax(z)_k, for classifiers and fine-tuned models;
- MCM (Ming et al.) for zero-shot CLIP: max_k softmax(cos / τ)_k with τ = 1 over
  the image's cosine similarities to the class prompts. CLIP's own logits are
  ``logit_scale · cos``; :func:`clip_cosines` undoes the scale first;
- max-logit: max_k z_k;
- energy (Liu et al.): E(z) = −T · log Σ_k exp(z_k / T); the score is −E.

Logits are (N, K_max) with −inf padding for rows of fewer options
(see :mod:`vlmrobust.metrics.uncertainty`); adapters' ``option_logits`` pad with
NaN, which the scorer turns into −inf before any metric sees it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.uncertainty import _as_logits, softmax

# Cosines of unit vectors are in [−1, 1]; float32 embeddings overshoot by ~1e-7.
_COSINE_SLACK = 1e-4


def msp(logits: ArrayLike, temperature: float = 1.0) -> NDArray[np.float64]:
    """Maximum softmax probability, MSP(z) = max_k exp(z_k/T) / Σ_j exp(z_j/T).

    >>> msp([[0.0, 0.0], [np.log(3.0), 0.0]]).round(6).tolist()
    [0.5, 0.75]
    """
    return np.asarray(softmax(logits, temperature).max(axis=1), dtype=np.float64)


def max_logit(logits: ArrayLike) -> NDArray[np.float64]:
    """Max-logit score, max_k z_k.

    >>> max_logit([[1.0, 3.0, -np.inf], [0.5, -2.0, 0.0]]).tolist()
    [3.0, 0.5]
    """
    return np.asarray(_as_logits(logits).max(axis=1), dtype=np.float64)


def energy_score(logits: ArrayLike, temperature: float = 1.0) -> NDArray[np.float64]:
    """Negative energy, −E(z) = T · log Σ_k exp(z_k / T) (log-sum-exp, max factored out).

    The energy itself is E = −T · logsumexp(z / T); low energy means
    in-distribution, so the score returned here is −E (higher = more ID).

    >>> energy_score([[0.0, 0.0]]).round(6).tolist()  # log 2
    [0.693147]
    >>> energy_score([[2.0, 2.0]], temperature=2.0).round(6).tolist()  # 2 · (1 + log 2)
    [3.386294]
    """
    if isinstance(temperature, bool) or not (isinstance(temperature, (int, float)) and temperature > 0
                                             and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    z = _as_logits(logits) / temperature
    top = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - top).sum(axis=1)) + top[:, 0]
    return np.asarray(temperature * lse, dtype=np.float64)


def clip_cosines(logits: ArrayLike, logit_scale: float) -> NDArray[np.float64]:
    """Cosine similarities from CLIP logits: cos = logits / s, s = exp(logit_scale param).

    ``logit_scale`` is the multiplier itself (100 for OpenAI CLIP, i.e.
    ``model.logit_scale.exp()``), not its logarithm. The result must lie in
    [−1, 1] (up to float slack): anything else means the scale is wrong.

    >>> clip_cosines([[30.0, -10.0]], 100.0).tolist()
    [[0.3, -0.1]]
    """
    if isinstance(logit_scale, bool) or not (isinstance(logit_scale, (int, float, np.floating))
                                             and logit_scale > 0 and math.isfinite(logit_scale)):
        raise ValueError(f"logit_scale must be a finite number > 0 (e.g. 100.0), got {logit_scale!r}")
    cos = _as_logits(logits) / float(logit_scale)
    _check_cosines(cos, f"logits / logit_scale ({logit_scale!r})")
    return np.asarray(cos, dtype=np.float64)


def _check_cosines(cos: NDArray[np.float64], what: str) -> None:
    finite = cos[np.isfinite(cos)]
    bad = finite[np.abs(finite) > 1.0 + _COSINE_SLACK]
    if bad.size:
        raise ValueError(f"{what} must be cosine similarities in [-1, 1], got {float(bad[0])!r}; "
                         "pass CLIP logits through clip_cosines(logits, logit_scale) first")


def mcm(cosines: ArrayLike, tau: float = 1.0) -> NDArray[np.float64]:
    """Maximum concept matching, MCM = max_k exp(cos_k/τ) / Σ_j exp(cos_j/τ), τ = 1.

    ``cosines`` are the image's cosine similarities to the K class prompts
    (−inf pads missing options); with τ = 1 the score lies in [1/K, e²/(e² + K − 1)].

    >>> mcm([[0.3, 0.3]]).tolist()
    [0.5]
    >>> round(float(mcm([[1.0, -1.0]])[0]), 6)  # e / (e + e⁻¹)
    0.880797
    """
    cos = _as_logits(cosines)
    _check_cosines(cos, "cosines")
    return msp(cos, tau)
