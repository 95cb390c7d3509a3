"""Logits over a whole label space (kind ``classification`` / ``ood``).

A config's label space (:mod:`vlmrobust.core.label_space`) is read once per
config by ``predict`` and handed to the adapter with each batch; an adapter
answers with one logit per class, in label-space order, or, on a K-config row
(``candidates``: indices into the label space, in presentation order), one per
candidate, in candidate order.

- 1000-way ImageNet classifiers: a class's logit is read off the 1,000 class
  logits through its ``imagenet_ids`` by the space's ``group_rule``:
  ``max`` (the standard ObjectNet protocol), or ``mean-prob``, the log of the
  mean softmax probability of the group (model-vs-human's 16-class decision).
  A space with a class that has no ``imagenet_ids`` (Flowers102, Cars, ...)
  cannot be read by them and is refused in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import LabelSpace

NUM_IMAGENET_CLASSES = 1000


@dataclass(frozen=True)
class ImagenetGroups:
    """A label space's ImageNet groups as a padded index matrix: ``index``
    (n_classes, G) int64, ``valid`` (n_classes, G) bool (False on padding, which
    repeats the group's first id), and the space's ``group_rule``."""

    index: NDArray[np.int64]
    valid: NDArray[np.bool_]
    group_rule: str

    @property
    def singletons(self) -> bool:
        return bool(self.index.shape[1] == 1)


def imagenet_groups(space: LabelSpace, model: str, where: str = "") -> ImagenetGroups:
    """The padded groups of ``space``; a class without ``imagenet_ids`` is
    refused in one line naming it (a 1000-way classifier cannot score it).

    >>> from vlmrobust.core.label_space import ClassEntry
    >>> g = imagenet_groups(LabelSpace("t", (ClassEntry("a", imagenet_ids=(3,)),
    ...                                       ClassEntry("b", imagenet_ids=(5, 7)))), "m")
    >>> g.index.tolist(), g.valid.tolist()
    ([[3, 3], [5, 7]], [[True, False], [True, True]])
    """
    missing = [i for i, c in enumerate(space.classes) if not c.imagenet_ids]
    if missing:
        first = space.classes[missing[0]].name
        at = f"{where}: " if where else ""
        raise VlmrobustError(
            f"{at}{model} is a 1000-way ImageNet classifier, but {len(missing)} of the "
            f"{len(space)} classes of label space {space.name!r} (first: {first!r}) have no "
            "imagenet_ids; score this dataset with a clip or vlm model")
    width = max(len(c.imagenet_ids) for c in space.classes)
    index = np.empty((len(space), width), dtype=np.int64)
    valid = np.zeros((len(space), width), dtype=bool)
    for i, c in enumerate(space.classes):
        ids = list(c.imagenet_ids)
        index[i] = ids + [ids[0]] * (width - len(ids))
        valid[i, :len(ids)] = True
    return ImagenetGroups(index, valid, space.group_rule)


def space_logits(class_logits: NDArray[Any], groups: ImagenetGroups) -> NDArray[np.float32]:
    """(B, n_classes) logits from (B, 1000) ImageNet class logits z:

    - ``max``: ``l_c = max_{j in G_c} z_j``;
    - ``mean-prob``: ``l_c = log( (1/|G_c|) Σ_{j in G_c} softmax(z)_j )``
      ``= logsumexp_{j in G_c} z_j − log|G_c| − logsumexp_j z_j``.

    >>> z = np.log(np.array([[0.1, 0.2, 0.3, 0.4]], dtype=np.float32))
    >>> from vlmrobust.core.label_space import ClassEntry
    >>> sp = LabelSpace("t", (ClassEntry("a", imagenet_ids=(0, 3)),
    ...                       ClassEntry("b", imagenet_ids=(1,))))
    >>> space_logits(z, imagenet_groups(sp, "m")).astype(float).round(4).tolist()
    [[-0.9163, -1.6094]]
    >>> sp = LabelSpace("t", sp.classes, "mean-prob")
    >>> np.exp(space_logits(z, imagenet_groups(sp, "m"))).astype(float).round(4).tolist()
    [[0.25, 0.2]]
    """
    z = np.asarray(class_logits, dtype=np.float32)
    if z.ndim != 2 or z.shape[1] <= int(groups.index.max()):
        raise ValueError(f"class logits must be (B, {NUM_IMAGENET_CLASSES}), got {z.shape}")
    if groups.singletons:
        return np.ascontiguousarray(z[:, groups.index[:, 0]])
    gathered = z[:, groups.index]  # (B, n, G); padding repeats the group's first id
    if groups.group_rule == "max":
        out: NDArray[np.float32] = gathered.max(axis=2)
        return out
    z64 = z.astype(np.float64)
    top = z64.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(z64 - top).sum(axis=1)) + top[:, 0]  # logsumexp over 1000
    g = np.where(groups.valid, gathered.astype(np.float64), -np.inf)
    g_top = g.max(axis=2, keepdims=True)
    group_lse = np.log(np.exp(g - g_top).sum(axis=2)) + g_top[..., 0]
    sizes = groups.valid.sum(axis=1)
    return (group_lse - np.log(sizes)[None, :] - log_norm[:, None]).astype(np.float32)


def row_candidates(row: Mapping[str, Any], n_classes: int, where: str) -> NDArray[np.int64] | None:
    """A K-config row's candidate classes (checked indices into the label space),
    or None for a row over the whole space (no ``candidates``, or an empty list)."""
    cands = row.get("candidates")
    if cands is None or len(cands) == 0:
        return None
    arr = np.asarray(list(cands), dtype=np.int64)
    if arr.size < 2 or len(set(arr.tolist())) != arr.size \
            or arr.min() < 0 or arr.max() >= n_classes:
        raise VlmrobustError(f"{where}: 'candidates' {arr.tolist()[:10]} must be at least two "
                             f"distinct class indices in 0..{n_classes - 1}; rebuild the dataset")
    return arr


def per_row(logits: NDArray[Any], rows: Sequence[Mapping[str, Any]],
            n_classes: int) -> list[NDArray[np.float32]]:
    """Each row's logits: the whole space, or its candidates in their order."""
    out = []
    for i, row in enumerate(rows):
        cands = row_candidates(row, n_classes, f"row {row.get('id', i)!r}")
        vec = np.asarray(logits[i], dtype=np.float32)
        out.append(vec if cands is None else np.ascontiguousarray(vec[cands]))
    return out


def class_names(space: LabelSpace, cands: NDArray[np.int64] | None) -> list[str]:
    """The label texts a row is asked over (:attr:`LabelSpace.texts`: a class's
    ``text``, else its name): every class, or its candidates in order."""
    names = space.texts
    return list(names) if cands is None else [names[int(c)] for c in cands]


def class_synonyms(space: LabelSpace, cands: NDArray[np.int64] | None) -> list[tuple[str, ...]]:
    """Per answerable class (as :func:`class_names`), its synonyms."""
    classes = space.classes if cands is None else [space.classes[int(c)] for c in cands]
    return [c.synonyms for c in classes]
