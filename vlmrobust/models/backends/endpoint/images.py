"""Each image of an endpoint run encoded once (issue 39.3), as PNG at a
chosen zlib level or as the row's stored bytes (:class:`ImageEncoding`): the request of
every option (likelihood), the audit trail's rendering of it, the other
answer modes of the same process and the same photo in several configs all
share one PNG data URL, keyed by the image's pixels. Requests in flight that
need the same image wait for one encoding instead of each doing it (~18 ms
of CPU for a 640x480 photo); different images encode in parallel in the
request threads (Pillow releases the GIL while it compresses)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vlmrobust.core.errors import VlmrobustError
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
    with contextlib.suppress(AttributeError):  # a dict or bytes takes no attribute
        setattr(image, _DIGEST_ATTR, digest)
    return digest


SENDS = ("png", "source")
DEFAULT_PNG_LEVEL = 6  # what Pillow's PNG writer uses unless told (zlib's default)


@dataclass(frozen=True)
class ImageEncoding:
    """What the client sends for an image (``--endpoint-image-bytes``,
    ``--endpoint-png-level``). ``png``: the pixels as PNG at zlib level
    ``png_level`` (lossless at every level, so the server decodes the pixels the
    in-process backend sees; lower levels cost less CPU and send more bytes).
    ``source``: the dataset row's stored PNG/JPEG bytes as they are, no decode or
    re-encode; where a row's image has none (see runtime.SOURCE_ATTR), PNG."""

    send: str = "png"
    png_level: int = DEFAULT_PNG_LEVEL

    def __post_init__(self) -> None:
        if self.send not in SENDS:
            raise VlmrobustError(f"--endpoint-image-bytes {self.send!r}: give one of "
                                 f"{', '.join(SENDS)}")
        if isinstance(self.png_level, bool) or not isinstance(self.png_level, int) \
                or not 0 <= self.png_level <= 9:
            raise VlmrobustError(f"--endpoint-png-level {self.png_level!r}: give 0 to 9 "
                                 "(zlib levels; PNG is lossless at each)")

    def record(self) -> dict[str, Any]:
        """The server record's ``image_bytes`` entry."""
        return {"send": self.send, "png_level": self.png_level}


PNG_DEFAULT = ImageEncoding()


def encode_png(image: Any, level: int = DEFAULT_PNG_LEVEL) -> str:
    """``data:image/png;base64,...`` of the image's RGB pixels at zlib ``level``."""
    from vlmrobust.models.runtime import to_pil

    buf = io.BytesIO()
    to_pil(image).save(buf, format="PNG", compress_level=level)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def data_url(image: Any, encoding: ImageEncoding = PNG_DEFAULT) -> str:
    """The image's data URL under ``encoding``, encoded once per distinct pixels
    (PNG) or stored bytes (source) in this process."""
    from vlmrobust.models.runtime import SOURCE_ATTR

    stored = getattr(image, SOURCE_ATTR, None) if encoding.send == "source" else None
    if stored is not None:
        mime, raw = stored
        key = b"source" + hashlib.sha256(raw).digest()[:16]
        return ENCODED.get(key, lambda: f"data:{mime};base64," +
                           base64.b64encode(raw).decode("ascii"))
    level = encoding.png_level
    key = image_digest(image) if level == DEFAULT_PNG_LEVEL else \
        image_digest(image) + bytes([level])
    return ENCODED.get(key, lambda: encode_png(image, level))
