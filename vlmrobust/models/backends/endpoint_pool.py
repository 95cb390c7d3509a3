"""Requests of the endpoint backend, a bounded number in flight at a time."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def in_order(fn: Callable[[T], R], items: Sequence[T], concurrency: int) -> list[R]:
    """``fn`` over ``items``, ``concurrency`` at a time, results in order. On the
    first failure no further request starts (those finished are cached) and the
    failure of the earliest item is raised. Workers are daemon threads and the
    wait polls, so Ctrl-C ends the run at once instead of after the requests in
    flight time out."""
    n = len(items)
    if concurrency == 1 or n <= 1:
        return [fn(x) for x in items]
    results: list[Any] = [None] * n
    errors: dict[int, BaseException] = {}
    lock = threading.Lock()
    pending = iter(range(n))
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            with lock:
                i = next(pending, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # handed to the caller's thread
                with lock:
                    errors[i] = exc
                stop.set()

    threads = [threading.Thread(target=work, daemon=True, name=f"endpoint-{k}")
               for k in range(min(concurrency, n))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except BaseException:
        stop.set()
        raise
    if errors:
        raise errors[min(errors)]
    return results
