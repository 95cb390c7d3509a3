"""Reading untrusted files with limits: a regular file (never a device, FIFO or
a symlink to /dev/zero), at most ``max_bytes``, and for JSON/YAML a bounded
structure (depth and node count), so that no input can exhaust memory or the
stack. Every failure is one :class:`VlmrobustError` line naming the file."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError

KIB = 1 << 10
MIB = 1 << 20
# Metadata files (meta.yaml, manifest.json, scores.json of one model) are small;
# these caps are far above anything the tools write.
MAX_META_BYTES = 256 * KIB
# A full Bench-C manifest lists one image sha256 per row (~81k rows: ~11 MB).
MAX_MANIFEST_BYTES = 256 * MIB
MAX_SCORES_BYTES = 16 * MIB
MAX_DEPTH = 32
MAX_NODES = 200_000


@contextlib.contextmanager
def open_bounded(path: Path | str, max_bytes: int, what: str = "file",
                 error: type[VlmrobustError] = VlmrobustError,
                 ) -> Iterator[io.BufferedReader[io.FileIO]]:
    """``path`` opened for reading if it is a regular file of at most ``max_bytes``
    (a reader that streams it must still stop at ``max_bytes``: it may grow).

    Opened without blocking and checked with fstat on the open descriptor, so a
    FIFO cannot hang the reader and a file swapped after a check is still caught.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, expected a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot open the {what} ({exc.strerror or exc}); "
                    "check the path and its permissions") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{path}: is a directory, expected a {what}")
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{path}: not a regular file (a device, pipe or socket); "
                        f"give the {what} as an ordinary file")
        if st.st_size > max_bytes:
            raise error(f"{path}: {st.st_size} bytes, more than the {max_bytes} allowed "
                        f"for a {what}; check that it is the right file")
    except BaseException:
        os.close(fd)
        raise
    with io.BufferedReader(io.FileIO(fd, "rb"), buffer_size=MIB) as fh:
        try:
            yield fh
        except OSError as exc:
            raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None


def read_bytes_bounded(path: Path | str, max_bytes: int, what: str = "file",
                       error: type[VlmrobustError] = VlmrobustError) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes``
    (:func:`open_bounded`)."""
    chunks = []
    left = max_bytes + 1
    with open_bounded(path, max_bytes, what, error) as fh:
        while left > 0:
            block = fh.read(min(left, MIB))
            if not block:
                break
            chunks.append(block)
            left -= len(block)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # grew while being read
        raise error(f"{path}: more than the {max_bytes} bytes allowed for a {what}")
    return data


def check_structure(obj: Any, where: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES,
                    error: type[VlmrobustError] = VlmrobustError) -> None:
    """Refuse nesting deeper than ``max_depth`` or more than ``max_nodes`` values.

    Iterative, so the check itself cannot overflow the stack; YAML aliases that
    share a node are counted at every use, which stops "billion laughs" files.

    >>> check_structure({"a": [1, 2, {"b": None}]}, "x")
    >>> check_structure([[[[1]]]], "x", max_depth=3)
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.VlmrobustError: x: nested deeper than 3 levels; flatten it
    """
    # level by level, containers only: scalars are counted but never visited (a
    # chat completion's ~60 values checked in ~10 us rather than ~50, issue 39.3)
    level: list[Any] = [obj]
    nodes, depth = 1, 0
    while level:
        below: list[Any] = []
        for value in level:
            if isinstance(value, (dict, Mapping)):
                children: Any = [*value.keys(), *value.values()]
            elif isinstance(value, (list, tuple)):
                children = value
            else:
                continue
            if not children:
                continue
            if depth + 1 > max_depth:
                raise error(f"{where}: nested deeper than {max_depth} levels; flatten it")
            nodes += len(children)
            if nodes > max_nodes:
                raise error(f"{where}: more than {max_nodes} values; it is not a file the "
                            "tools write")
            below += [c for c in children if type(c) not in _SCALARS]
        level = below
        depth += 1


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__


def parse_json_bounded(data: bytes, where: str, error: type[VlmrobustError] = VlmrobustError,
                       max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise error(f"{where}: nested deeper than {max_depth} levels; flatten it") from None
    except ValueError as exc:  # JSONDecodeError, or an int of > 4300 digits
        raise error(f"{where}: not valid JSON ({_first_line(exc)})") from None
    check_structure(obj, where, max_depth=max_depth, max_nodes=max_nodes, error=error)
    return obj


def _flow_depth(text: str, limit: int) -> int:
    """Deepest nesting of YAML/JSON flow brackets outside quoted strings and
    comments, scanning no further than the first point beyond ``limit`` (the
    pure-Python YAML scanner needs seconds for a file of 100k brackets)."""
    depth = deepest = 0
    quote = ""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t\n"):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def parse_yaml_bounded(data: bytes, where: str, error: type[VlmrobustError] = VlmrobustError,
                       max_depth: int = MAX_DEPTH) -> Any:
    import yaml

    # Never libyaml's CSafeLoader here: its composer recurses in C and a deeply
    # nested file crashes the process; the pure-Python loader raises RecursionError.
    try:
        text = data.decode("utf-8")
        if _flow_depth(text, max_depth) > max_depth:
            raise error(f"{where}: nested deeper than {max_depth} levels; flatten it")
        obj = yaml.load(text, Loader=yaml.SafeLoader)
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise error(f"{where}: nested deeper than {max_depth} levels; flatten it") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        raise error(f"{where}: not valid YAML ({_first_line(exc)}); fix the syntax") from None
    check_structure(obj, where, max_depth=max_depth, error=error)
    return obj


def read_json_bounded(path: Path | str, max_bytes: int, what: str = "JSON file",
                      error: type[VlmrobustError] = VlmrobustError) -> Any:
    return parse_json_bounded(read_bytes_bounded(path, max_bytes, what, error), str(path), error)


def read_yaml_bounded(path: Path | str, max_bytes: int = MAX_META_BYTES, what: str = "YAML file",
                      error: type[VlmrobustError] = VlmrobustError) -> Any:
    return parse_yaml_bounded(read_bytes_bounded(path, max_bytes, what, error), str(path), error)


def image_decode_errors() -> tuple[type[BaseException], ...]:
    """What PIL raises for bytes that are not a readable image: damaged data, an
    unknown format, and ``DecompressionBombError`` (a 60,000 x 60,000 PNG of
    426 KB is refused from its header before any pixel is decoded; it is no
    OSError, so a reader catching only those printed a traceback: issues
    40.13, 41.7). Every image reader catches these and names the file."""
    from PIL import Image, UnidentifiedImageError

    return (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError)


def inside_tree(path: Path | str, root: Path | str) -> bool:
    """Whether ``path``, symlinks followed, lies under ``root`` (a symlink loop or
    a dangling link is not inside anything). A tree such as submissions/ is
    read by following its own links only, never into the rest of the disk.

    >>> inside_tree("/etc/passwd", "/tmp")
    False
    """
    try:
        return Path(path).resolve(strict=True).is_relative_to(Path(root).resolve(strict=True))
    except (OSError, RuntimeError):
        return False
