"""Reading a built dataset directory without going through the HF cache: the
manifest, the config names, and columns as pyarrow tables (images optional)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import MAX_MANIFEST_BYTES, parse_json_bounded, read_bytes_bounded
from vlmrobust.core.layout import MANIFEST, READ_CHECKSUMS, SPLIT


def read_manifest(dataset_dir: Path) -> dict[str, Any]:
    path = Path(dataset_dir) / MANIFEST
    if not (path.exists() or path.is_symlink()):
        raise VlmrobustError(
            f"{path} not found: {dataset_dir} is not a dataset built by vlmrobust "
            "(run 'vlmrobust build SPEC --out DIR' first)"
        )
    raw = read_bytes_bounded(path, MAX_MANIFEST_BYTES, "manifest")
    # JSON has no aliases: the byte cap bounds memory, so the value count may be large
    data = parse_json_bounded(raw, f"{path} (rebuild the dataset)", max_nodes=len(raw) + 1)
    if not isinstance(data, dict):
        raise VlmrobustError(f"{path}: expected a JSON object; rebuild the dataset")
    return data


def config_names(dataset_dir: Path) -> list[str]:
    configs = read_manifest(dataset_dir).get("configs")
    if not isinstance(configs, dict) or not configs:
        raise VlmrobustError(f"{dataset_dir}/manifest.json lists no configs; rebuild the dataset")
    return list(configs)


def shard_paths(dataset_dir: Path, config: str) -> list[Path]:
    names = config_names(dataset_dir)
    if config not in names:
        import difflib

        close = difflib.get_close_matches(config, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise VlmrobustError(
            f"{dataset_dir}: no config {config!r}{hint} (configs: {', '.join(names)})"
        )
    paths = sorted((Path(dataset_dir) / "data" / config).glob(f"{SPLIT}-*.parquet"))
    if not paths:
        # name the shard the manifest lists, when it lists one: "moved or deleted" is the fix
        listed = sorted(rel for rel in (read_manifest(dataset_dir).get("shards") or {})
                        if isinstance(rel, str) and rel.startswith(f"data/{config}/"))
        if listed:
            raise VlmrobustError(f"{Path(dataset_dir) / listed[0]}: data shard listed in "
                                 f"{Path(dataset_dir) / MANIFEST} is missing; rebuild or "
                                 "re-download the dataset")
        raise VlmrobustError(f"{dataset_dir}/data/{config}: no parquet shards; rebuild the dataset")
    for p in paths:
        _refuse_special(p)
    return paths


def _refuse_special(path: Path) -> None:
    """A shard that is a FIFO hung every reader, and a link to /dev/zero gave a
    pyarrow traceback (issue 40.10): refuse any shard that is not a regular file
    (links followed; stat only, so a FIFO is never opened)."""
    import os
    import stat

    from vlmrobust.core.files.output_guard import kind_of

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:  # a dangling link, a loop
        raise VlmrobustError(f"{path}: data shard cannot be read ({exc.strerror or exc}); "
                             "rebuild or re-download the dataset") from None
    if not stat.S_ISREG(mode):
        raise VlmrobustError(f"{path}: data shard is {kind_of(mode)}, not a regular file; "
                             "rebuild or re-download the dataset")


def verify_shards(dataset_dir: Path, manifest: dict[str, Any] | None = None) -> int:
    """Check every data shard against the sha256 and size the manifest records
    (``shards``), and that no config folder holds a shard it does not list;
    return the bytes hashed. A dataset built before shard checksums (fingerprint
    version < 3: its fingerprint left out the columns the scorer reads) is
    refused with the command that rebuilds it."""
    from vlmrobust.core.fingerprint import FINGERPRINT_VERSION, file_sha256

    dataset_dir = Path(dataset_dir)
    manifest = read_manifest(dataset_dir) if manifest is None else manifest
    where = dataset_dir / MANIFEST
    shards = manifest.get("shards")
    if not isinstance(shards, dict) or manifest.get("fingerprint_version") != FINGERPRINT_VERSION:
        name = (manifest.get("spec") or {}).get("name", "SPEC")
        raise VlmrobustError(
            f"{where}: built by an older vlmrobust (fingerprint version "
            f"{manifest.get('fingerprint_version')}, current {FINGERPRINT_VERSION}: its "
            "fingerprint does not cover every scored column and it records no shard "
            f"checksums); rebuild it with 'vlmrobust build {name} --out {dataset_dir}' and "
            "predict again")
    listed: dict[str, tuple[str, int]] = {}
    for rel, rec in shards.items():
        if (not isinstance(rel, str) or not isinstance(rec, dict)
                or not isinstance(rec.get("sha256"), str) or not isinstance(rec.get("bytes"), int)):
            raise VlmrobustError(f"{where}: shards[{rel!r}] is not {{sha256, bytes}}; rebuild "
                                 "the dataset")
        listed[rel] = (rec["sha256"], rec["bytes"])
    found = {p.relative_to(dataset_dir).as_posix()
             for c in config_names(dataset_dir)
             for p in (dataset_dir / "data" / c).glob(f"{SPLIT}-*.parquet")}
    extra = sorted(found - set(listed))
    if extra:
        raise VlmrobustError(f"{dataset_dir / extra[0]}: a data shard the manifest does not "
                             "list (added after the build); remove it or rebuild the dataset")
    total = 0
    for rel, (sha, size) in sorted(listed.items()):
        path = dataset_dir / rel
        if ".." in Path(rel).parts or not rel.startswith("data/") or not path.is_file():
            raise VlmrobustError(f"{path}: data shard listed in {where} is missing; "
                                 "rebuild or re-download the dataset")
        got_size = path.stat().st_size
        if got_size != size or file_sha256(path) != sha:
            raise VlmrobustError(f"{path}: data shard changed after the build (sha256 differs "
                                 f"from {where}); rebuild or re-download the dataset")
        total += got_size
    return total


def read_table(dataset_dir: Path, config: str, columns: list[str] | None = None) -> Any:
    """A pyarrow Table of ``columns`` (all when None) of one config, in row order,
    with every page checksum verified."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for p in shard_paths(dataset_dir, config):
        try:
            tables.append(pq.read_table(p, columns=columns, **READ_CHECKSUMS))
        except (OSError, ValueError, pa.ArrowException) as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise VlmrobustError(f"{p}: cannot read the dataset shard ({first}); the dataset is "
                                 "damaged: build or download it again") from None
    return pa.concat_tables(tables)
