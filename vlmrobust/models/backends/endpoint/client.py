"""HTTP for the endpoint backend: JSON POST/GET to an OpenAI-compatible server with
bounded responses, retries with exponential backoff on 429, 5xx, timeouts and
refused connections (honouring ``Retry-After``), and one-line errors.

The API key is read from the environment when a request is made, sent only in the
``Authorization`` header, and scrubbed from every message this module raises
(a server may echo request headers back in an error body).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import MIB, parse_json_bounded
from vlmrobust.models.backends.endpoint.body import json_bytes
from vlmrobust.models.backends.endpoint.connections import Connections, Target, target
from vlmrobust.models.backends.endpoint.deadline import Deadline

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class EndpointError(VlmrobustError):
    """A request to a served model failed (after its retries, where retrying helps);
    ``status`` is the HTTP status of a refusal that is not worth retrying."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def public_url(url: str) -> str:
    """``url`` without credentials, query or fragment: what may be printed or recorded.

    >>> public_url("https://user:secret@api.example.com:8443/v1/?key=abc#x")
    'https://api.example.com:8443/v1'
    """
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _shown(parts: urllib.parse.SplitResult) -> str:
    """A URL that failed to parse, without credentials, query or fragment."""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def check_base_url(url: str) -> str:
    """The base URL (``http(s)://host:port/v1``) checked and stripped of credentials."""
    parts = urllib.parse.urlsplit(url)
    if not url.isascii() or not (parts.hostname or "").isascii():
        raise EndpointError(f"--endpoint-url {url.encode('ascii', 'backslashreplace').decode()!r}"
                            ": write the URL in ASCII (a non-ASCII host in its xn-- form)")
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # urllib's "Port out of range 0-65535"
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise EndpointError(f"--endpoint-url {_shown(parts)!r}: give the server's base "
                            "URL with a port of 1 to 65535, e.g. http://localhost:8000/v1")
    if parts.username or parts.password or parts.query:
        raise EndpointError(f"--endpoint-url {public_url(url)}: credentials and query strings "
                            "do not belong in the URL; put the key in the variable named by "
                            "--api-key-env")
    return public_url(url)


@dataclass(frozen=True)
class RetryPolicy:
    """``max_tries`` attempts per request; the n-th wait is ``base_s * 2**n`` capped at
    ``max_wait_s``, or the server's ``Retry-After`` (also capped)."""

    max_tries: int = 6
    base_s: float = 0.5
    max_wait_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_tries < 1:
            raise ValueError(f"max_tries must be >= 1, got {self.max_tries}")
        if self.base_s < 0 or self.max_wait_s < 0:
            raise ValueError("backoff times must be >= 0")

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait_s)
        return float(min(self.base_s * (2 ** attempt), self.max_wait_s))


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), else None.

    >>> retry_after_seconds("3"), retry_after_seconds(None), retry_after_seconds("soon")
    (3.0, None, None)
    >>> retry_after_seconds("nan") is None, retry_after_seconds("inf")
    (True, inf)
    >>> retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0)
    10.0
    """
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:  # "nan" parses as a float but is no delay: ignored like any unreadable value
        return max(seconds, 0.0) if not math.isnan(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status


class HttpClient:
    """JSON over HTTP to one server. Thread-safe: each thread keeps its own
    keep-alive connection (endpoint.connections)."""

    def __init__(self, base_url: str, api_key_env: str | None = "OPENAI_API_KEY",
                 timeout_s: float = 120.0, retry: RetryPolicy | None = None,
                 max_response_bytes: int = 16 * MIB,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.base_url = check_base_url(base_url)
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.retry = retry or RetryPolicy()
        self.max_response_bytes = int(max_response_bytes)
        self._sleep = sleep
        self.connections = Connections()

    def _key(self) -> str:
        return os.environ.get(self.api_key_env, "") if self.api_key_env else ""

    def scrub(self, text: str) -> str:
        key = self._key()
        return text.replace(key, "***") if key and len(key) >= 4 else text

    def url(self, path: str) -> str:
        return self.base_url + "/" + path.lstrip("/")

    def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        data = json_bytes(body)  # = json.dumps(body, ensure_ascii=False), images spliced in
        return self._with_retries(path, lambda: self._once(self.url(path), data))

    def post_json_once(self, url: str, body: Mapping[str, Any],
                       timeout_s: float | None = None) -> Any:
        """One POST to an absolute URL, no retries (for optional server routes and
        probes): every failure is one EndpointError, with the HTTP status if any."""
        try:
            return self._once(url, json_bytes(body), timeout_s=timeout_s)
        except _Retryable as exc:
            raise EndpointError(self.scrub(f"{url}: {exc.reason}"), status=exc.status) from None

    def get_json(self, url: str, timeout_s: float | None = None) -> Any:
        """One GET of an absolute URL, no retries (for optional server information)."""
        return self._once(url, None, timeout_s=timeout_s)

    def _with_retries(self, path: str, call: Callable[[], Any]) -> Any:
        tries = self.retry.max_tries
        for attempt in range(tries):
            try:
                return call()
            except _Retryable as exc:
                if attempt + 1 == tries:
                    raise EndpointError(self.scrub(
                        f"{self.url(path)}: {exc.reason} (gave up after {tries} tries); "
                        "check that the server is up, or raise --endpoint-retries"
                    )) from None
                self._sleep(self.retry.wait(attempt, exc.retry_after))
        raise AssertionError("unreachable")

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "vlmrobust-endpoint"}
        if has_body:
            headers["Content-Type"] = "application/json"
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _once(self, url: str, data: bytes | None, timeout_s: float | None = None) -> Any:
        where = target(url)
        seconds = timeout_s or self.timeout_s
        late = f"no response within {seconds:g} s"
        try:
            with Deadline(seconds) as deadline:
                status, retry_after, raw = self._exchange(where, url, data, seconds, deadline)
        except (_Retryable, EndpointError):
            self.connections.drop(where)
            if deadline.expired:
                raise _Retryable(late) from None
            raise
        if deadline.expired:  # shut at the deadline just as the answer was read
            self.connections.drop(where)
            raise _Retryable(late)
        if not 200 <= status < 300:  # a redirect too: never followed (endpoint.connections)
            detail = self.scrub(f"HTTP {status}{': ' + raw if raw else ''}")
            if status in RETRY_STATUS:
                raise _Retryable(detail, retry_after, status)
            raise EndpointError(f"{url}: {detail}", status=status)
        try:
            return parse_json_bounded(raw, url, error=EndpointError)
        except EndpointError as exc:
            head = raw[:60].decode("utf-8", "replace").replace("\n", " ")
            raise EndpointError(self.scrub(f"{exc} (response began {head!r}); is "
                                           f"{self.base_url} an OpenAI-compatible server?")
                                ) from None

    def _exchange(self, where: Target, url: str, data: bytes | None, seconds: float,
                  deadline: Deadline) -> tuple[int, float | None, Any]:
        """(status, Retry-After, body) of one request on this thread's connection:
        the body at most ``max_response_bytes`` (bytes), or for a status that is
        not 2xx the server's message (str). Failures as _Retryable (worth another
        try) or EndpointError; the caller drops the connection after either."""
        method = "POST" if data is not None else "GET"
        headers = self._headers(data is not None)
        while True:
            conn, reused = self.connections.get(where, seconds)
            try:
                if not reused:
                    try:
                        deadline.watch(self.connections.connect(conn))
                    except OSError as exc:
                        if isinstance(exc, TimeoutError) or deadline.expired:
                            raise _Retryable(f"no response within {seconds:g} s") from None
                        text = getattr(exc, "strerror", None) or str(exc)
                        raise _Retryable(f"cannot connect ({text})") from None
                else:
                    deadline.watch(conn.sock)
                conn.request(method, where.path, body=data, headers=headers)
                resp = conn.getresponse()
            except (ConnectionError, http.client.RemoteDisconnected) as exc:
                self.connections.drop(where)
                if reused and not deadline.expired:
                    continue  # closed by the server as the request went out: once more, anew
                raise _Retryable(f"connection lost ({type(exc).__name__})") from None
            except TimeoutError:
                raise _Retryable(f"no response within {seconds:g} s") from None
            except (OSError, http.client.HTTPException) as exc:
                raise _Retryable(f"connection lost ({type(exc).__name__})") from None
            break
        body: bytes | str
        try:
            status = resp.status
            if not 200 <= status < 300:
                body = _error_message(resp.read(64 * 1024))
                retry_after = retry_after_seconds(resp.getheader("Retry-After"))
            else:
                body, retry_after = self._read_body(resp, url), None
        except TimeoutError:
            raise _Retryable(f"no response within {seconds:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Retryable(f"connection lost ({type(exc).__name__})") from None
        if not resp.isclosed():  # a part left unread: the connection cannot go on
            self.connections.drop(where)
        return status, retry_after, body

    def _read_body(self, resp: http.client.HTTPResponse, url: str) -> bytes:
        too_big = EndpointError(f"{url}: response larger than {self.max_response_bytes} bytes; "
                                "lower max tokens or raise --endpoint-max-response-mib")
        if resp.length is not None and resp.length > self.max_response_bytes:
            raise too_big  # said by its Content-Length: nothing read
        raw = resp.read(self.max_response_bytes + 1)
        if len(raw) > self.max_response_bytes:
            raise too_big
        return raw


def _error_message(raw: bytes) -> str:
    """The server's error message, one line of at most 300 characters."""
    text = raw.decode("utf-8", "replace")
    try:
        obj = json.loads(text)
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj.get("message", obj)))
        if isinstance(err, dict):
            err = err.get("message", err)
        text = err if isinstance(err, str) else json.dumps(err)
    return " ".join(text.split())[:300]
