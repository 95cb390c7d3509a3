"""Dataset rows for the evaluator: a local vlmrobust dataset directory or a hub
dataset id, the row plan (which rows, in which order) and its validation.

The plan is computed from the light columns only (no image decoding), so bad
input is reported before any model is loaded. Row order is deterministic:
configs in manifest order, rows in file order; ``limit`` keeps the first rows
of each config.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.writer import READ_CHECKSUMS

# option_class_groups is optional (ObjectNet max-over-group scoring); older
# datasets without it still predict through option_class_ids alone
META_COLUMNS = ("id", "options", "option_class_ids", "option_class_groups")


@dataclass(frozen=True)
class PlannedRow:
    index: int  # position in the whole plan (sharding + merge order)
    config: str
    row: int  # row number within its config
    id: str


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    version: str
    fingerprint: str
    # the hub id (OWNER/NAME[@REVISION]); None for a local directory, whose path is
    # this machine's business and never enters public metadata (issue 28.17)
    source: str | None
    sample: bool


class DatasetReader:
    """Uniform access to a local directory (vlmrobust.core.datadir) or a hub dataset."""

    def __init__(self, dataset: str | Path) -> None:
        self.source = str(dataset)
        path = Path(dataset)
        self.local: Path | None = path if path.is_dir() else None
        self._hub: dict[str, Any] = {}
        if self.local is not None:
            from vlmrobust.core.datadir import read_manifest

            self.manifest = read_manifest(self.local)
        elif _looks_like_hub_id(self.source):
            self.manifest = _hub_manifest(self.source)
        else:
            raise VlmrobustError(
                f"--dataset {self.source!r}: no such directory, and not a hub id "
                "(OWNER/NAME[@REVISION]); build one with 'vlmrobust build SPEC --out DIR'"
            )

    @property
    def info(self) -> DatasetInfo:
        spec = self.manifest.get("spec", {})
        return DatasetInfo(
            name=str(spec.get("name", "")),
            version=str(spec.get("version", "")),
            fingerprint=str(self.manifest.get("fingerprint", "")),
            source=self.source if self.local is None else None,
            sample=bool(self.manifest.get("sample", False)),
        )

    def configs(self, config: str | None) -> list[str]:
        names = [str(c) for c in self.manifest.get("configs", {})]
        if not names and self.local is None:
            import datasets

            names = list(datasets.get_dataset_config_names(self._hub_path()))
        if config is None:
            return names
        # a comma-separated list names several (e.g. ImageNet val and its shifts in one
        # file, so that seed 001's temperature reaches the shifts)
        wanted = list(dict.fromkeys(c.strip() for c in config.split(",") if c.strip()))
        for one in wanted or [config]:
            if one not in names:
                import difflib

                close = difflib.get_close_matches(one, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise VlmrobustError(
                    f"{self.source}: no config {one!r}{hint} (configs: {', '.join(names)})"
                )
        return wanted

    def where(self, config: str) -> str:
        if self.local is not None:
            return f"{self.local}/data/{config}"
        return f"{self.source} config {config}"

    def column_names(self, config: str) -> list[str]:
        if self.local is not None:
            import pyarrow.parquet as pq

            from vlmrobust.core.datadir import shard_paths

            return list(pq.read_schema(shard_paths(self.local, config)[0]).names)
        return list(self._hub_ds(config).column_names)

    def read_columns(self, config: str, columns: Sequence[str]) -> dict[str, list[Any]]:
        if self.local is not None:
            from vlmrobust.core.datadir import read_table

            table = read_table(self.local, config, list(columns))
            return {c: table.column(c).to_pylist() for c in columns}
        ds = self._hub_ds(config).select_columns(list(columns))
        return {c: list(ds[c]) for c in columns}

    def iter_rows(self, config: str, wanted: set[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        """(row number, row dict) for the wanted rows of ``config``, in file order;
        images stay encoded (HF ``{"bytes", "path"}``) until an adapter decodes them."""
        if not wanted:
            return
        if self.local is None:
            ds = self._hub_ds(config)
            for r in sorted(wanted):
                yield r, dict(ds[r])
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        from vlmrobust.core.datadir import shard_paths

        offset = 0
        last = max(wanted)
        for path in shard_paths(self.local, config):
            pf = pq.ParquetFile(path, **READ_CHECKSUMS)
            for batch in pf.iter_batches(batch_size=64):
                take = [r - offset for r in range(offset, offset + batch.num_rows) if r in wanted]
                if take:
                    rows = batch.take(pa.array(take)).to_pylist()
                    for local_r, row in zip(take, rows, strict=True):
                        yield offset + local_r, row
                offset += batch.num_rows
                if offset > last:
                    return

    def _hub_path(self) -> str:
        return self.source.split("@", 1)[0]

    def _hub_ds(self, config: str) -> Any:
        if config not in self._hub:
            import datasets

            repo, _, revision = self.source.partition("@")
            try:
                self._hub[config] = datasets.load_dataset(
                    repo, config, split="test", revision=revision or None
                )
            except Exception as exc:  # network / auth / missing: one line for the user
                raise VlmrobustError(
                    f"could not load hub dataset {self.source!r} config {config!r}: {exc}"
                ) from None
        return self._hub[config]


def _looks_like_hub_id(text: str) -> bool:
    """
    >>> [_looks_like_hub_id(t) for t in ("org/ds", "org/ds@v1.0", "./org/ds", "a/b/c", "ds")]
    [True, True, False, False, False]
    """
    repo = text.split("@", 1)[0]
    parts = repo.split("/")
    return len(parts) == 2 and all(parts) and not text.startswith((".", "/"))


def _hub_manifest(source: str) -> dict[str, Any]:
    import json

    repo, _, revision = source.partition("@")
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(repo, "manifest.json", repo_type="dataset",
                               revision=revision or None)
    except Exception as exc:
        raise VlmrobustError(
            f"--dataset {source!r}: not a local directory and its hub manifest.json "
            f"could not be fetched ({type(exc).__name__}); check the id or pass a local copy"
        ) from None
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


def checked_id(raw: Any, row_at: str, seen: dict[str, str], config: str) -> tuple[str, str]:
    """A planned row's id and its locator, refusing an empty id or one seen in an
    earlier row (``seen``: id -> its config, updated here)."""
    at = f"{row_at} (id {raw!r})"
    if raw is None or str(raw) == "":
        raise VlmrobustError(f"{at}: empty id; rebuild the dataset")
    rid = str(raw)
    if rid in seen:
        raise VlmrobustError(f"{at}: duplicate id, also in config {seen[rid]!r}; rebuild the dataset")
    seen[rid] = config
    return rid, at


def plan_rows(
    reader: DatasetReader,
    configs: Sequence[str],
    required: Sequence[str],
    limit: int | None = None,
    max_options: int | None = None,
) -> list[PlannedRow]:
    """Validate the light columns of every config and list the rows to predict."""
    from vlmrobust.models.base import option_groups

    if limit is not None and limit < 1:
        raise VlmrobustError(f"--limit must be >= 1, got {limit}")
    plan: list[PlannedRow] = []
    seen: dict[str, str] = {}
    for config in configs:
        where = reader.where(config)
        present = reader.column_names(config)
        missing = [c for c in required if c not in present]
        if missing:
            raise VlmrobustError(
                f"{where}: missing column(s) {', '.join(missing)} needed by this model "
                f"(has: {', '.join(present)}); pick a model family the dataset supports"
            )
        cols = [c for c in META_COLUMNS if c in present]
        data = reader.read_columns(config, cols)
        n = len(data["id"])
        all_groups = data.get("option_class_groups")
        for r in range(n if limit is None else min(n, limit)):
            rid, at = checked_id(data["id"][r], f"{where} row {r}", seen, config)
            options = data["options"][r]
            if not options:
                raise VlmrobustError(f"{at}: no options; every row needs >= 1 option")
            if max_options is not None and len(options) > max_options:
                raise VlmrobustError(
                    f"{at}: {len(options)} options, this model answers at most {max_options}"
                )
            if "option_class_ids" in data:
                ids = data["option_class_ids"][r]
                if ids is not None and len(ids) != len(options):
                    raise VlmrobustError(
                        f"{at}: {len(options)} options but {len(ids)} option_class_ids; "
                        "rebuild the dataset so that each option has one class id"
                    )
                if ids is None and "option_class_ids" in required:
                    raise VlmrobustError(f"{at}: option_class_ids is null")
                groups = all_groups[r] if all_groups is not None else None
                if ids is not None and groups is not None and "option_class_ids" in required:
                    option_groups(ids, groups, at)
            plan.append(PlannedRow(len(plan), config, r, rid))
    if not plan:
        raise VlmrobustError(f"{reader.source}: no rows to predict")
    return plan
