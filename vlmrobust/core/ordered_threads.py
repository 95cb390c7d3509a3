"""A function over a stream, a bounded number of calls at a time in threads,
the results handed back in the stream's order (issue 39.3: the endpoint
backend's requests, and predict's batches of them, as one sliding window)."""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import Future, wait
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

POLL_S = 0.2  # waits poll, so that Ctrl-C in the caller's thread ends the run at once


class DaemonPool:
    """``size`` daemon threads running submitted calls, started on first use and
    kept: a process that stops (Ctrl-C, an error) does not wait for the calls in
    flight, as it would for concurrent.futures' threads, and a backend that
    keeps one pool for its life starts no thread per call."""

    def __init__(self, size: int, name: str = "pool") -> None:
        if size < 1:
            raise ValueError(f"pool size must be >= 1, got {size}")
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue())
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def submit(self, call: Callable[[], R]) -> Future[R]:
        future: Future[R] = Future()
        with self._lock:
            if len(self._threads) < self.size:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self.name}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        self._jobs.put((future, call))
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, call = job
            if not future.set_running_or_notify_cancel():
                continue  # cancelled before it started
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)

    def cancel_queued(self) -> int:
        """Cancel the calls not started yet (those running go on); returns how many."""
        cancelled, keep = 0, 0
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                keep += 1
            elif job[0].cancel():
                cancelled += 1
        for _ in range(keep):
            self._jobs.put(None)
        return cancelled

    def close(self) -> None:
        """Let the threads end once the calls queued before this one have run."""
        with self._lock:
            for _ in self._threads:
                self._jobs.put(None)
            self._threads = []


def stream_groups_in_order(fn: Callable[[T], R], items: Iterable[T], width: int,
                           ahead: int | None = None, pool: DaemonPool | None = None,
                           settle: bool = False, on_stop: Callable[[], object] | None = None,
                           ) -> Iterator[list[R]]:
    """``fn`` over ``items`` on ``pool`` (default: a pool of ``width`` threads
    of this call's own), the results in order, each yield being the next
    result with those after it that are already finished (a caller that
    journals them writes once for the lot). Items are drawn from ``items`` in
    the caller's thread (a generator is fine), at most ``ahead`` (default
    ``2 * width``) from the one awaited, so a new call starts as soon as any
    ends, past a slow one: a sliding window, not batches.

    On the first failure (of a call, or of ``items`` itself) no further call
    starts; the results before it are yielded, then the earliest failure is
    raised: first ``on_stop()`` (e.g. cancel work those calls queued
    elsewhere), then with ``settle`` a wait for the calls still running (a
    caller that retries must not meet them). Closing the iterator early cancels
    the calls not started, without waiting for those in flight (Ctrl-C).
    """
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    ahead = 2 * width if ahead is None else ahead
    if ahead < width:
        raise ValueError(f"ahead must be >= width ({width}), got {ahead}")
    own = pool is None
    runner = DaemonPool(width, "ordered") if pool is None else pool
    it = iter(items)
    futures: dict[int, Future[R]] = {}
    lock = threading.Lock()
    failed: list[int] = []  # the index of the earliest failed call so far

    def stop_after(i: int, future: Future[R]) -> None:
        if future.cancelled() or future.exception() is None:
            return
        with lock:  # no further call starts: cancel those queued after this one
            if not failed or i < failed[0]:
                failed[:] = [i]
            later = [f for k, f in futures.items() if k > i]
        for f in later:
            f.cancel()

    started = head = 0
    source_error: BaseException | None = None
    exhausted = False
    failing = False
    try:
        while True:
            while (not exhausted and source_error is None and not failed
                   and started - head < ahead):
                try:
                    x = next(it)
                except StopIteration:
                    exhausted = True
                    break
                except BaseException as exc:  # raised once the calls before it are yielded
                    source_error = exc
                    break
                future = runner.submit(functools.partial(fn, x))
                with lock:
                    futures[started] = future
                future.add_done_callback(functools.partial(stop_after, started))
                started += 1
            if head == started:
                if source_error is not None:
                    failing = True
                    raise source_error
                return
            try:
                group = [_wait(futures[head])]
            except Exception:  # not Ctrl-C: that ends the run at once
                failing = True
                raise
            with lock:
                del futures[head]
            head += 1
            while head < started and futures[head].done() and not futures[head].cancelled():
                if futures[head].exception() is not None:
                    break  # raised on the next round, after this group
                group.append(futures[head].result())
                with lock:
                    del futures[head]
                head += 1
            yield group
    finally:
        with lock:
            pending = list(futures.values())
        for f in pending:
            f.cancel()
        if failing and on_stop is not None:
            on_stop()
        if failing and settle:
            for f in pending:
                _settle(f)
        if own:
            runner.close()


def stream_in_order(fn: Callable[[T], R], items: Iterable[T], width: int,
                    ahead: int | None = None, pool: DaemonPool | None = None,
                    settle: bool = False) -> Iterator[R]:
    """:func:`stream_groups_in_order`, one result at a time.

    >>> list(stream_in_order(lambda x: x * x, range(6), width=3))
    [0, 1, 4, 9, 16, 25]
    """
    if width == 1 and pool is None:  # in the caller's thread, one by one
        for x in items:
            yield fn(x)
        return
    for group in stream_groups_in_order(fn, items, width, ahead, pool, settle):
        yield from group


def _settle(future: Future[Any]) -> None:
    while not future.done():
        wait([future], timeout=POLL_S)


def _wait(future: Future[R]) -> R:
    while not future.done():
        wait([future], timeout=POLL_S)
    return future.result()


class SingleFlight:
    """One call per key at a time: a caller asking for a key whose call is
    running waits for that call and shares its result (or its exception)."""

    def __init__(self) -> None:
        self._pending: dict[Hashable, Future[Any]] = {}
        self._lock = threading.Lock()

    def do(self, key: Hashable, call: Callable[[], R]) -> R:
        with self._lock:
            future = self._pending.get(key)
            lead = future is None
            if future is None:
                future = self._pending[key] = Future()
        if not lead:
            _settle(future)
            result: R = future.result()
            return result
        try:
            value = call()
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._pending[key]
        future.set_result(value)
        return value
