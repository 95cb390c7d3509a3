"""Metadata that travels with one predictions file (never with its folder):

- parquet: key-value metadata of the file under the key ``vlmrobust.meta`` (JSON);
- JSONL (or a parquet written without it): a sidecar ``<file>.meta.yaml``.

It names the model, its family, the prompt and the dataset build (name,
version, fingerprint) the predictions answer; the schema is
``submissions/schemas/predictions-meta.schema.json``. A predictions file
without metadata, or without a fingerprint, is refused: without it nothing
says which build (which questions, images, prompt) the logits answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.bounded import (
    MAX_META_BYTES,
    parse_json_bounded,
    parse_yaml_bounded,
    read_bytes_bounded,
)
from vlmrobust.core.text.display import check_text_fields
from vlmrobust.evaluation.schemas import check_schema, plain

PARQUET_META_KEY = b"vlmrobust.meta"
SIDECAR_SUFFIX = ".meta.yaml"
# A sidecar written by vlmrobust records the sha256 of the JSONL it describes:
# the two files are written one after the other, and a kill in between must not
# leave one model's name on another model's rows.
DATA_SHA256 = "data_sha256"
HOW_TO = ("write the file with vlmrobust.write_predictions(dataset_dir, ids, logits, model=..., "
          "family=...) or `vlmrobust predict`, or add a sidecar {sidecar} with model, family and "
          "dataset: {{name, version, fingerprint}} copied from the dataset's manifest.json "
          "(schema: submissions/schemas/predictions-meta.schema.json)")


def sidecar_path(predictions: Path | str) -> Path:
    """``dir/preds.jsonl`` -> ``dir/preds.jsonl.meta.yaml``."""
    p = Path(predictions)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def _how_to(predictions: Path) -> str:
    return HOW_TO.format(sidecar=sidecar_path(predictions).name)


def load_meta(predictions: Path | str, embedded: bytes | None,
              data_sha256: str | None = None) -> dict[str, Any]:
    """The metadata of ``predictions``: ``embedded`` (the parquet key-value
    entry, when the file has one) or the sidecar, checked against the schema.
    Raises SubmissionError when there is none, both, or it is malformed, or when
    the sidecar records a ``data_sha256`` other than ``data_sha256`` (the sha256
    of the predictions as read): the pair does not belong together. The
    returned metadata never holds ``data_sha256`` (it is of this one file)."""
    predictions = Path(predictions)
    side = sidecar_path(predictions)
    has_side = side.exists() or side.is_symlink()
    if embedded is not None and has_side:
        raise SubmissionError(
            f"{predictions}: metadata both inside the parquet file and in {side.name}; "
            "remove the sidecar (the embedded metadata is what travels with the file)")
    if embedded is not None:
        where = f"{predictions} (parquet metadata '{PARQUET_META_KEY.decode()}')"
        if len(embedded) > MAX_META_BYTES:
            raise SubmissionError(f"{where}: {len(embedded)} bytes, more than the "
                                  f"{MAX_META_BYTES} allowed for metadata")
        raw = parse_json_bounded(embedded, where, SubmissionError)
    elif has_side:
        where = str(side)
        raw = parse_yaml_bounded(read_bytes_bounded(side, MAX_META_BYTES, "metadata sidecar",
                                                     SubmissionError), where, SubmissionError)
    else:
        raise SubmissionError(
            f"{predictions}: no metadata (which model, which dataset build); {_how_to(predictions)}")
    meta = plain(raw)
    if not isinstance(meta, dict):
        raise SubmissionError(f"{where}: expected a mapping of fields, got {type(meta).__name__}; "
                              f"{_how_to(predictions)}")
    check_schema(meta, "predictions-meta", where)
    recorded = meta.pop(DATA_SHA256, None)
    if embedded is None and recorded is not None and data_sha256 is not None \
            and recorded != data_sha256:
        raise SubmissionError(
            f"{where} was written for other predictions than {predictions.name} (its "
            f"{DATA_SHA256} {str(recorded)[:16]}…, the file's {data_sha256[:16]}…): a write was cut "
            "short between the two files; write the predictions again (rerun predict)")
    check_text_fields(meta, where, SubmissionError)
    return meta


def meta_problems(meta: Mapping[str, Any], manifest: Mapping[str, Any],
                  where: str) -> list[tuple[str, str]]:
    """(kind, detail) of how ``meta`` disagrees with the dataset's ``manifest``
    (empty: it answers this build)."""
    ds = meta["dataset"]
    problems = []
    want_fp = manifest.get("fingerprint")
    if ds["fingerprint"] != want_fp:
        problems.append((
            "dataset fingerprint mismatch",
            f"{where} says dataset fingerprint {ds['fingerprint'][:16]}…, the dataset's "
            f"manifest.json has {str(want_fp)[:16]}…: these predictions answer another build "
            "(other questions, images or prompt); predict again on this one"))
    want_name = str(manifest.get("spec", {}).get("name", ""))
    if ds["name"] != want_name:
        problems.append(("dataset name mismatch",
                         f"{where} says dataset {ds['name']!r}, the dataset directory holds "
                         f"{want_name!r}; pass the right --dataset"))
    return problems


def other_dataset(meta: Mapping[str, Any], manifest: Mapping[str, Any],
                  dataset_dir: Path | str, *, any_build: bool = False) -> str | None:
    """One line saying ``meta`` answers another dataset than ``manifest``'s: its
    name differs (or, with ``any_build``, its fingerprint); None when it does not.
    Checked before the rows, whose caps and ids would only report symptoms."""
    ds = meta["dataset"]
    want_name = str(manifest.get("spec", {}).get("name", ""))
    want_fp = str(manifest.get("fingerprint"))
    if ds["name"] == want_name and (not any_build or ds["fingerprint"] == want_fp):
        return None
    return (f"these predictions are for dataset {ds['name']!r} (fingerprint "
            f"{str(ds['fingerprint'])[:16]}…), not {want_name!r} (fingerprint {want_fp[:16]}…) "
            f"in {dataset_dir}; pass the --dataset they were predicted on, or predict again on "
            "this one")


def refuse_other_dataset(predictions: Path | str, manifest: Mapping[str, Any],
                         dataset_dir: Path | str) -> None:
    """Raise SubmissionError when the metadata of ``predictions`` (read alone)
    names another dataset or build; unreadable metadata raises nothing (the
    caller's own error stands)."""
    try:
        meta = read_prediction_meta(predictions)
    except SubmissionError:
        return
    line = other_dataset(meta, manifest, dataset_dir, any_build=True)
    if line is not None:
        raise SubmissionError(f"{predictions}: {line}")


def meta_bytes(meta: Mapping[str, Any]) -> bytes:
    """Canonical JSON for the parquet key-value entry."""
    data = json.dumps(dict(meta), ensure_ascii=False, sort_keys=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_META_BYTES:
        raise SubmissionError(f"metadata is {len(data)} bytes, more than the {MAX_META_BYTES} "
                              "allowed; drop long fields")
    return data


def attach_meta(table: Any, meta: Mapping[str, Any]) -> Any:
    """``table`` with ``meta`` in its schema's key-value metadata (kept by parquet)."""
    existing = dict(table.schema.metadata or {})
    existing[PARQUET_META_KEY] = meta_bytes(meta)
    return table.replace_schema_metadata(existing)


def sidecar_text(meta: Mapping[str, Any]) -> str:
    import yaml

    return str(yaml.safe_dump(dict(meta), sort_keys=False, allow_unicode=True))


def read_prediction_meta(predictions: Path | str) -> dict[str, Any]:
    """The metadata of a predictions file on disk (embedded or sidecar), checked
    against the schema; the file's rows are not read."""
    predictions = Path(predictions)
    embedded = None
    if predictions.suffix.lower() in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        from vlmrobust.evaluation.predictions.read import DEFAULT_MAX_BYTES

        data = read_bytes_bounded(predictions, DEFAULT_MAX_BYTES, "predictions file", SubmissionError)
        try:
            schema = pq.read_schema(pa.BufferReader(data))
        except Exception as exc:  # any damage inside the parquet footer
            raise SubmissionError(f"{predictions}: not a readable parquet file ({exc})") from None
        embedded = (schema.metadata or {}).get(PARQUET_META_KEY)
    return load_meta(predictions, embedded)
