"""The ``shape_bias`` block of scores.json for cue-conflict datasets (kind
``classification``, family ``cue-conflict``; seed 001 Table I, model-vs-human's
``ShapeBias`` analysis).

Each row's 16-class decision ŷ is what the classification scorer read: the
argmax of the label-space logits (a classifier's through ``group_rule
mean-prob``: the log of the mean softmax probability of a category's ImageNet
classes, model-vs-human's decision; CLIP's over the 16 category names; a
VLM's over the 16 options or their likelihoods), or the category its text
names (-1 when it names none). The shape category is the row's ``label``, the
texture category its ``texture_label`` (-1: no texture cue, e.g.
Stylized-ImageNet). Per config, over the stimuli with a texture cue:

    shape bias = #{ŷ = shape} / (#{ŷ = shape} + #{ŷ = texture})   over shape ≠ texture

(:func:`vlmrobust.metrics.holistic.shape_bias.shape_bias`); ``shape_accuracy`` and
``texture_accuracy`` are model-vs-human's fraction-correct-shape / -texture
(those decisions on the conflict stimuli over ALL stimuli of the config);
``accuracy`` (16-class, against the shape label) is the classification
scorer's. A config without texture cues gets no block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.evaluation.scoring.common import derived_seed, json_num
from vlmrobust.metrics.holistic.shape_bias import ShapeBias, shape_bias, shape_bias_per_category

FAMILY = "cue-conflict"
TEXTURE_COLUMN = "texture_label"
NO_TEXTURE = -1
N_BOOTSTRAP = 1000


def _block(r: ShapeBias) -> dict[str, Any]:
    return {"n": r.n_stimuli, "n_conflict": r.n_conflict, "shape_decisions": r.shape_decisions,
            "texture_decisions": r.texture_decisions, "shape_bias": json_num(r.shape_bias),
            "shape_accuracy": json_num(r.fraction_shape),
            "texture_accuracy": json_num(r.fraction_texture)}


def shape_bias_ci(decisions: NDArray[np.int64], shapes: NDArray[np.int64],
                  textures: NDArray[np.int64], seed: int, n_boot: int = N_BOOTSTRAP,
                  level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the shape bias, resampling the conflict
    stimuli with replacement (seeded; None when no draw has a cued decision).

    >>> d = np.array([0, 0, 1, 1]); s = np.zeros(4, dtype=np.int64); t = np.ones(4, dtype=np.int64)
    >>> lo, hi = shape_bias_ci(d, s, t, seed=0)
    >>> 0.0 <= lo <= 0.5 <= hi <= 1.0
    True
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    conflict = shapes != textures
    sh = (decisions == shapes)[conflict].astype(np.float64)
    tx = (decisions == textures)[conflict].astype(np.float64)
    if sh.size == 0:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, sh.size, size=(n_boot, sh.size))
    s, t = sh[draws].sum(axis=1), tx[draws].sum(axis=1)
    ok = (s + t) > 0
    if not ok.any():
        return None
    ratio = s[ok] / (s[ok] + t[ok])
    a = (1.0 - level) / 2.0
    return float(np.quantile(ratio, a)), float(np.quantile(ratio, 1.0 - a))


def shape_bias_config(predicted: Sequence[int] | NDArray[np.int64],
                      labels: Sequence[int] | NDArray[np.int64],
                      textures: Sequence[int] | NDArray[np.int64],
                      names: Sequence[str], seed: int = 0) -> dict[str, Any] | None:
    """The block of one config: ``predicted`` the decisions (label-space
    indices, -1 for none), ``labels`` the shape categories, ``textures`` the
    texture categories (-1 where a stimulus has none), ``names`` the label
    space's class names. None when no stimulus has a texture cue."""
    d, s, t = (np.asarray(a, dtype=np.int64) for a in (predicted, labels, textures))
    if not d.shape == s.shape == t.shape or d.ndim != 1:
        raise ValueError(f"predicted, labels and textures must be 1-D of one length, got "
                         f"{d.shape}, {s.shape}, {t.shape}")
    n = len(names)
    for what, arr, lo in (("labels", s, 0), ("textures", t, NO_TEXTURE), ("predicted", d, -1)):
        if arr.size and (arr.min() < lo or arr.max() >= n):
            raise ValueError(f"{what} must lie in [{lo}, {n}), got {int(arr.min())}..{int(arr.max())}")
    cued = t != NO_TEXTURE
    if not cued.any():
        return None
    d, s, t = d[cued], s[cued], t[cued]
    label = np.asarray([*names, ""], dtype=object)  # index -1 -> "" (no decision)
    dn, sn, tn = label[d], label[s], label[t]
    out = _block(shape_bias(dn, sn, tn))
    ci = shape_bias_ci(d, s, t, seed)
    out["shape_bias_ci"] = None if ci is None else [ci[0], ci[1]]
    out["per_category"] = {c: _block(r) for c, r in shape_bias_per_category(dn, sn, tn).items()}
    return out


def shape_bias_section(columns: Mapping[str, NDArray[Any]], config: NDArray[np.object_],
                       configs: Sequence[str], answer: NDArray[np.int64],
                       predicted: NDArray[np.int64], names_of: Mapping[str, Sequence[str]],
                       seed: int = 0) -> dict[str, dict[str, Any]] | None:
    """{config: block} over the configs whose rows carry texture cues; None when
    the dataset has no ``texture_label`` column (not a cue-conflict dataset).
    ``names_of`` gives each config's label-space class names."""
    if TEXTURE_COLUMN not in columns:
        return None
    textures = np.asarray(columns[TEXTURE_COLUMN], dtype=np.int64)
    out: dict[str, dict[str, Any]] = {}
    for cfg in configs:
        rows = np.flatnonzero(config == cfg)
        block = shape_bias_config(predicted[rows], answer[rows], textures[rows], names_of[cfg],
                                  derived_seed(seed, "shape-bias", cfg))
        if block is not None:
            out[cfg] = block
    return out or None
