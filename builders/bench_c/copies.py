"""The copies of a question (clean, then every corruption × severity), made in
memory. Selectors and embedders read the arrays; PNGs are encoded only for the
kept questions, straight into the dataset, so the disk is written once.

Nothing here is cached: a copy is a pure function of (seed, source/source_id,
image bytes, size cap, corruption, severity), and remaking it (~6 ms per copy
at 500×375 on one core) is cheaper than writing, keeping and re-reading its PNG.
Worker processes make the copies while the caller's model runs; at most
``2 × workers`` questions are in flight, so memory stays bounded.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from vlmrobust.builders.bench_c.sources import Candidate
from vlmrobust.builders.bench_c.work import variants

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class CopyTask:
    """What determines the copies of one question."""

    key: str  # source/source_id: the per-item seed's id
    image: bytes
    corruptions: tuple[str, ...]
    severities: tuple[int, ...]
    seed: int
    max_side: int | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("CopyTask.key must be non-empty")
        if self.max_side is not None and self.max_side < 1:
            raise ValueError(f"max_side must be >= 1, got {self.max_side}")


def clean_array(task: CopyTask) -> np.ndarray:
    """The clean copy: the source image as RGB uint8, scaled to the size cap."""
    from vlmrobust.builders.corruptions import to_rgb_array
    from vlmrobust.builders.corruptions.images import decode_image, fit_within

    return fit_within(to_rgb_array(decode_image(task.image)), task.max_side)


def corrupt_copies(task: CopyTask) -> list[np.ndarray]:
    """Every copy as an (H, W, 3) uint8 array, in :func:`variants` order."""
    from vlmrobust.builders.corruptions import apply_corruption
    from vlmrobust.builders.corruptions.draws import draws_for

    rgb = clean_array(task)
    return [rgb if c == "none" else apply_corruption(rgb, c, s, draws_for(task.seed, task.key, c, s))
            for c, s in variants(task.corruptions, task.severities)]


def encode_copies(task: CopyTask) -> list[tuple[bytes, str]]:
    """Every copy as PNG bytes (fixed encoder settings: equal pixels, equal
    bytes) with their sha256, hashed here so that the workers, not the writing
    process, pay for it."""
    import hashlib

    from vlmrobust.builders.corruptions.images import BENCH_C_PNG_LEVEL, encode_png

    pngs = [encode_png(arr, BENCH_C_PNG_LEVEL) for arr in corrupt_copies(task)]
    return [(data, hashlib.sha256(data).hexdigest()) for data in pngs]


def _init_worker() -> None:
    import cv2

    # one process per CPU already: OpenCV's own pool would oversubscribe them
    cv2.setNumThreads(1)


class Workers:
    """A process pool shared by a build's stages, started on first use (a
    spawned worker takes seconds to import and warm the corruption kernels, so
    the selection and writing stages reuse the same ones). ``n == 1`` runs in
    this process."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"workers must be >= 1, got {n}")
        self.n = n
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``map(fn, items)`` in order, with at most ``2 × n`` results pending,
        so a slow consumer never makes results pile up in memory. ``fn`` must
        be a module-level function (it is sent to the workers by name)."""
        if self.n == 1:
            yield from map(fn, items)
            return
        if self._pool is None:
            import multiprocessing

            # spawn: the parent may hold torch/OpenMP threads that fork would copy broken
            self._pool = ProcessPoolExecutor(self.n, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init_worker)
        pending: deque[Future[R]] = deque()
        try:
            for item in items:
                pending.append(self._pool.submit(fn, item))
                if len(pending) >= 2 * self.n:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for fut in pending:  # a consumer that stopped early (or was killed)
                fut.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int | Workers = 1
                ) -> Iterator[R]:
    """``map(fn, items)`` in order over ``workers`` (a count: a pool for this
    call only; or a shared :class:`Workers`).

    >>> list(ordered_map(abs, [-2, 3, -1]))
    [2, 3, 1]
    """
    if isinstance(workers, Workers):
        yield from workers.map(fn, items)
        return
    with Workers(workers) as pool:
        yield from pool.map(fn, items)


def copy_tasks(cands: Sequence[Candidate], corruptions: Sequence[str],
               severities: Sequence[int], seed: int, max_side: int | None) -> list[CopyTask]:
    return [CopyTask(c.key, c.image, tuple(corruptions), tuple(severities), seed, max_side)
            for c in cands]
