"""The per-dataset work of validating many predictions files against one dataset
build (the leaderboard re-scores every submission, issue 37.2): its manifest, the
check of its shards, its prediction caps, its dataset indexes and retrieval
galleries are read or built once per dataset, not once per submission.

A :class:`DatasetCache` lives as long as its owner keeps it (one
``load_verified_submissions`` call); there is no module-level state. Entries are
keyed by the dataset directory's resolved path, which a leaderboard build maps
one to one to a content fingerprint (``DatasetStore.resolve``), so a cached
entry is never used for another build's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.evaluation.validate.dataset_index import (
    DatasetIndex,
    load_dataset_index,
    manifest_configs,
    max_options,
    max_prediction_rows,
)


@dataclass(frozen=True)
class DatasetFacts:
    """What validating any predictions file against one dataset needs first."""

    manifest: dict[str, Any]
    known: tuple[str, ...]  # its config names, manifest order
    max_rows: int  # row cap of a predictions file
    max_logits: int | None  # most options / classes of any row (None: no options)

    def __post_init__(self) -> None:
        if not self.known:
            raise ValueError("DatasetFacts.known is empty; a dataset has at least one config")
        if self.max_rows < 1:
            raise ValueError(f"DatasetFacts.max_rows is {self.max_rows}; expected >= 1")


@dataclass
class DatasetCache:
    """Caller-owned cache of per-dataset validation work (see the module doc)."""

    indexes: dict[tuple[str, tuple[str, ...] | None], DatasetIndex] = field(default_factory=dict)
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts_of: dict[str, DatasetFacts] = field(default_factory=dict)
    shards_checked: set[str] = field(default_factory=set)
    galleries: dict[tuple[str, str], Any] = field(default_factory=dict)

    def manifest(self, dataset_dir: Path) -> dict[str, Any]:
        """The dataset's manifest.json (read on first use)."""
        from vlmrobust.core.datadir import read_manifest

        key = str(Path(dataset_dir).resolve())
        if key not in self.manifests:
            self.manifests[key] = read_manifest(Path(dataset_dir))
        return self.manifests[key]

    def facts(self, dataset_dir: Path) -> DatasetFacts:
        """The dataset's :class:`DatasetFacts` (computed on first use; call
        :meth:`verify_shards` first: the caps read its rows)."""
        key = str(Path(dataset_dir).resolve())
        found = self.facts_of.get(key)
        if found is None:
            found = dataset_facts(Path(dataset_dir), self.manifest(dataset_dir))
            self.facts_of[key] = found
        return found

    def verify_shards(self, dataset_dir: Path) -> None:
        """Check the dataset's shards against its manifest once per cache; a
        failed check is not remembered, so every submission naming it is refused."""
        from vlmrobust.core.datadir import verify_shards

        key = str(Path(dataset_dir).resolve())
        if key not in self.shards_checked:
            verify_shards(Path(dataset_dir), self.manifest(dataset_dir))
            self.shards_checked.add(key)

    def index(self, dataset_dir: Path, configs: tuple[str, ...] | None) -> DatasetIndex:
        """The dataset's index over ``configs`` (None: every config), built on first use
        (its shards are not checked here: :meth:`verify_shards`)."""
        key = self.index_key(dataset_dir, configs)
        found = self.indexes.get(key)
        if found is None:
            found = load_dataset_index(Path(dataset_dir), None if configs is None else list(configs),
                                       check_shards=False)
            self.indexes[key] = found
        return found

    @staticmethod
    def index_key(dataset_dir: Path, configs: tuple[str, ...] | None
                  ) -> tuple[str, tuple[str, ...] | None]:
        return (str(Path(dataset_dir).resolve()), configs)

    def gallery(self, dataset_dir: Path, config: str, read: Callable[[Path, str], Any]) -> Any:
        """``read(dataset_dir, config)`` (a retrieval gallery), once per cache."""
        key = (str(Path(dataset_dir).resolve()), config)
        if key not in self.galleries:
            self.galleries[key] = read(Path(dataset_dir), config)
        return self.galleries[key]


def dataset_facts(dataset_dir: Path, manifest: dict[str, Any]) -> DatasetFacts:
    """The :class:`DatasetFacts` of ``dataset_dir`` (its ``manifest``) read now."""
    known = manifest_configs(manifest, dataset_dir)
    return DatasetFacts(manifest, tuple(known), max_prediction_rows(manifest, dataset_dir),
                        max_options(dataset_dir, manifest, known))
