"""Requests of the endpoint backend, a bounded number in flight at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from vlmrobust.core.ordered_threads import DaemonPool, stream_in_order

T = TypeVar("T")
R = TypeVar("R")


def in_order(fn: Callable[[T], R], items: Sequence[T], concurrency: int,
             pool: DaemonPool | None = None) -> list[R]:
    """``fn`` over ``items``, ``concurrency`` at a time, results in order. On the
    first failure no further request starts (those finished are cached), those
    in flight end, and the failure of the earliest item is raised. Workers are daemon threads and the
    wait polls, so Ctrl-C ends the run at once instead of after the requests in
    flight time out (:func:`vlmrobust.core.ordered_threads.stream_in_order`).
    ``pool``: the backend's own ``concurrency`` threads, shared by every call
    in flight, so that the bound holds over all of them together."""
    if concurrency == 1 or len(items) <= 1:
        return [fn(x) for x in items]
    return list(stream_in_order(fn, items, min(concurrency, len(items)), ahead=len(items),
                                pool=pool, settle=True))
