"""Request bodies as JSON with their images spliced in (issue 39.3): a 640x480
photo is a ~1 MB base64 data URL, and every request serialised it three times
(the body sent, the cache key, the audit trail's rendering), each a scan of
the whole string for characters to escape: ~6 ms of CPU a request, where the
rest of the request costs ~0.5 ms.

An image's data URL is a :class:`DataURL` (endpoint.images makes them, once
per distinct pixels): a ``str`` like any other to every reader of the body,
but base64 (nothing in it that JSON escapes) and carrying the sha256 of its
text. The body is serialised with a short placeholder in its place and the
URL's own text is spliced in, so the output is byte for byte
``json.dumps(body, ...)``.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterator
from typing import Any

# a placeholder no prompt text holds: a random token per process
_TOKEN = f"vlmrobust-image-{secrets.token_hex(8)}-"
_SLOT = re.compile('"' + re.escape(_TOKEN) + r'(\d+)"')


class DataURL(str):
    """A base64 ``data:`` URL with ``sha256``, the hex digest of its text."""

    sha256: str

    def __new__(cls, url: str) -> DataURL:
        # spliced into JSON as it is: nothing json.dumps would escape may be in it
        if not (url.isascii() and url.isprintable()) or '"' in url or "\\" in url:
            raise ValueError("a data URL must be printable ASCII without quotes or backslashes")
        self = super().__new__(cls, url)
        self.sha256 = hashlib.sha256(url.encode("ascii")).hexdigest()
        return self


def _swap(obj: Any, urls: list[DataURL], label: Any) -> Any:
    """``obj`` with each DataURL replaced by ``label(url, k)`` (``urls[k]`` = url);
    plain scalars are passed over without a call."""
    if isinstance(obj, dict):
        return {k: v if type(v) in _PLAIN else _swap(v, urls, label) for k, v in obj.items()}
    if isinstance(obj, list):
        return [v if type(v) in _PLAIN else _swap(v, urls, label) for v in obj]
    if type(obj) is DataURL:
        urls.append(obj)
        return label(obj, len(urls) - 1)
    return obj


_PLAIN = frozenset({str, int, float, bool, type(None)})


def json_parts(obj: Any, **dumps: Any) -> Iterator[str]:
    """``json.dumps(obj, ensure_ascii=False, **dumps)`` in pieces whose
    concatenation is that text, each DataURL's text one piece of its own."""
    urls: list[DataURL] = []
    text = json.dumps(_swap(obj, urls, lambda url, k: f"{_TOKEN}{k}"),
                      ensure_ascii=False, **dumps)
    if not urls:
        yield text
        return
    pieces = _SLOT.split(text)  # text, slot, text, slot, ..., text
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            yield piece
        else:
            yield '"'
            yield urls[int(piece)]
            yield '"'


def json_bytes(obj: Any, **dumps: Any) -> bytes:
    """``json.dumps(obj, ensure_ascii=False, **dumps).encode("utf-8")``.

    >>> body = {"url": DataURL("data:image/png;base64,AAAA"), "text": "é"}
    >>> json_bytes(body) == json.dumps(body, ensure_ascii=False).encode("utf-8")
    True
    """
    return b"".join(part.encode("utf-8") for part in json_parts(obj, **dumps))


def json_sha256(obj: Any, **dumps: Any) -> str:
    """sha256 hex digest of :func:`json_bytes`, without joining it."""
    h = hashlib.sha256()
    for part in json_parts(obj, **dumps):
        h.update(part.encode("utf-8"))
    return h.hexdigest()


def json_with_digests(obj: Any, label: Callable[[DataURL], str], **dumps: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, **dumps)`` with each DataURL's text
    (quotes kept) replaced by ``label(url)``, which reads its ``sha256`` and
    prefix: the URL is never scanned."""
    return json.dumps(_swap(obj, [], lambda url, k: label(url)),
                      ensure_ascii=False, **dumps)
