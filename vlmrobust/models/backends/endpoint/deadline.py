"""Per-request deadlines of the endpoint client, kept by one watchdog thread,
and the one urllib opener every request shares (issue 39.3: a Timer thread,
four classes and an opener built per request cost ~1 ms of CPU each, a third
of a request's client time at 64 in flight).

A socket timeout only bounds each read, so a server that drips a byte every
half second, or sends ``100 Continue`` forever, would otherwise hold a request
without end. At its deadline a request's sockets are shut down; the read in
progress then fails and ``Deadline.expired`` says why.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import itertools
import socket
import threading
import time
import urllib.request
from typing import Any

_local = threading.local()  # the deadline of the request this thread is making


class Deadline:
    """The deadline of one request, ``seconds`` after entering the block; the
    sockets its connections open (in the block, in this thread) are shut at it."""

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
        _local.deadline = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.deadline = None
        with self._lock:
            self._done = True  # the watchdog drops it when it comes due


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


class _Http(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        deadline = getattr(_local, "deadline", None)
        if deadline is not None:
            deadline.watch(self.sock)


class _Https(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        deadline = getattr(_local, "deadline", None)
        if deadline is not None:
            deadline.watch(self.sock)


class _HttpHandler(urllib.request.HTTPHandler):
    def http_open(self, req: Any) -> Any:
        return self.do_open(_Http, req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: Any) -> Any:
        return self.do_open(_Https, req, context=getattr(self, "_context", None))


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx answer is an error (HTTPError), never followed."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


# direct connections only, no redirects: neither a proxy from the environment nor
# the host a redirect names may see the key (urllib forwards Authorization). Its
# handlers keep no per-request state, so one opener serves every thread.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect(),
                                     _HttpHandler(), _HttpsHandler())
