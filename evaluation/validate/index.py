"""The record validation checks a predictions file against: :class:`DatasetIndex`
holds a dataset's ids, option counts, answers and the family columns scoring
reads (never its images), with the column helpers every kind's reader shares
and the Bench-C question keys that pair a corrupted copy with its clean copy.
Below the readers (:mod:`.dataset_index` for MCQ, :mod:`.label_index` and
:mod:`.ood_index` for the label-space kinds), so that none of them imports
another for it (issue 38.4: no import circles).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import MCQ
from vlmrobust.core.label_space import LabelSpace

# Columns scoring may use besides id/options/answer (read when the dataset has them).
FAMILY_COLUMNS = ("variant", "distractors", "source", "source_id", "corruption", "severity",
                  "kappa", "category", "source_file", "texture_label")
CLEAN = "none"
# Read when the dataset has it: per-option ImageNet-1k ids, whose WordNet lemmas
# the matcher accepts as synonyms of the options.
CLASS_IDS = "option_class_ids"


def question_keys(index: DatasetIndex) -> list[tuple[str, str]]:
    """Bench-C: the source question of every row, ``(source, source_id)``.

    A ``source_id`` is only unique within its source (converted benchmarks number
    their rows from 0), so pairing a corrupted copy with its clean copy, and
    clustering copies by question, must key on both; a dataset without a
    ``source`` column has one unnamed source."""
    ids = index.columns["source_id"].tolist()
    src = index.columns["source"].tolist() if "source" in index.columns else [""] * len(ids)
    return [(str(s), str(i)) for s, i in zip(src, ids, strict=True)]


def clean_rows_of(index: DatasetIndex) -> dict[tuple[str, str], int]:
    """(source, source_id) -> the row of its clean copy (corruption 'none'); the
    first one when a broken dataset repeats it (``_clean_copy_problems`` refuses that)."""
    keys = question_keys(index)
    out: dict[tuple[str, str], int] = {}
    for i in np.flatnonzero(index.columns["corruption"] == CLEAN).tolist():
        out.setdefault(keys[i], i)
    return out


def answer_column(table: Any, name: str = "answer") -> NDArray[np.float64]:
    """An integer column as float64, NaN where null (what :func:`answer_problem` reads)."""
    import pyarrow as pa

    col = table.column(name)
    return np.asarray(col.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def answer_problem(ids: Sequence[Any], answer: NDArray[np.float64], n_options: NDArray[np.int64],
                   is_ood: NDArray[np.bool_] | None, where: str) -> str | None:
    """The first row whose answer is missing (NaN) or out of range, as one line
    (None: all fine).

    Every row needs an answer index in 0..K-1, except an OOD row (``is_ood``
    true, only in an ood dataset), whose answer must be -1.

    >>> answer_problem(["a", "b"], np.array([0, np.nan]), np.array([3, 3]), None, "ds")
    "ds: row 'b' has answer None, not an index in 0..2; every row needs its answer; rebuild the dataset"
    >>> answer_problem(["a", "b"], np.array([0, -1.0]), np.array([3, 3]), np.array([False, True]), "ds") is None
    True
    """
    a = np.asarray(answer, dtype=np.float64)
    ood = np.zeros(a.shape, dtype=bool) if is_ood is None else np.asarray(is_ood, dtype=bool)
    with np.errstate(invalid="ignore"):
        ok = np.where(ood, a == -1, (a >= 0) & (a < n_options) & (a == np.round(a)))
    bad = np.flatnonzero(~ok)
    if not bad.size:
        return None
    i = int(bad[0])
    value = None if np.isnan(a[i]) else int(a[i]) if a[i] == np.round(a[i]) else float(a[i])
    if ood[i]:
        return (f"{where}: row {ids[i]!r} has answer {value!r}, not -1 (an OOD row has no "
                "answer); rebuild the dataset")
    return (f"{where}: row {ids[i]!r} has answer {value!r}, not an index in "
            f"0..{int(n_options[i]) - 1}; every row needs its answer; rebuild the dataset")


@dataclass(frozen=True)
class DatasetIndex:
    """What scoring needs of a dataset: one entry per row of the chosen configs,
    in dataset order, as numpy arrays (``columns`` holds the family columns)."""

    manifest: Mapping[str, Any]
    configs: tuple[str, ...]
    ids: NDArray[np.object_]
    config: NDArray[np.object_]
    n_options: NDArray[np.int64]
    answer: NDArray[np.int64]
    columns: Mapping[str, NDArray[Any]] = field(default_factory=dict)
    other_ids: Mapping[str, str] = field(default_factory=dict)  # id -> unselected config
    options: NDArray[np.object_] | None = None  # per row: tuple of option texts
    option_class_ids: NDArray[np.object_] | None = None  # per row: tuple of class ids
    # Kinds whose rows index a label space (vlmrobust.core.kinds; evaluation.label_index):
    # the label space of every config, held once, never as per-row options;
    # ``labels`` the row's label-space index; ``candidates`` per row the tuple of a
    # K-config's candidate classes (empty: the whole label space).
    kind: str = MCQ
    label_spaces: Mapping[str, LabelSpace] = field(default_factory=dict)
    labels: NDArray[np.int64] | None = None
    candidates: NDArray[np.object_] | None = None
    # why predictions of this kind must give logits (its index reader says so;
    # None: a prediction or text will do)
    needs_logits: str | None = None

    def __post_init__(self) -> None:
        n = self.ids.shape
        for name in ("config", "n_options", "answer"):
            if getattr(self, name).shape != n:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {n}")
        for name, arr in self.columns.items():
            if arr.shape != n:
                raise ValueError(f"column {name} has shape {arr.shape}, expected {n}")
        for name in ("options", "option_class_ids", "labels", "candidates"):
            arr = getattr(self, name)
            if arr is not None and arr.shape != n:
                raise ValueError(f"{name} has shape {arr.shape}, expected {n}")

    @property
    def n_rows(self) -> int:
        return int(self.ids.shape[0])

    def subset(self, keep: NDArray[np.bool_]) -> DatasetIndex:
        """The rows where ``keep`` is true (order kept)."""
        return DatasetIndex(
            manifest=self.manifest,
            configs=tuple(c for c in self.configs if bool((self.config[keep] == c).any())),
            ids=self.ids[keep], config=self.config[keep], n_options=self.n_options[keep],
            answer=self.answer[keep], columns={k: v[keep] for k, v in self.columns.items()},
            other_ids=self.other_ids,
            options=None if self.options is None else self.options[keep],
            option_class_ids=(None if self.option_class_ids is None
                              else self.option_class_ids[keep]),
            kind=self.kind, label_spaces=self.label_spaces,
            labels=None if self.labels is None else self.labels[keep],
            candidates=None if self.candidates is None else self.candidates[keep])

    @property
    def name(self) -> str:
        return str(self.manifest.get("spec", {}).get("name", ""))

    @classmethod
    def from_table(cls, table: Any, manifest: Mapping[str, Any], config_column: str | None = None,
                   other_ids: Mapping[str, str] | None = None) -> DatasetIndex:
        """From a pyarrow Table with id, options (or n_options), answer and any
        family columns; ``config_column`` names a column with each row's config
        (else every row belongs to the manifest's single/first config)."""
        import pyarrow.compute as pc

        names = table.column_names
        if "n_options" in names:
            k = np.asarray(table.column("n_options").to_numpy(), dtype=np.int64)
        else:
            k = np.asarray(pc.list_value_length(table.column("options")).to_numpy(), dtype=np.int64)
        if config_column is not None:
            config = np.asarray(table.column(config_column).to_pylist(), dtype=object)
        else:
            first = next(iter(manifest.get("configs", {"default": 0})))
            config = np.full(table.num_rows, first, dtype=object)
        cols: dict[str, NDArray[Any]] = {}
        for name in FAMILY_COLUMNS:
            if name in names:
                col = table.column(name)
                if name == "severity":
                    cols[name] = np.asarray(col.to_numpy(), dtype=np.int64)
                elif name == "kappa":
                    cols[name] = np.asarray(col.to_numpy(), dtype=np.float64)
                else:
                    cols[name] = np.asarray(_class_names(col, manifest, name), dtype=object)
        ids = table.column("id").to_pylist()
        why = answer_problem(ids, answer_column(table), k, None, "the dataset")
        if why is not None:
            raise VlmrobustError(why)
        return cls(
            manifest=manifest,
            configs=tuple(dict.fromkeys(config.tolist())),
            ids=np.asarray(ids, dtype=object),
            config=config,
            n_options=k,
            answer=np.asarray(table.column("answer").to_numpy(), dtype=np.int64),
            columns=cols,
            other_ids=dict(other_ids or {}),
            options=_tuples(table, "options"),
            option_class_ids=_tuples(table, CLASS_IDS),
        )


def _tuples(table: Any, name: str) -> NDArray[np.object_] | None:
    """A list column as an object array of tuples (None when absent)."""
    if name not in table.column_names:
        return None
    out = np.empty(table.num_rows, dtype=object)
    out[:] = [tuple(v) if v is not None else () for v in table.column(name).to_pylist()]
    return out


def _class_names(col: Any, manifest: Mapping[str, Any], name: str) -> list[Any]:
    """A column's values; a ``ClassLabel`` column (stored as indices) by its names."""
    feature = (manifest.get("features") or {}).get(name)
    values = col.to_pylist()
    if isinstance(feature, Mapping) and feature.get("_type") == "ClassLabel":
        names = feature.get("names") or []
        bad = next((v for v in values if not (isinstance(v, int) and 0 <= v < len(names))), None)
        if bad is not None:
            raise VlmrobustError(f"manifest.json: column {name!r} holds {bad!r}, not an index "
                                 f"into its {len(names)} ClassLabel names; rebuild the dataset")
        return [names[v] for v in values]
    return values
