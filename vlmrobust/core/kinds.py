"""Question kinds: what a dataset's rows ask and what a prediction gives.

A family declares its kind in the manifest (``"kind"``); validate and score
dispatch on it. Datasets built before kinds existed have none and are ``mcq``.

| kind | rows | a prediction gives |
|---|---|---|
| ``mcq`` | per-row ``options``, ``answer`` | logits over the options, ``prediction`` or ``text`` |
| ``classification`` | ``label`` into the config's label space (stored once per config) | logits over the label space, or ``text`` |
| ``ood`` | ID and OOD images, ``is_ood``; OOD rows have no label | label-space logits |
| ``retrieval`` | images and their captions | image and text embeddings |
| ``open`` | question, reference answer, verdicts | ``text`` |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.core.errors import VlmrobustError

MCQ = "mcq"
CLASSIFICATION = "classification"
OOD = "ood"
RETRIEVAL = "retrieval"
OPEN = "open"
KINDS = (MCQ, CLASSIFICATION, OOD, RETRIEVAL, OPEN)
#: Kinds whose rows index a label space stored once per config (label_space.py).
LABEL_SPACE_KINDS = frozenset({CLASSIFICATION, OOD})
#: Columns every row of a kind must have (the writer refuses a row without them).
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    MCQ: ("id", "image", "question", "options", "answer"),
    CLASSIFICATION: ("id", "image", "label"),
    OOD: ("id", "image", "label", "is_ood"),  # label is -1 on OOD rows
    RETRIEVAL: ("id", "image", "captions"),
    OPEN: ("id", "image", "question"),
}


def check_kind(kind: str, where: str = "kind") -> str:
    """``kind`` when it is known, else a one-line error naming the known ones.

    >>> check_kind("classification")
    'classification'
    >>> check_kind("mcqs")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.VlmrobustError: kind: unknown question kind 'mcqs' (known: mcq, classification, ood, retrieval, open)
    """
    if kind not in KINDS:
        raise VlmrobustError(f"{where}: unknown question kind {kind!r} (known: {', '.join(KINDS)})")
    return kind


def dataset_kind(manifest: Mapping[str, Any], where: str = "manifest.json") -> str:
    """The kind a manifest declares; ``mcq`` when it declares none (older builds).

    >>> dataset_kind({}), dataset_kind({"kind": "ood"})
    ('mcq', 'ood')
    """
    kind = manifest.get("kind", MCQ)
    if not isinstance(kind, str):
        raise VlmrobustError(f"{where}: 'kind' must be a string, got {type(kind).__name__}; "
                             "rebuild the dataset")
    return check_kind(kind, where)
