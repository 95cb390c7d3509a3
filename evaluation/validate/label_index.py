"""The dataset side of validation for the kinds whose rows index a label space
(vlmrobust.core.kinds; the label space is stored once per config,
vlmrobust.core.label_space).

Kind ``classification`` (issue 23): a row has ``label`` (an index into its
config's label space) and, in a K-config (label-set size K, ImageNet-D's
4-option configs), ``candidates`` (the K label-space indices shown, in
presentation order, always containing ``label``). A prediction gives logits
over the whole label space (n_classes, label-space order) or over the row's
candidates (K, candidate order), a ``prediction`` index in the same space, or
``text`` matched against the class names + synonyms (of the candidates in a
K-config) by :class:`vlmrobust.core.text.class_matcher.ClassMatcher`. So the index holds,
per row, ``n_options`` = n_classes (or K) and ``answer`` = label (or
``candidates.index(label)``); ``options`` stay None: the names are held once,
in ``label_spaces``.

:data:`INDEX_READERS` maps a kind to the function that reads its index; MCQ
is read by :mod:`vlmrobust.evaluation.validate.dataset_index` itself and is not here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import CLASSIFICATION, OOD
from vlmrobust.core.label_space import LabelSpace, candidate_check, read_label_space
from vlmrobust.core.registry import Registry
from vlmrobust.core.text.class_matcher import ClassMatcher
from vlmrobust.evaluation.validate.index import FAMILY_COLUMNS, DatasetIndex, _class_names

CANDIDATES = "candidates"
# Read into ``columns`` when present: every valid label of a row (ImageNet val's
# clean multi-labels, Vid-Robust's) and Vid-Robust's perturbation set (its anchor).
ROW_SETS = ("valid_labels", "pmset")
IndexReader = Callable[[Path, Mapping[str, Any], Sequence[str], Mapping[str, str]], DatasetIndex]
INDEX_READERS: Registry[IndexReader] = Registry("question kind with a dataset index")


def kind_index(kind: str, dataset_dir: Path, manifest: Mapping[str, Any], chosen: Sequence[str],
               other: Mapping[str, str]) -> DatasetIndex:
    """The index of a dataset of ``kind`` (configs ``chosen``; ``other`` maps the
    ids of the unselected configs to their config), refusing a kind that
    validate and score cannot read yet."""
    if kind not in INDEX_READERS:
        raise VlmrobustError(f"{dataset_dir}/manifest.json: datasets of kind {kind!r} cannot be "
                             "validated or scored by this version of vlmrobust (it reads kinds: "
                             f"mcq, {', '.join(INDEX_READERS)}); upgrade vlmrobust")
    return INDEX_READERS.get(kind)(dataset_dir, manifest, chosen, other)


@INDEX_READERS.register(CLASSIFICATION)
def classification_index(dataset_dir: Path, manifest: Mapping[str, Any], chosen: Sequence[str],
                         other: Mapping[str, str]) -> DatasetIndex:
    """Read id, label, candidates (K-configs) and the family columns of
    ``chosen``, and every chosen config's label space (sha256-checked)."""
    from vlmrobust.core.datadir import read_table

    features = set(manifest.get("features") or {})
    if features and not {"id", "label"} <= features:
        raise VlmrobustError(f"{dataset_dir}: a classification dataset needs id and label "
                             "columns; rebuild it")
    wanted = ["id", "label", *[c for c in (CANDIDATES, *FAMILY_COLUMNS, *ROW_SETS) if c in features]]
    spaces = {c: read_label_space(dataset_dir, c, manifest) for c in chosen}
    ids: list[Any] = []
    config: list[str] = []
    labels: list[int] = []
    cands: list[tuple[int, ...]] = []
    n_options: list[int] = []
    answer: list[int] = []
    raw: dict[str, list[Any]] = {c: [] for c in wanted[2:] if c != CANDIDATES}
    for name in chosen:
        table = read_table(dataset_dir, name, columns=wanted)
        n_classes = len(spaces[name])
        row_ids = table.column("id").to_pylist()
        row_labels = table.column("label").to_pylist()
        row_cands = (table.column(CANDIDATES).to_pylist() if CANDIDATES in table.column_names
                     else [None] * table.num_rows)
        for j, (rid, label, cand) in enumerate(zip(row_ids, row_labels, row_cands, strict=True)):
            where = f"{dataset_dir}/data/{name} row {j} (id {rid!r})"
            if not isinstance(label, int) or not 0 <= label < n_classes:
                raise VlmrobustError(f"{where}: label {label!r} is not an index into the "
                                     f"{n_classes} classes of its label space; rebuild the dataset")
            shown = tuple(cand or ())
            if shown:
                try:
                    candidate_check(shown, label, n_classes, where)
                except VlmrobustError as exc:
                    raise VlmrobustError(f"{exc}; rebuild the dataset") from None
            ids.append(rid)
            config.append(name)
            labels.append(label)
            cands.append(shown)
            n_options.append(len(shown) if shown else n_classes)
            answer.append(shown.index(label) if shown else label)
        for col in raw:
            raw[col].extend(table.column(col).to_pylist())
    columns = {col: _family_array(col, values, manifest) for col, values in raw.items()}
    if "valid_labels" in columns:  # lists: one tuple per row, never a 2-D array
        columns["valid_labels"] = _tuples(raw["valid_labels"])
        _check_valid_labels(dataset_dir, columns["valid_labels"], labels, ids, config)
    cand_arr = np.empty(len(cands), dtype=object)
    cand_arr[:] = cands
    return DatasetIndex(
        manifest=manifest, configs=tuple(chosen), ids=np.asarray(ids, dtype=object),
        config=np.asarray(config, dtype=object), n_options=np.asarray(n_options, dtype=np.int64),
        answer=np.asarray(answer, dtype=np.int64), columns=columns, other_ids=dict(other),
        kind=CLASSIFICATION, label_spaces=spaces, labels=np.asarray(labels, dtype=np.int64),
        candidates=cand_arr)


@INDEX_READERS.register(OOD)
def _ood_index(dataset_dir: Path, manifest: Mapping[str, Any], chosen: Sequence[str],
               other: Mapping[str, str]) -> DatasetIndex:
    """Kind ood: OOD rows have label -1 and no answer (evaluation/validate/ood_index.py)."""
    from vlmrobust.evaluation.validate.ood_index import ood_index

    return ood_index(dataset_dir, manifest, chosen, other)


def _check_valid_labels(dataset_dir: Path, valid: Any, labels: Sequence[int],
                        ids: Sequence[str], config: Sequence[str]) -> None:
    """Every row's valid labels hold its label (the builders list it first):
    accuracy over valid labels relies on it (ImageNet-ReaL's rule)."""
    first: dict[str, int] = {}
    for j, (v, y) in enumerate(zip(valid, labels, strict=True)):
        first.setdefault(config[j], j)
        if v and y not in v:
            row = j - first[config[j]]
            raise VlmrobustError(f"{dataset_dir}/data/{config[j]} row {row} (id {ids[j]!r}): "
                                 f"valid_labels {list(v)} do not hold its label {y}; rebuild "
                                 "the dataset")


def _tuples(values: list[Any]) -> Any:
    out = np.empty(len(values), dtype=object)
    out[:] = [tuple(v or ()) for v in values]
    return out


def _family_array(name: str, values: list[Any], manifest: Mapping[str, Any]) -> Any:
    if name == "severity":
        return np.asarray(values, dtype=np.int64)
    if name == "kappa":
        return np.asarray(values, dtype=np.float64)
    import pyarrow as pa

    return np.asarray(_class_names(pa.array(values), manifest, name), dtype=object)


@functools.lru_cache(maxsize=32)
def _matcher(space: LabelSpace) -> ClassMatcher:
    return ClassMatcher.for_space(space)


def class_matcher(space: LabelSpace) -> ClassMatcher:
    """The (cached) matcher of a label space: its names are folded and indexed once."""
    return _matcher(space)


def logits_hint(index: DatasetIndex, row: int) -> str:
    """What a row's logits must be, for the wrong-length message."""
    config = str(index.config[row])
    n_classes = len(index.label_spaces[config])
    k = int(index.n_options[row])
    if index.candidates is not None and index.candidates[row]:
        return (f"{k} logits, one per candidate class of the row, in the order of its "
                f"'candidates' (config {config!r} is a K-config over {n_classes} classes)")
    return (f"{n_classes} logits, one per class of the label space of config {config!r}, "
            f"in the order of label_spaces/{config}.json")
