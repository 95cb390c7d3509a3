"""Per-request deadlines of the endpoint client, kept by one watchdog thread
(issue 39.3: a Timer thread per request cost ~1 ms of CPU each).

A socket timeout only bounds each read, so a server that drips a byte every
half second, or sends ``100 Continue`` forever, would otherwise hold a request
without end. At its deadline the socket its request runs on (a new one, or
the thread's kept-alive one: the client calls :meth:`Deadline.watch` either
way) is shut down; the read in progress then fails, ``Deadline.expired`` says
why, and the client drops that connection.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from typing import Any


class Deadline:
    """The deadline of one request, ``seconds`` after entering the block; the
    sockets handed to :meth:`watch` in the block are shut at it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = False

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                _shut(sock)

    def fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._socks:
                _shut(sock)

    def __enter__(self) -> Deadline:
        _WATCHDOG.add(time.monotonic() + self.seconds, self)
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._done = True  # the watchdog drops it when it comes due
            self._socks.clear()  # a kept-alive socket is the next request's to watch


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread firing deadlines as they come due (a heap by time)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, at: float, deadline: Deadline) -> None:
        with self._cond:
            heapq.heappush(self._heap, (at, next(self._seq), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="endpoint-deadlines")
                self._thread.start()
            elif self._heap[0][2] is deadline:
                self._cond.notify()  # earlier than what the thread sleeps towards

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(None if not self._heap
                                    else self._heap[0][0] - time.monotonic())
                _, _, deadline = heapq.heappop(self._heap)
            deadline.fire()


_WATCHDOG = _Watchdog()
