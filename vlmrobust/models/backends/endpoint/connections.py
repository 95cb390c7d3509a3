"""Keep-alive HTTP/1.1 connections of the endpoint client, one per thread and
server (issue 39.3): urllib opened a TCP connection for every request (it
sends ``Connection: close``), ~0.5 ms of the client's CPU each and the
server's accept besides, which capped a run at ~150 requests/s on this
machine whatever the number in flight.

http.client is used directly: it never reads a proxy from the environment
and never follows a redirect, so neither a proxy nor the host a redirect
names can see the API key. A connection is only ever used by the thread that
opened it; one the server closed while it sat idle is noticed before it is
reused (:func:`closed_by_server`), and the client sends once more on a new
connection when the server closed it just as a request went out.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import select
import socket
import ssl
import threading
import urllib.parse
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """Where a URL's request goes: a connection's key and the request line's path."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def server(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port


@functools.lru_cache(maxsize=256)
def target(url: str) -> Target:
    """The connection key and request path of an absolute http(s) URL.

    >>> target("http://127.0.0.1:8000/v1/chat/completions")
    Target(scheme='http', host='127.0.0.1', port=8000, path='/v1/chat/completions')
    >>> target("https://api.example.com/v1/models?x=1").port
    443
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme, parts.hostname, port, path)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether an idle keep-alive socket can no longer carry a request: it is
    readable, which between requests means the server closed it (or sent
    something unasked). A zero-timeout poll, a few microseconds."""
    try:
        if hasattr(select, "poll"):  # select.select fails on descriptors >= 1024
            poller = select.poll()
            poller.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):  # closed underneath us
        return True


class Connections:
    """Each thread's open connection per server, kept between requests."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._tls_context: ssl.SSLContext | None = None
        self._lock = threading.Lock()
        self.opened = 0  # TCP connections made, over all threads

    def _mine(self) -> dict[tuple[str, str, int], http.client.HTTPConnection]:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        return conns

    def get(self, where: Target, timeout_s: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection to ``where`` and whether it is a reused one
        (its socket already open); not connected yet when new."""
        conns = self._mine()
        conn = conns.get(where.server)
        if conn is not None and conn.sock is not None and closed_by_server(conn.sock):
            self.drop(where)
            conn = None
        if conn is None:
            conn = conns[where.server] = self._new(where, timeout_s)
        conn.timeout = timeout_s
        if conn.sock is None:
            return conn, False
        conn.sock.settimeout(timeout_s)  # this request's; the last may have had another
        return conn, True

    def _new(self, where: Target, timeout_s: float) -> http.client.HTTPConnection:
        if where.scheme == "http":
            return http.client.HTTPConnection(where.host, where.port, timeout=timeout_s)
        with self._lock:  # loading the CA store costs milliseconds: once per client
            if self._tls_context is None:
                self._tls_context = ssl.create_default_context()
        return http.client.HTTPSConnection(where.host, where.port, timeout=timeout_s,
                                           context=self._tls_context)

    def connect(self, conn: http.client.HTTPConnection) -> socket.socket:
        conn.connect()
        with self._lock:
            self.opened += 1
        assert conn.sock is not None
        return conn.sock

    def drop(self, where: Target) -> None:
        """Close this thread's connection to ``where`` (broken, half read, or its
        request's deadline shut it); the next request opens a new one."""
        conn = self._mine().pop(where.server, None)
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
