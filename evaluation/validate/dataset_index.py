"""The dataset side of validation: what a predictions file is checked against.

A dataset read into a :class:`DatasetIndex` (:mod:`.index`: its ids, option
counts, answers and the family columns scoring reads, never its images) after
every data shard is checked against the sha256 its manifest records; plus the
manifest-derived bounds a predictions file must fit (rows, bytes, options).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import MCQ, OPEN, config_kind, dataset_kind, refuse_open
from vlmrobust.evaluation.validate.index import (  # noqa: F401  (imported from here too)
    CLASS_IDS,
    CLEAN,
    FAMILY_COLUMNS,
    DatasetIndex,
    _class_names,
    answer_column,
    answer_problem,
    clean_rows_of,
    question_keys,
)

# A predictions file may hold at most this many times the dataset's rows (a
# duplicate of every row is still reported as such; 10M rows for a 100-row
# dataset is refused before it is decoded).
ROWS_FACTOR = 2
# Per allowed row: room for logits over a 1000-class label space or for a
# generated answer with its prompt (text / prompt_text); one value is capped
# separately (predictions_jsonl.MAX_TEXT_CHARS).
BYTES_PER_ROW = 64 * 1024
BYTES_BASE = 16 * 1024 * 1024


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
