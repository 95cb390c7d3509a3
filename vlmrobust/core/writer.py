"""Dataset writer: configs of rows + HF ``Features`` + card text -> a directory
that ``datasets.load_dataset(DIR, CONFIG)`` loads and ``huggingface_hub`` can
push as is::

    DIR/README.md                      YAML ``configs:`` + dataset card
    DIR/manifest.json                  provenance + content fingerprint + shard sha256s
    DIR/data/<config>/test-00000-of-0000N.parquet

Rows are streamed into shards cut by bytes and written in bounded row groups,
so a Bench-C build holds at most a couple of row groups of images in memory. The whole directory is assembled beside the target and swapped in at
the end (vlmrobust.core.files.atomic.atomic_directory): a failed or killed build leaves
the previous output untouched.
"""

from __future__ import annotations

import json
import operator
import platform
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import yaml

from vlmrobust import __version__
from vlmrobust.core.files.atomic import atomic_directory, write_bytes_atomic, write_text_atomic
from vlmrobust.core.files.output_guard import DATASET_ENTRIES, check_dataset_output, dataset_carry
from vlmrobust.core.fingerprint import FINGERPRINT_VERSION, ContentHasher, file_sha256
from vlmrobust.core.kinds import CLASSIFICATION, MCQ, check_kind, question_kind
from vlmrobust.core.label_space import LabelSpace, manifest_records
from vlmrobust.core.layout import (  # noqa: F401  (the writer's names, imported from here too)
    MANIFEST,
    READ_CHECKSUMS,
    SPLIT,
    WRITE_CHECKSUMS,
    label_space_file,
)

CORE_COLUMNS = ("id", "image", "question", "options", "answer")
TRACKED_LIBRARIES = (
    "datasets", "pyarrow", "numpy", "pillow", "torch", "torchvision", "nltk",
    "faiss-cpu", "transformers", "open_clip_torch", "imagecorruptions", "scikit-image",
    "opencv-python-headless", "sentence-transformers",
)


def mcq_features(family_columns: Mapping[str, Any]) -> Any:
    """HF ``Features`` of the MCQ core columns (DESIGN.md), in their fixed order,
    followed by a family's own columns."""
    from datasets import Features, Image, List, Value

    core = {
        "id": Value("string"),
        "image": Image(),
        "question": Value("string"),
        "options": List(Value("string")),
        "answer": Value("int32"),
    }
    clash = sorted(set(core) & set(family_columns))
    if clash:
        raise ValueError(f"family columns {clash} redefine MCQ core columns")
    return Features({**core, **family_columns})


def library_versions(names: Iterable[str] = TRACKED_LIBRARIES) -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


@dataclass(frozen=True)
class BuildInfo:
    """What manifest.json records besides counts and the fingerprint."""

    spec_name: str
    spec_version: str
    seed: int
    source_fingerprints: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    sample: bool = False

    def __post_init__(self) -> None:
        if not self.spec_name:
            raise ValueError("spec_name must not be empty")
        if not self.spec_version:
            raise ValueError("spec_version must not be empty")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an int, got {self.seed!r}")


def card_yaml(configs: list[str], extra: Mapping[str, Any] | None = None,
               folders: Mapping[str, str] | None = None) -> str:
    """The card's YAML header: ``extra`` and one ``configs:`` entry per config, whose
    files are ``data/<folder>/test-*.parquet`` (the folder: the config's name
    unless ``folders`` names another)."""
    header = {
        **{k: v for k, v in (extra or {}).items() if k != "configs"},
        "configs": [
            {
                "config_name": name,
                "data_files": [{"split": SPLIT, "path":
                                f"data/{(folders or {}).get(name, name)}/{SPLIT}-*.parquet"}],
            }
            for name in configs
        ]
    }
    return "---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n"



# A shard closes once its encoded rows reach SHARD_BYTES (the Hub's advice is a
# few hundred MB per parquet file); rows go to disk in row groups of at most
# ROW_GROUP_BYTES, so the writer holds about two row groups (the Python rows
# and their Arrow copy) at any time, whatever the image size.
SHARD_BYTES = 512 * 2**20
ROW_GROUP_BYTES = 64 * 2**20


def _row_bytes(encoded: Mapping[str, Any]) -> int:
    """Bytes a row will take in Arrow: image payloads plus a rough figure for
    the rest (strings and lists are small next to images)."""
    n = 64
    for value in encoded.values():
        if isinstance(value, (bytes, str)):
            n += len(value)
        elif isinstance(value, Mapping):
            n += sum(len(v) for v in value.values() if isinstance(v, (bytes, str)))
        elif isinstance(value, (list, tuple)):
            n += 8 * len(value) + sum(len(v) for v in value if isinstance(v, (bytes, str)))
        else:
            n += 8
    return n


def parquet_options(features: Any) -> dict[str, Any]:
    """ParquetWriter settings: zstd for every column but the image payloads.
    PNG and JPEG bytes are compressed already (zstd saved 0.0 % on Bench-C's
    PNGs), and dictionary pages and min/max statistics of megabyte blobs are
    useless; skipping all three halves the writer's CPU per Bench-C question
    (57 -> 28 ms for 96 PNGs of 500×375, tests/perf/test_bench_c_generation.py).

    >>> from datasets import Features, Image, Value
    >>> opts = parquet_options(Features({"id": Value("string"), "image": Image()}))
    >>> opts["compression"]
    {'id': 'zstd', 'image.bytes': 'none', 'image.path': 'zstd'}
    >>> opts["use_dictionary"], opts["write_statistics"]
    (['id', 'image.path'], ['id', 'image.path'])
    """
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    # leaf column paths as parquet names them (lists: "name.list.element"); the
    # payload of an Image feature, nested in lists or not, is "<path>.bytes"
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([], schema=features.arrow_schema), buf)
    buf.seek(0)
    pschema = pq.ParquetFile(buf).schema
    paths = [pschema.column(i).path for i in range(len(pschema))]
    raw = {pschema.column(i).path for i in range(len(pschema))
           if pschema.column(i).path.endswith(".bytes")
           and pschema.column(i).physical_type == "BYTE_ARRAY"}
    cooked = [p for p in paths if p not in raw]
    return {"compression": {p: "none" if p in raw else "zstd" for p in paths},
            "use_dictionary": cooked, "write_statistics": cooked, **WRITE_CHECKSUMS}


def _write_config(
    target: Path, config: str, rows: Iterable[Mapping[str, Any]], features: Any,
    hasher: ContentHasher, rows_per_shard: int | None, shard_bytes: int,
    row_group_bytes: int, required: tuple[str, ...] = CORE_COLUMNS,
) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = features.arrow_schema
    options = parquet_options(features)
    cfg_dir = target / "data" / config
    cfg_dir.mkdir(parents=True)
    shards: list[Path] = []
    group: list[dict[str, Any]] = []
    group_size = 0
    shard_rows = 0
    shard_size = 0
    writer: Any = None
    seen: set[str] = set()
    count = 0

    def write_group() -> None:
        nonlocal writer, group_size
        if writer is None:
            shards.append(cfg_dir / f"part-{len(shards):05d}.parquet")
            writer = pq.ParquetWriter(shards[-1], schema, **options)
        writer.write_table(pa.Table.from_pylist(group, schema=schema))
        group.clear()
        group_size = 0

    def close_shard() -> None:
        nonlocal writer, shard_rows, shard_size
        if group or writer is None:
            write_group()
        writer.close()
        writer = None
        shard_rows = shard_size = 0

    try:
        for row in rows:
            missing = [c for c in required if c not in row]
            if missing:
                raise ValueError(f"config {config!r} row {count}: missing columns {missing}")
            rid = str(row["id"])
            if rid in seen:
                raise ValueError(f"config {config!r}: duplicate id {rid!r} at row {count}")
            seen.add(rid)
            hasher.update(config, row)
            encoded = features.encode_example(dict(row))
            size = _row_bytes(encoded)
            group.append(encoded)
            group_size += size
            shard_size += size
            shard_rows += 1
            count += 1
            if shard_size >= shard_bytes or (rows_per_shard is not None
                                             and shard_rows >= rows_per_shard):
                close_shard()
            elif group_size >= row_group_bytes:
                write_group()
        if group or writer is not None or not shards:
            close_shard()
    finally:
        if writer is not None:
            writer.close()
    n = len(shards)
    for i, path in enumerate(shards):
        path.rename(cfg_dir / f"{SPLIT}-{i:05d}-of-{n:05d}.parquet")
    return count


def _labels_checked(config: str, rows: Iterable[Mapping[str, Any]], n_classes: int,
                    ood: bool) -> Iterable[Mapping[str, Any]]:
    """``rows``, refusing a label outside the config's label space (-1 is the
    label of an OOD row, and only of one)."""
    for i, row in enumerate(rows):
        label = row.get("label")
        is_ood = bool(row.get("is_ood", False))
        index = None
        if label is not None and hasattr(label, "__index__") and not isinstance(label, bool):
            index = operator.index(label)
        ok = (index == -1) if (ood and is_ood) else (index is not None and 0 <= index < n_classes)
        if not ok:
            want = "-1 (an OOD row has no label)" if ood and is_ood else f"an index in 0..{n_classes - 1}"
            raise ValueError(f"config {config!r} row {i}: label {label!r} is not {want}")
        yield row


def shard_records(root: Path, configs: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{"data/<config>/<file>": {"sha256", "bytes"}}`` of every data shard, the
    manifest's ``shards``: what ``vlmrobust.core.datadir.verify_shards`` checks
    before scoring reads them."""
    out: dict[str, dict[str, Any]] = {}
    for config in configs:
        for path in sorted((root / "data" / config).glob(f"{SPLIT}-*.parquet")):
            out[path.relative_to(root).as_posix()] = {"sha256": file_sha256(path),
                                                      "bytes": path.stat().st_size}
    return out


def write_dataset(
    out: Path,
    *,
    configs: Mapping[str, Iterable[Mapping[str, Any]]],
    features: Any,
    card: str,
    info: BuildInfo,
    rows_per_shard: int | None = None,
    shard_bytes: int = SHARD_BYTES,
    row_group_bytes: int = ROW_GROUP_BYTES,
    card_header: Callable[[Mapping[str, int]], Mapping[str, Any]] | None = None,
    extra_files: Mapping[str, bytes] | None = None,
    kind: str = MCQ,
    label_spaces: Mapping[str, LabelSpace] | None = None,
    config_kinds: Mapping[str, str] | None = None,
    config_features: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``configs`` (name -> rows, in order) to ``out`` atomically and return
    the manifest. Rows hold ``image`` as ``{"bytes": ..., "path": None}`` (or raw
    bytes), already encoded by the builder so that bytes are reproducible.
    ``card_header`` maps the row counts per config to the README's YAML fields
    besides ``configs`` (hub metadata: licence, size category, ...).
    ``extra_files`` (name -> bytes, e.g. bench-c's selection table) are written
    at the top of the folder inside the same swap: a kill never separates them
    from the data.

    A shard closes at ``shard_bytes`` of encoded rows (or ``rows_per_shard``
    rows, when given); rows reach disk in row groups of ``row_group_bytes``, so
    memory stays bounded by about twice that, whatever the image size.

    ``kind`` (vlmrobust.core.kinds) is recorded in the manifest and decides the
    columns every row must have; a kind whose rows index a label space needs
    ``label_spaces`` (config -> LabelSpace) for every config: each is written
    to ``label_spaces/<config>.json``, recorded with its sha256 in the
    manifest and covered by the fingerprint.

    A dataset whose configs ask different kinds (failure-discovery: ``open``
    and ``mcq``) names the others in ``config_kinds`` (config -> kind, recorded
    as the manifest's ``config_kinds``; read with ``kinds.config_kind``) and
    their own columns in ``config_features`` (config -> Features, recorded as
    ``config_features``); ``kind`` and ``features`` are those of the rest."""
    if not configs:
        raise ValueError("write_dataset needs at least one config")
    check_kind(kind)
    per_kind = {c: check_kind(k, f"config_kinds.{c}") for c, k in (config_kinds or {}).items()}
    per_features = dict(config_features or {})
    if (set(per_kind) | set(per_features)) - set(configs):
        raise ValueError("config_kinds / config_features name configs that are not built")
    if any(question_kind(k).label_space for k in per_kind.values()):
        raise ValueError("config_kinds: a label-space kind must be the dataset's kind")
    spaces = dict(label_spaces or {})
    if question_kind(kind).label_space:
        missing_ls = [c for c in configs if c not in spaces]
        if missing_ls:
            raise ValueError(f"kind {kind!r} needs a label space for configs {missing_ls}")
    if set(spaces) - set(configs):
        raise ValueError(f"label spaces for unknown configs {sorted(set(spaces) - set(configs))}")
    if rows_per_shard is not None and rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be >= 1, got {rows_per_shard}")
    if shard_bytes < 1 or row_group_bytes < 1:
        raise ValueError("shard_bytes and row_group_bytes must be >= 1")
    # the dataset-wide prompt (e.g. imagenet-mcq's question template) is part of
    # what a model sees, so a change to it must change the fingerprint
    prompt = info.extra.get("question_prompt", info.extra.get("prompt"))
    hasher = ContentHasher(None if prompt is None else str(prompt))
    for name in configs:  # before the rows: a label space is what every row's label means
        if name in spaces:
            hasher.update_blob(label_space_file(name), spaces[name].to_json_bytes())
    counts: dict[str, int] = {}
    check_dataset_output(Path(out))  # before any row is written
    with atomic_directory(Path(out), carry=dataset_carry) as tmp:
        for name, rows in configs.items():
            if not name or "/" in name or name.startswith("."):
                raise ValueError(f"invalid config name {name!r}")
            if name in spaces:
                rows = _labels_checked(name, rows, len(spaces[name]), ood=kind != CLASSIFICATION)
            counts[name] = _write_config(tmp, name, rows, per_features.get(name, features),
                                         hasher, rows_per_shard, shard_bytes, row_group_bytes,
                                         question_kind(per_kind.get(name, kind)).required_columns)
            if name in spaces:
                (tmp / label_space_file(name)).parent.mkdir(exist_ok=True)
                write_bytes_atomic(tmp / label_space_file(name), spaces[name].to_json_bytes())
        manifest: dict[str, Any] = {
            "manifest_version": 1,
            "spec": {"name": info.spec_name, "version": info.spec_version},
            "seed": info.seed,
            "sample": info.sample,
            "code_version": __version__,
            "libraries": library_versions(),
            "source_fingerprints": dict(sorted(info.source_fingerprints.items())),
            "split": SPLIT,
            "configs": counts,
            "num_rows": sum(counts.values()),
            "features": features.to_dict(),
            "fingerprint": hasher.hexdigest(),
            "fingerprint_version": FINGERPRINT_VERSION,
            **dict(info.extra),
            **({"kind": kind} if kind != MCQ else {}),
            **({"config_kinds": per_kind} if per_kind else {}),
            **({"config_features": {c: f.to_dict() for c, f in per_features.items()}}
               if per_features else {}),
            **({"label_spaces": manifest_records(spaces)} if spaces else {}),
            "shards": shard_records(tmp, counts),
        }
        write_text_atomic(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=False) + "\n")
        extra = card_header(counts) if card_header is not None else None
        for name, data in (extra_files or {}).items():
            if name not in DATASET_ENTRIES or name in (MANIFEST, "README.md", "data"):
                raise ValueError(f"extra file {name!r} is not one a build may write "
                                 f"(vlmrobust.core.files.output_guard.DATASET_ENTRIES)")
            write_bytes_atomic(tmp / name, data)
        write_text_atomic(tmp / "README.md",
                          card_yaml(list(configs), extra) + "\n" + card.strip() + "\n")
    return manifest
