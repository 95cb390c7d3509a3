"""evaluation/validate/dataset_cache.py (issue 37.2): re-scoring many submissions
against one dataset build does the per-dataset work (manifest, shard check,
prediction caps, indexes) once per build, not once per submission; the re-scored
numbers are the same as without the cache."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.submission import real_submissions
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.validate.dataset_cache import DatasetCache, DatasetFacts
from vlmrobust.leaderboard.trust.verify import (
    DatasetStore,
    load_verified_submissions,
    rescore_folder,
)


def _count_row_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every parquet read of a dataset shard, by file (the predictions are
    parquet too: only files under a ``datasets`` folder are counted)."""
    import pyarrow.parquet as pq

    reads: Counter[str] = Counter()
    real = pq.read_table

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        if "datasets" in Path(str(source)).parts:
            reads[str(source)] += 1
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", counting)
    return reads


def test_dataset_rows_read_once_per_build_not_per_submission(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subs1, datasets1 = real_submissions(tmp_path / "one", 1)
    subs3, datasets3 = real_submissions(tmp_path / "three", 3)
    reads = _count_row_reads(monkeypatch)
    load_verified_submissions(subs1, datasets=datasets1)
    one = sum(reads.values())
    reads.clear()
    loaded = load_verified_submissions(subs3, datasets=datasets3)
    assert len(loaded) == 3
    assert one > 0
    # three submissions of the same two datasets read their rows as often as one does
    assert sum(reads.values()) == one, dict(reads)


def test_cached_rescoring_equals_uncached(tmp_path: Path) -> None:
    subs, datasets = real_submissions(tmp_path, 3)
    store = DatasetStore(datasets)
    cache = DatasetCache()
    folders = sorted(p for p in subs.iterdir() if p.is_dir())
    shared = [rescore_folder(f, store, cache) for f in folders]
    alone = [rescore_folder(f, DatasetStore(datasets)) for f in folders]
    assert json.dumps(shared, sort_keys=True) == json.dumps(alone, sort_keys=True)
    assert len(cache.facts_of) == 2 and len(cache.shards_checked) == 2


def test_failed_shard_check_is_not_remembered(tmp_path: Path) -> None:
    _, datasets = real_submissions(tmp_path, 1)
    ds = datasets[0]
    shard = next(ds.rglob("*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-8] + b"tampered")
    cache = DatasetCache()
    for _ in range(2):  # every submission naming a damaged build is refused
        with pytest.raises(VlmrobustError, match=r"rebuild|checksum|sha256|changed"):
            cache.verify_shards(ds)
    assert cache.shards_checked == set()


def test_facts_checks() -> None:
    with pytest.raises(ValueError, match="known is empty"):
        DatasetFacts({}, (), 100, None)
    with pytest.raises(ValueError, match="max_rows is 0"):
        DatasetFacts({}, ("a",), 0, None)
