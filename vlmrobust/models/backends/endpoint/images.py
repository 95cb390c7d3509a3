"""Each image of an endpoint run encoded once (issue 39.3): the request of
every option (likelihood), the audit trail's rendering of it, the other
answer modes of the same process and the same photo in several configs all
share one PNG data URL, keyed by the image's pixels. Requests in flight that
need the same image wait for one encoding instead of each doing it (~18 ms
of CPU for a 640x480 photo); different images encode in parallel in the
request threads (Pillow releases the GIL while it compresses)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from vlmrobust.core.ordered_threads import SingleFlight
from vlmrobust.models.backends.endpoint.body import DataURL

MAX_CACHED_CHARS = 256 << 20  # base64 characters kept (~190 MB of PNG)


class EncodedImages:
    """pixels digest -> data URL, least recently used first out past ``max_chars``."""

    def __init__(self, max_chars: int = MAX_CACHED_CHARS) -> None:
        if max_chars < 0:
            raise ValueError(f"max_chars must be >= 0, got {max_chars}")
        self.max_chars = max_chars
        self._urls: OrderedDict[bytes, str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self._flight = SingleFlight()
        self.encoded = 0  # encodings run (the other requests shared them)

    def _cached(self, key: bytes) -> str | None:
        with self._lock:
            url = self._urls.get(key)
            if url is not None:
                self._urls.move_to_end(key)
            return url

    def get(self, key: bytes, encode: Callable[[], str]) -> str:
        """The data URL under ``key``, from ``encode()`` if no one has it yet."""
        url = self._cached(key)
        return url if url is not None else self._flight.do(key, lambda: self._encode(key, encode))

    def _encode(self, key: bytes, encode: Callable[[], str]) -> str:
        url = self._cached(key)  # stored while this caller was on its way
        if url is not None:
            return url
        url = DataURL(encode())  # its digest once, for every request's key and rendering
        with self._lock:
            self.encoded += 1
            if len(url) <= self.max_chars:
                self._urls[key] = url
                self._chars += len(url)
                while self._chars > self.max_chars:
                    self._chars -= len(self._urls.popitem(last=False)[1])
        return url


ENCODED = EncodedImages()


_DIGEST_ATTR = "_vlmrobust_pixel_digest"


def image_digest(image: Any) -> bytes:
    """``runtime.pixel_digest(image)``, hashed once per PIL image object and
    carried on it: a request's body and its audit-trail rendering (and every
    other mode asking for the same row) build the image's URL from the same
    object, and each hash is ~0.65 ms for a 640x427 photo. predict's rows are
    decoded afresh per batch and never changed in place, which this relies on;
    anything else (a dict of bytes) is hashed per call."""
    from vlmrobust.models.runtime import pixel_digest

    digest = getattr(image, _DIGEST_ATTR, None)
    if isinstance(digest, bytes):
        return digest
    digest = pixel_digest(image)
    try:
        setattr(image, _DIGEST_ATTR, digest)
    except AttributeError:  # not an object that takes attributes (dict, bytes)
        pass
    return digest


def cached_data_url(image: Any, encode: Callable[[Any], str]) -> str:
    """``encode(image)``, once per distinct pixels in this process."""
    return ENCODED.get(image_digest(image), lambda: encode(image))
