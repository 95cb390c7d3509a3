"""Shape bias on cue-conflict stimuli (Geirhos et al. 2019), as model-vs-human
computes it.

Each stimulus has a shape class (its folder: ``<category>/``) and a texture
class (the file name ``<shape><i>-<texture><j>.png``). Only stimuli whose two
classes differ are informative; on them a decision is a *shape* decision if it
names the shape class and a *texture* decision if it names the texture class
(any other answer is neither)::

    shape bias = shape decisions / (shape decisions + texture decisions)

model-vs-human's ``fraction-correct-shape`` / ``-texture`` count decisions on
the conflict stimuli only but divide by ALL stimuli, equal-class ones included;
:class:`ShapeBias` reports those two fractions with the same denominators so
the numbers compare with theirs (the ratio is unaffected).

A classifier's 16-class decision (:func:`category_decisions`) averages the
probabilities of each category's fine classes; the category → class-index
lists themselves belong to the cue-conflict builder, not here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

_STIMULUS = re.compile(r"^(?:.*_)?([a-z]+)(\d+)-([a-z]+)(\d+)\.png$")


def cue_conflict_classes(name: str) -> tuple[str, str]:
    """(shape, texture) classes from a stimulus name ``[...]<shape><i>-<texture><j>.png``.

    A leading folder (``<category>/``) or model-vs-human's ``<prefix>_`` is
    allowed; the shape class comes from the file name, and when a folder is
    given it must agree.

    >>> cue_conflict_classes("bear/bear1-bird2.png")
    ('bear', 'bird')
    >>> cue_conflict_classes("cat7-cat3.png")
    ('cat', 'cat')
    """
    folder, _, base = name.rpartition("/")
    m = _STIMULUS.match(base)
    if m is None:
        raise ValueError(f"stimulus name {name!r} is not <shape><i>-<texture><j>.png "
                         "(e.g. 'bear/bear1-bird2.png')")
    shape, texture = m.group(1), m.group(3)
    if folder and folder.rpartition("/")[2] != shape:
        raise ValueError(f"stimulus {name!r} is in folder {folder!r} but its shape class is "
                         f"{shape!r}: move it to {shape}/")
    return shape, texture


@dataclass(frozen=True)
class ShapeBias:
    """Shape-bias counts of one decision maker over a set of stimuli.

    ``shape_bias`` is NaN when no conflict stimulus got a shape or texture decision.
    """

    n_stimuli: int  # all stimuli, equal-class ones included
    n_conflict: int  # stimuli whose shape and texture classes differ
    shape_decisions: int
    texture_decisions: int

    def __post_init__(self) -> None:
        if not 0 <= self.n_conflict <= self.n_stimuli:
            raise ValueError(f"n_conflict must be in [0, n_stimuli={self.n_stimuli}], "
                             f"got {self.n_conflict}")
        if min(self.shape_decisions, self.texture_decisions) < 0 or \
                self.shape_decisions + self.texture_decisions > self.n_conflict:
            raise ValueError(f"shape + texture decisions ({self.shape_decisions} + "
                             f"{self.texture_decisions}) must be within the {self.n_conflict} "
                             "conflict stimuli")

    @property
    def shape_bias(self) -> float:
        cued = self.shape_decisions + self.texture_decisions
        return self.shape_decisions / cued if cued else math.nan

    @property
    def fraction_shape(self) -> float:
        """Shape decisions / all stimuli (model-vs-human's fraction-correct-shape)."""
        return self.shape_decisions / self.n_stimuli if self.n_stimuli else math.nan

    @property
    def fraction_texture(self) -> float:
        """Texture decisions / all stimuli (model-vs-human's fraction-correct-texture)."""
        return self.texture_decisions / self.n_stimuli if self.n_stimuli else math.nan


def _columns(decisions: Sequence[str] | ArrayLike, shapes: Sequence[str] | ArrayLike,
             textures: Sequence[str] | ArrayLike) -> tuple[NDArray[np.str_], ...]:
    d, s, t = (np.asarray(a).astype(str) for a in (decisions, shapes, textures))
    for name, arr in (("decisions", d), ("shape_classes", s), ("texture_classes", t)):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not d.shape == s.shape == t.shape:
        raise ValueError(f"decisions, shape_classes and texture_classes must have one entry per "
                         f"stimulus, got {d.size}, {s.size} and {t.size}")
    return d, s, t


def shape_bias(decisions: Sequence[str] | ArrayLike, shape_classes: Sequence[str] | ArrayLike,
               texture_classes: Sequence[str] | ArrayLike) -> ShapeBias:
    """Shape bias = #{ŷ = shape} / (#{ŷ = shape} + #{ŷ = texture}) over stimuli with
    shape ≠ texture; ŷ is the 16-class decision for each stimulus.

    >>> r = shape_bias(["cat", "dog", "car", "cat"], ["cat", "cat", "cat", "cat"],
    ...                ["dog", "dog", "dog", "cat"])
    >>> r.shape_decisions, r.texture_decisions, r.shape_bias, r.fraction_shape
    (1, 1, 0.5, 0.25)
    """
    d, s, t = _columns(decisions, shape_classes, texture_classes)
    conflict = s != t
    return ShapeBias(n_stimuli=int(d.size), n_conflict=int(conflict.sum()),
                     shape_decisions=int((conflict & (d == s)).sum()),
                     texture_decisions=int((conflict & (d == t)).sum()))


def shape_bias_per_category(decisions: Sequence[str] | ArrayLike,
                            shape_classes: Sequence[str] | ArrayLike,
                            texture_classes: Sequence[str] | ArrayLike) -> dict[str, ShapeBias]:
    """:func:`shape_bias` over the stimuli of each SHAPE category (model-vs-human's
    per-category matrix plot groups by the shape class), in sorted order.

    >>> per = shape_bias_per_category(["cat", "dog", "dog"], ["cat", "cat", "dog"],
    ...                               ["dog", "dog", "cat"])
    >>> {c: r.shape_bias for c, r in per.items()}
    {'cat': 0.5, 'dog': 1.0}
    """
    d, s, t = _columns(decisions, shape_classes, texture_classes)
    return {str(c): shape_bias(d[s == c], s[s == c], t[s == c]) for c in np.unique(s)}


def category_decisions(probs: ArrayLike, categories: Mapping[str, Sequence[int]]) -> NDArray[np.str_]:
    """16-class decisions from classifier probabilities over the fine label space:
    ŷ = argmax_c mean_{k ∈ I_c} p_k, where I_c are category c's class indices
    (model-vs-human averages each category's ImageNet-class probabilities).
    Categories are taken in sorted name order, so a tie goes to the first name.

    >>> category_decisions([[0.5, 0.1, 0.2, 0.2], [0.1, 0.1, 0.4, 0.4]],
    ...                    {"dog": [2, 3], "cat": [0, 1]}).tolist()  # means 0.3/0.2, 0.1/0.4
    ['cat', 'dog']
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"probs must be (N, K), got shape {p.shape}")
    if not categories:
        raise ValueError("categories is empty: give each category its class indices")
    names = sorted(categories)
    means = np.empty((p.shape[0], len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        idx = np.asarray(categories[name])
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"category {name!r} needs a non-empty list of class indices, got "
                             f"{categories[name]!r}")
        if (idx < 0).any() or (idx >= p.shape[1]).any():
            raise ValueError(f"category {name!r} has class index {int(idx[(idx < 0) | (idx >= p.shape[1])][0])} "
                             f"outside [0, {p.shape[1]})")
        means[:, j] = p[:, idx].mean(axis=1)
    return np.asarray(names)[means.argmax(axis=1)]
