"""The copies of a question (clean, then every corruption × severity), made in
memory. Selectors and embedders read the arrays; PNGs are encoded only for the
kept questions, straight into the dataset, so the disk is written once.

Nothing here is cached: a copy is a pure function of (seed, source/source_id,
image bytes, size cap, corruption, severity), and remaking it (~6 ms per copy
at 500×375 on one core) is cheaper than writing, keeping and re-reading its PNG.
Worker processes make the copies while the caller's model runs; at most
``2 × workers`` questions, and at most 1 GiB of their copies, wait for the
caller, so memory stays bounded whatever the image size.
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

# copies waiting in this process for their consumer: 1 GiB holds 19 questions
# of 96 copies at 500×375 (more than 16 workers make), 4 at 1024×768
PENDING_BYTES = 1 << 30


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


def copies_nbytes(task: CopyTask) -> int:
    """The size of a question's copies as arrays, from the image header alone
    (an upper bound for their PNGs too): the memory a pending result holds."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(task.image)) as im:
        w, h = im.size
    if task.max_side is not None and max(w, h) > task.max_side:
        scale = task.max_side / max(w, h)
        w, h = max(1, round(w * scale)), max(1, round(h * scale))
    return len(variants(task.corruptions, task.severities)) * w * h * 3


def encode_copies(task: CopyTask) -> list[tuple[bytes, str]]:
    """Every copy as PNG bytes (fixed encoder settings: equal pixels, equal
    bytes) with their sha256, hashed here so that the workers, not the writing
    process, pay for it."""
    import hashlib

    from vlmrobust.builders.corruptions.images import BENCH_C_PNG_LEVEL, encode_png

    pngs = [encode_png(arr, BENCH_C_PNG_LEVEL) for arr in corrupt_copies(task)]
    return [(data, hashlib.sha256(data).hexdigest()) for data in pngs]


def _init_worker() -> None:
    import signal

    import cv2

    # one process per CPU already: OpenCV's own pool would oversubscribe them
    cv2.setNumThreads(1)
    # Ctrl-C reaches the whole process group: the parent stops the build (and
    # says how to resume); a worker's own traceback would only be noise
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Workers:
    """A process pool shared by a build's stages, started on first use (a
    spawned worker takes seconds to import and warm the corruption kernels, so
    the selection and writing stages reuse the same ones). ``n == 1`` runs in
    this process."""

    def __init__(self, n: int, budget: int = PENDING_BYTES) -> None:
        if n < 1:
            raise ValueError(f"workers must be >= 1, got {n}")
        if budget < 1:
            raise ValueError(f"budget must be >= 1 byte, got {budget}")
        self.n = n
        self.budget = budget
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T],
            cost: Callable[[T], int] | None = None) -> Iterator[R]:
        """``map(fn, items)`` in order. At most ``2 × n`` items are pending,
        and with ``cost`` (an item's result size in bytes, estimated) at most
        ``budget`` bytes of them (one item at least), so a slow consumer never
        makes results pile up in memory. ``fn`` must be a module-level
        function (it is sent to the workers by name)."""
        if self.n == 1:
            yield from map(fn, items)
            return
        if self._pool is None:
            import multiprocessing

            # spawn: the parent may hold torch/OpenMP threads that fork would copy broken
            self._pool = ProcessPoolExecutor(self.n, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init_worker)
        pending: deque[tuple[Future[R], int]] = deque()
        held = 0
        try:
            for item in items:
                size = cost(item) if cost is not None else 0
                while pending and (len(pending) >= 2 * self.n or held + size > self.budget):
                    held -= pending[0][1]
                    # no local keeps the future (and its result) alive after the yield
                    yield pending.popleft()[0].result()
                pending.append((self._pool.submit(fn, item), size))
                held += size
            while pending:
                yield pending.popleft()[0].result()
        finally:
            for fut, _ in pending:  # a consumer that stopped early (or was killed)
                fut.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int | Workers = 1,
                cost: Callable[[T], int] | None = None) -> Iterator[R]:
    """``map(fn, items)`` in order over ``workers`` (a count: a pool for this
    call only; or a shared :class:`Workers`).

    >>> list(ordered_map(abs, [-2, 3, -1]))
    [2, 3, 1]
    """
    if isinstance(workers, Workers):
        yield from workers.map(fn, items, cost)
        return
    with Workers(workers) as pool:
        yield from pool.map(fn, items, cost)


def copy_tasks(cands: Sequence[Candidate], corruptions: Sequence[str],
               severities: Sequence[int], seed: int, max_side: int | None) -> list[CopyTask]:
    return [CopyTask(c.key, c.image, tuple(corruptions), tuple(severities), seed, max_side)
            for c in cands]
