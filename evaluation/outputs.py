"""Where a command may write (the guard is vlmrobust.core.files.output_guard), and a
failed write (read-only folder, disk full) is one line."""

from __future__ import annotations

import errno
from collections.abc import Iterable
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.output_guard import check_file_output


def check_output(out: Path, files: Iterable[Path | None] = (), dirs: Iterable[Path | None] = (),
                 flag: str = "--out") -> None:
    """Refuse ``out`` when it is a directory, a link, a FIFO or a device node, one
    of ``files``, or inside one of ``dirs`` or a built dataset
    (vlmrobust.core.files.output_guard)."""
    check_file_output(out, flag, files, dirs)


def write_text_output(out: Path, text: str, flag: str = "--out") -> None:
    """Atomic write with one-line errors for the usual reasons it fails."""
    try:
        write_text_atomic(Path(out), text)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            why = "the disk is full; free space and run again"
        elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            why = "the folder is not writable; choose another --out or fix its permissions"
        else:
            why = exc.strerror or str(exc)
        raise VlmrobustError(f"{flag} {out}: cannot write ({why})") from None
