"""The dataset side of validation: what a predictions file is checked against.

:class:`DatasetIndex` holds a dataset's ids, option counts, answers and the
family columns scoring reads (never its images), read after every data shard
is checked against the sha256 its manifest records; plus the manifest-derived
bounds a predictions file must fit (rows, bytes, options) and the Bench-C
question keys that pair a corrupted copy with its clean copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import MCQ, OPEN, config_kind, dataset_kind, refuse_open
from vlmrobust.core.label_space import LabelSpace

# A predictions file may hold at most this many times the dataset's rows (a
# duplicate of every row is still reported as such; 10M rows for a 100-row
# dataset is refused before it is decoded).
ROWS_FACTOR = 2
# Per allowed row: room for logits over a 1000-class label space or for a
# generated answer with its prompt (text / prompt_text); one value is capped
# separately (predictions_jsonl.MAX_TEXT_CHARS).
BYTES_PER_ROW = 64 * 1024
BYTES_BASE = 16 * 1024 * 1024
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


def load_dataset_index(dataset_dir: Path, config: str | Sequence[str] | None = None,
                       check_shards: bool = True) -> DatasetIndex:
    """Read ids/options/answers (+ family columns) of ``config`` (a name or a
    list of names; all configs when None), after checking every data shard
    against the sha256 the manifest records (``verify_shards``). The manifest's
    kind decides what a row's options are: MCQ rows here, the label-space
    kinds in :mod:`vlmrobust.evaluation.validate.label_index`."""
    from vlmrobust.core.datadir import read_manifest, verify_shards

    manifest = read_manifest(dataset_dir)
    if check_shards:  # validate() checks them itself, before reading any column
        verify_shards(dataset_dir, manifest)
    all_configs = manifest_configs(manifest, dataset_dir)
    chosen = all_configs if config is None else [config] if isinstance(config, str) else list(config)
    refuse_open(manifest, chosen, f"{dataset_dir}/manifest.json")
    other: dict[str, str] = {}
    for name in all_configs:
        if name not in chosen:
            other.update(dict.fromkeys(_ids_of(dataset_dir, name), name))
    kind = dataset_kind(manifest, f"{dataset_dir}/manifest.json")
    if kind != MCQ:
        from vlmrobust.evaluation.validate.label_index import kind_index

        return kind_index(kind, Path(dataset_dir), manifest, chosen, other)
    return _mcq_index(Path(dataset_dir), manifest, chosen, other)


def _ids_of(dataset_dir: Path, config: str) -> list[Any]:
    from vlmrobust.core.datadir import read_table

    return list(read_table(dataset_dir, config, columns=["id"]).column("id").to_pylist())


def _mcq_index(dataset_dir: Path, manifest: Mapping[str, Any], chosen: Sequence[str],
               other: Mapping[str, str]) -> DatasetIndex:
    import pyarrow as pa

    from vlmrobust.core.datadir import read_table

    features = set(manifest.get("features", {}))
    wanted = ["id", "options", "answer",
              *[c for c in (*FAMILY_COLUMNS, CLASS_IDS) if c in features]]
    if features and not {"id", "options", "answer"} <= features:
        raise VlmrobustError(f"{dataset_dir}: the dataset lacks id/options/answer columns; rebuild it")
    tables = []
    for name in chosen:
        t = read_table(dataset_dir, name, columns=wanted)
        tables.append(t.append_column("__config", pa.array([name] * t.num_rows, pa.string())))
    return DatasetIndex.from_table(pa.concat_tables(tables), manifest, "__config", other)


def manifest_configs(manifest: Mapping[str, Any], dataset_dir: Path) -> list[str]:
    """The config names of a manifest, refusing one without a ``configs`` mapping."""
    configs = manifest.get("configs")
    if (not isinstance(configs, Mapping) or not configs
            or not all(isinstance(k, str) and k for k in configs)):
        raise VlmrobustError(f"{dataset_dir}/manifest.json lists no configs (a mapping of config "
                             "name to row count); rebuild the dataset")
    return list(configs)


def max_prediction_rows(manifest: Mapping[str, Any], dataset_dir: Path) -> int:
    """The row cap of a predictions file for this dataset (a multiple of its rows)."""
    counts = manifest.get("configs") or {}
    n = sum(int(v) for v in counts.values() if isinstance(v, int) and not isinstance(v, bool))
    return max(ROWS_FACTOR * n, 100)


def max_options(dataset_dir: Path, manifest: Mapping[str, Any], configs: Sequence[str]) -> int | None:
    """The most options any question of ``configs`` has (None: no options column);
    for a label-space kind, the most classes of their label spaces (from the
    manifest). Read before the predictions, so that a row of a million logits is
    refused when it is met (issue 28.10); only the ``options`` column is decoded."""
    import pyarrow.compute as pc

    from vlmrobust.core.datadir import read_table

    spaces = manifest.get("label_spaces")
    if isinstance(spaces, Mapping) and spaces:  # a label-space kind: logits over the classes
        sizes = [rec.get("n_classes") for c, rec in spaces.items()
                 if c in configs and isinstance(rec, Mapping)]
        return max((n for n in sizes if isinstance(n, int) and not isinstance(n, bool)),
                   default=0) or None
    if "options" not in (manifest.get("features") or {}):
        return None
    most = 0
    for name in configs:
        if config_kind(manifest, name) == OPEN:  # free-form: no options column
            continue
        lengths = pc.list_value_length(read_table(dataset_dir, name, columns=["options"]).column("options"))
        most = max(most, int(pc.max(lengths).as_py() or 0))
    return most or None
