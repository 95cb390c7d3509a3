"""Folders a command owns by a mark: ``discover planted``'s images, its tiny
questioner, ``discover taxonomy``'s output.

Such a folder is written whole (:func:`owned_directory`, one atomic swap) with
a mark file :data:`MARK` listing every file it wrote and its sha256. A later
run replaces it only when it is absent, empty, or still holds nothing but the
files its mark lists, unchanged (:func:`check_owned_folder`): a user's
``main.py``, ``.env``, ``config.json`` or an image of the same name as one of
ours is never replaced. The command's inputs, a built dataset and a folder
inside one are refused too (the guard of :mod:`vlmrobust.core.files.output_guard`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import atomic_directory
from vlmrobust.core.files.bounded import MIB, read_bytes_bounded
from vlmrobust.core.files.digest import file_sha256
from vlmrobust.core.files.output_guard import (
    check_apart,
    check_not_input,
    foreign_entries,
    is_dataset_dir,
    refuse_non_folder,
    resolve,
)

MARK = ".vlmrobust-owned.json"
_MAX_MARK = 64 * MIB



def listed_files(folder: Path, command: str) -> dict[str, str] | None:
    """{relative path: sha256} of the mark ``command`` left in ``folder``
    (None: no readable mark of that command)."""
    path = Path(folder) / MARK
    if path.is_symlink() or not path.is_file():
        return None
    try:
        raw = json.loads(read_bytes_bounded(path, _MAX_MARK, "mark file").decode("utf-8"))
    except (ValueError, RecursionError, VlmrobustError):
        return None
    files = raw.get("files") if isinstance(raw, dict) and raw.get("by") == command else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(k): v for k, v in files.items()}


def _owned(folder: Path, command: str) -> Callable[[str, os.DirEntry[str]], bool]:
    """Which entries of ``folder`` its mark claims (a listed file unchanged, or
    a folder on the way to one)."""
    listed = listed_files(folder, command) or {}
    parts = [rel.split("/") for rel in listed]
    dirs = {"/".join(p[:i]) for p in parts for i in range(1, len(p))}

    def owned(rel: str, e: os.DirEntry[str]) -> bool:
        if e.is_symlink():
            return False
        if rel == MARK:
            return e.is_file()
        if e.is_dir():
            return rel in dirs
        return e.is_file() and rel in listed and file_sha256(Path(e.path)) == listed[rel]
    return owned


def check_owned_folder(out: Path | str, flag: str, command: str,
                       inputs: Iterable[Path | None] = ()) -> Path:
    """Refuse ``out`` unless ``command`` may replace it: absent, an empty
    folder, or a folder of ``command``'s holding only the unchanged files its
    mark lists; never a file, link, FIFO or device node, never a built dataset
    or a folder inside one, never one that is, holds or lies inside one of
    ``inputs`` (files or folders)."""
    out = Path(out)
    resolve(out.parent, flag)
    refuse_non_folder(out, flag)
    check_apart(out, flag, inputs)
    check_not_input(out, flag)
    if not out.is_dir() or not any(os.scandir(out)):
        return out
    if is_dataset_dir(out):
        raise VlmrobustError(f"{flag} {out} is a built dataset; vlmrobust never writes into one: "
                             "give a new folder")
    foreign = foreign_entries(out, _owned(out, command))
    if foreign:
        more = f" and {len(foreign) - 1} more entries" if len(foreign) > 1 else ""
        raise VlmrobustError(f"{flag} {out} holds {foreign[0]!r}{more}, which "
                             f"'vlmrobust {command}' did not write; give a new or empty folder")
    return out


def _carry(command: str) -> Callable[[Path], Callable[[str], bool]]:
    def carry(previous: Path) -> Callable[[str], bool]:
        listed = listed_files(previous, command) or {}
        return lambda rel: rel == MARK or rel in listed
    return carry


@contextlib.contextmanager
def owned_directory(out: Path, command: str) -> Iterator[Path]:
    """Yield a scratch folder; when the block ends it gets ``command``'s mark
    (every regular file in it, with its sha256) and replaces ``out`` in one
    swap. Call :func:`check_owned_folder` first; an entry that appears in
    ``out`` meanwhile is carried over, never lost."""
    with atomic_directory(Path(out), carry=_carry(command)) as tmp:
        yield tmp
        files = {}
        for dirpath, _, names in os.walk(tmp):
            for name in names:
                p = Path(dirpath) / name
                rel = p.relative_to(tmp).as_posix()
                if not name.startswith(".vlmrobust-") and p.is_file() and not p.is_symlink():
                    files[rel] = file_sha256(p)
        (tmp / MARK).write_text(json.dumps({"by": command, "files": dict(sorted(files.items()))},
                                           indent=1) + "\n", encoding="utf-8")
