"""Re-scoring a build's submissions in worker processes (issue 37.2: at 0.3 s of
CPU a model, 4,000 models took 26 minutes on one core).

Each worker keeps one :class:`DatasetStore` and one :class:`DatasetCache` for its
life, so the per-dataset work (shard check, caps, indexes) is done once per
worker. A worker sends back the :class:`Submission` with each section's dataset
index replaced by its cache key (:class:`IndexRef`: the index is the largest part
and the same for every model); the build puts back one index per key from its own
cache, so that the sections of one dataset share one index object, as they do
in-process (leaderboard/fits/pairwise.py compares indexes by identity).

Results come back in folder order whatever the number of workers, and each is
computed by the same code as in-process, so the site is the same with any --jobs.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vlmrobust.evaluation.validate.dataset_cache import DatasetCache
from vlmrobust.leaderboard.submission import LeaderboardInputError, Submission

# Below this many folders the build re-scores in-process: starting a worker
# (imports, then each dataset's cache) costs about as much as 10 models.
MIN_POOL_MODELS = 24
# Folders handed to a worker at a time: fewer round trips, still balanced.
CHUNK = 8

LoadOne = Callable[[Path, Any, DatasetCache], Submission]
# One worker process's loader, store and cache (set by _start in the worker only).
_WORKER: dict[str, Any] = {}


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_jobs(jobs: int | None) -> int:
    """``jobs`` as a worker count (None: :func:`usable_cpus`).

    >>> check_jobs(3)
    3
    >>> check_jobs(0)
    Traceback (most recent call last):
    ...
    vlmrobust.leaderboard.submission.LeaderboardInputError: --jobs must be a whole number >= 1, got 0; pass --jobs 1 to re-score in this process
    """
    if jobs is None:
        return usable_cpus()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise LeaderboardInputError(f"--jobs must be a whole number >= 1, got {jobs!r}; pass "
                                    "--jobs 1 to re-score in this process")
    return jobs


@dataclass(frozen=True)
class IndexRef:
    """Where a worker's dataset index comes from: :meth:`DatasetCache.index`'s arguments."""

    dataset_dir: str
    configs: tuple[str, ...] | None


def rescore_all(folders: Sequence[Path], load_one: LoadOne, store: Any,
                jobs: int | None = None) -> list[Submission | str]:
    """``load_one(folder, store, cache)`` of every folder, in folder order: the
    :class:`Submission`, or the one-line message it was refused with. ``jobs``
    workers (None: the usable CPUs) when there are at least MIN_POOL_MODELS folders."""
    workers = min(check_jobs(jobs), len(folders))
    cache = DatasetCache()
    if workers <= 1 or len(folders) < MIN_POOL_MODELS:
        return [_load(load_one, folder, store, cache) for folder in folders]
    methods = multiprocessing.get_all_start_methods()
    # never fork: the parent's threads (pyarrow's pool, BLAS) may hold locks
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start,
                             initargs=(load_one, store)) as pool:
        results = list(pool.map(_in_worker, folders, chunksize=CHUNK))
    return [r if isinstance(r, str) else _attach(r, cache) for r in results]


def _load(load_one: LoadOne, folder: Path, store: Any, cache: DatasetCache) -> Submission | str:
    try:
        return load_one(folder, store, cache)
    except LeaderboardInputError as exc:
        return str(exc)


def _start(load_one: LoadOne, store: Any) -> None:
    _WORKER.update(load=load_one, store=store, cache=DatasetCache())


def _in_worker(folder: Path) -> Submission | str:
    cache: DatasetCache = _WORKER["cache"]
    found = _load(_WORKER["load"], folder, _WORKER["store"], cache)
    return found if isinstance(found, str) else _detach(found, cache)


def _detach(sub: Submission, cache: DatasetCache) -> Submission:
    keys = {id(index): key for key, index in cache.indexes.items()}
    evidence = {name: replace(ev, index=IndexRef(*keys[id(ev.index)]))
                if ev.index is not None and id(ev.index) in keys else ev
                for name, ev in sub.evidence.items()}
    return replace(sub, evidence=evidence)


def _attach(sub: Submission, cache: DatasetCache) -> Submission:
    evidence = {name: replace(ev, index=cache.index(Path(ev.index.dataset_dir), ev.index.configs))
                if isinstance(ev.index, IndexRef) else ev
                for name, ev in sub.evidence.items()}
    return replace(sub, evidence=evidence)
