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

from collections.abc import Mapping, Sequence
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


def config_kind(manifest: Mapping[str, Any], config: str, where: str = "manifest.json") -> str:
    """The kind of one config: its entry in ``config_kinds`` (a dataset whose
    configs ask different kinds, e.g. failure-discovery's ``open`` and ``mcq``),
    else the dataset's kind.

    >>> m = {"config_kinds": {"open": "open"}}
    >>> config_kind(m, "open"), config_kind(m, "mcq")
    ('open', 'mcq')
    """
    per = manifest.get("config_kinds") or {}
    if not isinstance(per, Mapping):
        raise VlmrobustError(f"{where}: 'config_kinds' must map config names to kinds; "
                             "rebuild the dataset")
    kind = per.get(config)
    return dataset_kind(manifest, where) if kind is None else check_kind(str(kind), where)


def refuse_open(manifest: Mapping[str, Any], configs: Sequence[str], where: str) -> None:
    """One line when any of ``configs`` is kind ``open``: free-form questions
    with verdicts, which predict / validate / score do not treat as choices."""
    open_ = [c for c in configs if config_kind(manifest, c, where) == OPEN]
    if open_:
        others = [str(c) for c in (manifest.get("configs") or {})
                  if config_kind(manifest, str(c), where) != OPEN]
        fix = f"pass --config {others[0]}" if others else "use a config of another kind"
        raise VlmrobustError(f"{where}: config {open_[0]!r} is kind open (free-form questions "
                             f"with verifier verdicts; not predicted or scored as choices); {fix}")
