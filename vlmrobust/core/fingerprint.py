"""Content fingerprints: sha256 over everything a model sees of a question (id,
image bytes, question text, options, answer, and the prompt it was asked
with) and every other column of the row (what the scorer reads: source,
source_id, corruption, severity, kappa, category, label, option_class_ids,
option_class_groups, ...), independent of parquet encoding details.
Predictions carry the fingerprint of the build they answer, so any change to
what a model would see or to what its answers are scored against makes old
predictions stale and refused."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.files.digest import file_sha256

__all__ = ["file_sha256"]


def _image_bytes(image: Any) -> bytes:
    if image is None:
        return b""
    if isinstance(image, (bytes, bytearray)):
        return bytes(image)
    if isinstance(image, Mapping):
        data = image.get("bytes")
        if data is not None:
            return bytes(data)
        path = image.get("path")
        if path:
            return Path(path).read_bytes()
        return b""
    raise TypeError(f"cannot fingerprint image of type {type(image).__name__}")


# Bumped whenever what the fingerprint covers changes, so that fingerprints of
# different definitions can never collide. 3: every column of the row (2 left
# out the family columns the scorer reads).
FINGERPRINT_VERSION = 3
# hashed on their own (image payloads by sha256) or in the row's fixed head
_HEAD_COLUMNS = frozenset({"id", "answer", "options", "question", "prompt", "image"})


def _canonical(value: Any) -> Any:
    """A JSON-able form of a column value: numpy scalars and arrays as Python
    numbers and lists, tuples as lists, image payloads (bytes, ``{"bytes"}``
    mappings) as the sha256 of their bytes, mapping keys sorted."""
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, Mapping):
        if "bytes" in value and set(value) <= {"bytes", "path"}:
            return {"sha256": hashlib.sha256(_image_bytes(value)).hexdigest()}
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _canonical(value.tolist())
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot fingerprint a column value of type {type(value).__name__}")


class ContentHasher:
    """Feeds rows in order; ``hexdigest()`` is the dataset fingerprint.

    ``prompt`` is the dataset-wide prompt (e.g. the question template id and
    text a builder rendered the questions with); a row's own ``prompt`` field,
    when it has one, is covered too, and so is every other column (sorted by
    name, canonical JSON), so a rebuild that changes only ``kappa`` or
    ``source_id`` gets a new fingerprint.

    >>> h = ContentHasher()
    >>> h.update("cfg", {"id": "a", "question": "q?", "answer": 1, "options": ["x", "y"],
    ...                  "image": b"img"})
    >>> len(h.hexdigest())
    64
    """

    def __init__(self, prompt: str | None = None) -> None:
        self._h = hashlib.sha256()
        head = json.dumps(["vlmrobust-fingerprint", FINGERPRINT_VERSION, prompt],
                          ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._h.update(len(head).to_bytes(8, "big"))
        self._h.update(head)

    def update(self, config: str, row: Mapping[str, Any]) -> None:
        question = row.get("question")
        prompt = row.get("prompt")
        # rows of kinds without options (classification, ood, ...) hash None there;
        # an MCQ row's head is unchanged, so MCQ fingerprints are too
        answer = row.get("answer")
        options = row.get("options")
        head = json.dumps(
            [config, row["id"], None if answer is None else int(answer),
             None if options is None else [str(o) for o in options],
             None if question is None else str(question),
             None if prompt is None else str(prompt),
             sorted([str(k), _canonical(v)] for k, v in row.items() if k not in _HEAD_COLUMNS)],
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode("utf-8")
        self._h.update(len(head).to_bytes(8, "big"))
        self._h.update(head)
        img = hashlib.sha256(_image_bytes(row.get("image"))).digest()
        self._h.update(img)

    def update_blob(self, name: str, data: bytes) -> None:
        """Cover a named file of the build (a config's label space) by its sha256."""
        head = json.dumps(["blob", name, hashlib.sha256(data).hexdigest()],
                          ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._h.update(len(head).to_bytes(8, "big"))
        self._h.update(head)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def tree_fingerprint(paths: list[Path], root: Path) -> str:
    """sha256 over (relative path, file sha256) of ``paths`` in sorted order: the
    fingerprint of a source folder."""
    h = hashlib.sha256()
    for p in sorted(paths):
        rel = p.relative_to(root).as_posix()
        h.update(rel.encode("utf-8") + b"\0" + file_sha256(p).encode("ascii") + b"\n")
    return h.hexdigest()


_MAX_SPACE_BYTES = 64 << 20


def _class_names(features: Any) -> dict[str, list[str]]:
    """column -> names of a ClassLabel column in a manifest's features dict."""
    if not isinstance(features, Mapping):
        return {}
    return {str(k): [str(n) for n in v["names"]] for k, v in features.items()
            if isinstance(v, Mapping) and v.get("_type") == "ClassLabel"
            and isinstance(v.get("names"), list)}


def recompute_fingerprints(dataset_dir: Path, manifest: Mapping[str, Any]) -> set[str]:
    """The content fingerprint of the rows a dataset directory holds, fed as the
    writer fed them (vlmrobust.core.writer.write_dataset): the dataset-wide
    prompt, each config's label-space file, then every row of every config in
    manifest order. A builder may have given a ClassLabel column as its index
    or as its name (the stored form is the index), so two digests come back:
    those columns as stored, and as names. One of them equals the manifest's
    ``fingerprint`` unless the rows, label spaces or manifest changed after
    the build (shard checksums in the manifest can be rewritten with them)."""
    import pyarrow.parquet as pq

    from vlmrobust.core.files.bounded import read_bytes_bounded
    from vlmrobust.core.layout import label_space_file

    prompt = manifest.get("question_prompt", manifest.get("prompt"))
    as_stored = ContentHasher(None if prompt is None else str(prompt))
    as_names = ContentHasher(None if prompt is None else str(prompt))
    configs = [str(c) for c in manifest.get("configs") or {}]
    for c in configs:
        blob = dataset_dir / label_space_file(c)
        if blob.is_file():
            data = read_bytes_bounded(blob, _MAX_SPACE_BYTES, "label space")
            as_stored.update_blob(label_space_file(c), data)
            as_names.update_blob(label_space_file(c), data)
    shared = _class_names(manifest.get("features"))
    per_config = manifest.get("config_features")
    per_config = per_config if isinstance(per_config, Mapping) else {}
    for c in configs:
        names = _class_names(per_config[c]) if c in per_config else shared
        for shard in sorted((dataset_dir / "data" / c).glob("*.parquet")):
            for batch in pq.ParquetFile(shard).iter_batches(batch_size=256):
                for row in batch.to_pylist():
                    as_stored.update(c, row)
                    for col, labels in names.items():
                        v = row.get(col)
                        if isinstance(v, int) and 0 <= v < len(labels):
                            row[col] = labels[v]
                    as_names.update(c, row)
    return {as_stored.hexdigest(), as_names.hexdigest()}
