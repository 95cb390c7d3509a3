"""Atomic writes: build next to the target, then rename over it."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.output_guard import kind_of, lstat_or_none, refuse_non_folder
from vlmrobust.core.files.swap import Carry, mark, recorded, recover, scratch_prefix, swap_in


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over
    ``path``, which must be absent or a regular file (a link, FIFO or device
    node is never replaced)."""
    with atomic_file(path, "wb") as f:
        f.write(data)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_directory(target: Path, carry: Carry | None = None) -> Iterator[Path]:
    """Yield a fresh temporary directory beside ``target``; on success it replaces
    ``target`` (the previous content is removed only after the new one is complete).
    On any exception, or if the process is killed, ``target`` is left as it was
    (vlmrobust.core.files.swap: the marked scratch folder of a killed run, recorded from
    its making, and a kill inside the swap itself are undone by the next command
    of any kind). ``target`` must be absent or a real folder: a file, a symbolic
    link, a FIFO or a device node is never replaced. ``carry(previous folder)``
    names the previous entries the new folder replaces; everything else found
    there at swap time (a file a user added while the command ran) is carried
    over (None: the previous folder was checked to be all ours, replaced whole)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    recover(target)
    refuse_non_folder(target)
    with recorded(target):
        tmp = Path(tempfile.mkdtemp(prefix=scratch_prefix(target), dir=target.parent))
        mark(tmp)  # what makes it ours if this process is killed (vlmrobust.core.files.swap)
        try:
            tmp.chmod(0o777 & ~_umask())
            yield tmp
            refuse_non_folder(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        swap_in(tmp, target, carry)


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "wb") -> Iterator[Any]:
    """An open file (``mode`` "wb", or "w" for utf-8 text with no newline
    translation) written in a temporary file beside ``path`` and renamed over
    it when the block ends without an exception; for outputs built piece by
    piece. ``path`` must be absent or a regular file (a link, FIFO or device
    node is never replaced)."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_file mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    st = lstat_or_none(path, "output")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise VlmrobustError(f"{path} is {kind_of(st.st_mode)}; vlmrobust replaces only a "
                             "regular file: give a new file name")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; published files should get the usual permissions
        os.fchmod(fd, 0o666 & ~_umask())
        f: Any = (os.fdopen(fd, "w", encoding="utf-8", newline="") if mode == "w"
                  else os.fdopen(fd, "wb"))
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
