"""Where a command may write: the one guard every ``--out``, ``--submissions``
and ``--site`` goes through.

vlmrobust replaces only what it made: a regular file named as an output, or a
folder that holds one of its own products (a dataset with its manifest, a
submission, a site) and nothing else it did not write, or an empty folder. It
never replaces a symbolic link, a FIFO, a device node or a socket, never
writes over or inside one of the command's inputs, and never inside a built
dataset. Each refusal is one line naming the path and the fix.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError

MANIFEST = "manifest.json"
# What a dataset build writes at the top of its folder (bench-c adds its
# selection table); data/ holds only folders and parquet shards.
DATASET_ENTRIES = frozenset({"README.md", MANIFEST, "data", "selection.parquet", "label_spaces"})
# folders a build writes (the rest of DATASET_ENTRIES are files)
_DATASET_DIRS = frozenset({"data", "label_spaces"})
_MAX_MANIFEST_PEEK = 64 << 20


def kind_of(mode: int) -> str:
    """What a non-regular entry is, in words.

    >>> kind_of(stat.S_IFIFO), kind_of(stat.S_IFDIR)
    ('a FIFO', 'a directory')
    """
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device node"),
                       (stat.S_ISBLK, "a device node"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def lstat_or_none(path: Path, flag: str) -> os.stat_result | None:
    """``os.lstat`` (the entry itself, a link not followed); None when absent."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise VlmrobustError(f"{flag} {path}: cannot use this path ({_why(exc)})") from None


def _why(exc: BaseException) -> str:
    if (isinstance(exc, OSError) and exc.errno == errno.ELOOP) or isinstance(exc, RuntimeError):
        return "a symbolic link loop"
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))


def resolve(path: Path | str, flag: str) -> Path:
    """``path`` made absolute with every link followed; a symbolic link loop is
    one line, not a traceback."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as exc:
        raise VlmrobustError(f"{flag} {path}: cannot resolve the path ({_why(exc)}); "
                             "check the path") from None


def _resolve_quiet(path: Path) -> Path | None:
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError):
        return None


def refuse_non_folder(target: Path, flag: str = "output") -> None:
    """Refuse a ``target`` that exists and is anything but a real folder."""
    st = lstat_or_none(Path(target), flag)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise VlmrobustError(f"{flag} {target} is {kind_of(st.st_mode)}, not a folder; "
                             "vlmrobust never replaces it: choose a new folder name")


def is_dataset_dir(folder: Path) -> bool:
    """Whether ``folder`` holds a dataset built by vlmrobust (a regular
    ``manifest.json`` with its fingerprint)."""
    path = Path(folder) / MANIFEST
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_MANIFEST_PEEK:
            return False
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "fingerprint" in data and "configs" in data


def enclosing_dataset(path: Path) -> Path | None:
    """The built dataset folder ``path`` lies in or is (None: none)."""
    resolved = _resolve_quiet(path)
    if resolved is None:
        return None
    for folder in (resolved, *resolved.parents):
        if os.path.isdir(folder) and is_dataset_dir(folder):
            return folder
    return None


def _same(a: Path, b: Path) -> bool:
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    ra, rb = _resolve_quiet(a), _resolve_quiet(b)
    return ra is not None and ra == rb


def _inside(path: Path, folder: Path) -> bool:
    rp, rf = _resolve_quiet(path), _resolve_quiet(folder)
    return rp is not None and rf is not None and rp.is_relative_to(rf)


def check_not_input(out: Path, flag: str, inputs: Iterable[Path | None] = (),
                    input_dirs: Iterable[Path | None] = ()) -> None:
    """Refuse ``out`` when it is one of ``inputs``, is or lies inside one of
    ``input_dirs``, or lies inside a built dataset."""
    for f in inputs:
        if f is not None and _same(out, Path(f)):
            raise VlmrobustError(f"{flag} {out} is an input of this command ({f}); "
                                 "write the result to another path")
    for d in input_dirs:
        if d is not None and _inside(out, Path(d)):
            raise VlmrobustError(f"{flag} {out} lies inside the input folder {d}; "
                                 "write the result elsewhere")
    ds = enclosing_dataset(out if os.path.lexists(out) else out.parent)
    if ds is not None and not (os.path.lexists(out) and _same(out, ds)):
        raise VlmrobustError(f"{flag} {out} lies inside the dataset {ds}; a built dataset is "
                             "read-only: write the result elsewhere")


def check_apart(out: Path, flag: str, input_dirs: Iterable[Path | None]) -> None:
    """Refuse a folder ``out`` that is, lies inside or holds one of ``input_dirs``
    (a site inside its submissions, the submissions inside the site it replaces)."""
    for d in input_dirs:
        if d is not None and (_inside(out, Path(d)) or _inside(Path(d), out)):
            raise VlmrobustError(f"{flag} {out} and the input folder {d} overlap; write the "
                                 "result to a folder apart from its inputs")


def check_file_output(out: Path | str, flag: str = "--out", inputs: Iterable[Path | None] = (),
                      input_dirs: Iterable[Path | None] = ()) -> Path:
    """The checks before a command writes the file ``out``: absent or a regular
    file (never a folder, link, FIFO or device), not an input, not inside an
    input folder or a dataset. Returns ``out``."""
    out = Path(out)
    resolve(out.parent, flag)
    st = lstat_or_none(out, flag)
    if st is not None and not stat.S_ISREG(st.st_mode):
        hint = (f"give a file name such as {out / 'scores.json'}" if stat.S_ISDIR(st.st_mode)
                else "vlmrobust replaces only a regular file: give a new file name")
        raise VlmrobustError(f"{flag} {out} is {kind_of(st.st_mode)}; {hint}")
    check_not_input(out, flag, inputs, input_dirs)
    return out


def check_earlier_output(out: Path | str, flag: str, ours: Callable[[Path], bool],
                         what: str) -> None:
    """Refuse an existing file ``out`` that ``ours`` does not recognise as this
    command's earlier output (a user's file, another command's output)."""
    out = Path(out)
    if out.is_file() and not out.is_symlink() and not ours(out):
        raise VlmrobustError(f"{flag} {out} exists and is not {what}; vlmrobust replaces only "
                             "its own earlier output: give a new file name")


def foreign_entries(folder: Path, owned: Callable[[str, os.DirEntry[str]], bool]) -> list[str]:
    """Relative paths under ``folder`` that ``owned(relpath, entry)`` does not
    claim: what a replacement would lose. Links are never followed."""
    out: list[str] = []
    stack = [(Path(folder), "")]
    while stack:
        here, rel = stack.pop()
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            sub = f"{rel}{e.name}"
            if not owned(sub, e):
                out.append(sub)
            elif e.is_dir(follow_symlinks=False):
                stack.append((Path(e.path), sub + "/"))
    return sorted(out)


def _dataset_owned(rel: str, e: os.DirEntry[str]) -> bool:
    if e.is_symlink() or e.name.startswith("."):
        return False
    top, _, rest = rel.partition("/")
    if not rest:
        return top in DATASET_ENTRIES and (e.is_dir() if top in _DATASET_DIRS else e.is_file())
    if top == "label_spaces":
        return e.is_file() and e.name.endswith(".json")
    return top == "data" and (e.is_dir() or (e.is_file() and e.name.endswith(".parquet")))


def dataset_carry(previous: Path) -> Callable[[str], bool]:
    """At a build's swap: drop the previous dataset's own entries; what no build
    wrote (a file that appeared while this one ran) and the folders leading to it
    are carried over."""
    keep = foreign_entries(previous, _dataset_owned)
    return lambda rel: not any(f == rel or f.startswith(rel + "/") for f in keep)


def check_dataset_output(out: Path | str, flag: str = "--out",
                         protected: Iterable[Path | None] = ()) -> Path:
    """The checks before a build replaces ``out``: absent, an empty folder, or a
    dataset folder holding nothing but what a build writes; never a folder that
    holds one of ``protected`` (the spec, the sources)."""
    out = Path(out)
    resolve(out.parent, flag)
    st = lstat_or_none(out, flag)
    for p in protected:
        if p is not None and _inside(Path(p), out):
            raise VlmrobustError(f"{flag} {out} holds the input {p}, which a build would "
                                 "delete; build into a new folder elsewhere")
    if st is None:
        check_not_input(out, flag)
        return out
    if not stat.S_ISDIR(st.st_mode):
        raise VlmrobustError(f"{flag} {out} is {kind_of(st.st_mode)}; vlmrobust replaces only "
                             "a dataset folder it built or an empty folder: choose a new folder")
    if not any(os.scandir(out)):
        check_not_input(out, flag)
        return out
    if not is_dataset_dir(out):
        raise VlmrobustError(f"{flag} {out} exists and is not a dataset built by vlmrobust (no "
                             f"{MANIFEST}); choose a new or empty folder, or remove it first")
    foreign = foreign_entries(out, _dataset_owned)
    if foreign:
        raise VlmrobustError(f"{flag} {out} holds {foreign[0]!r}"
                             + (f" and {len(foreign) - 1} more entries" if len(foreign) > 1 else "")
                             + ", which no build wrote; move them out or build into a new folder")
    parent = enclosing_dataset(out.parent)
    if parent is not None:
        raise VlmrobustError(f"{flag} {out} lies inside the dataset {parent}; build elsewhere")
    return out


def open_lock_file(path: Path) -> int:
    """A descriptor of the lock file ``path``, created if absent: never through a
    link, never a FIFO (which would block the open) or a device node."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        st = lstat_or_none(Path(path), "lock file")
        what = kind_of(st.st_mode) if st is not None else _why(exc)
        raise VlmrobustError(f"{path} is {what}, not a lock file vlmrobust made; move it away "
                             "and run again") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise VlmrobustError(f"{path} is {kind_of(st.st_mode)}, not a lock file vlmrobust made; "
                             "move it away and run again")
    return fd
