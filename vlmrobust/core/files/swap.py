"""Swapping a finished folder in for the previous one, and undoing what a kill left.

A folder is assembled in a scratch folder ``.<name>.building-<pid>-*`` beside
its target, then swapped in:

- on Linux with one ``renameat2(RENAME_EXCHANGE)``: the target is never
  missing; a kill right after it leaves the old content in the scratch folder;
- elsewhere (or on a filesystem without it) with two renames, target ->
  ``.<name>.old-<pid>`` then scratch -> target: a kill between them leaves
  the target missing.

A swap may carry over what the previous target holds and the new folder lacks
(``carry``), checked after the rename: a file a user put into the target while
the command ran is never lost.

Either way the leftovers are named after the process that made them and carry
its marker inside (:data:`MARKER`, holding the pid), and :func:`recover` undoes
them once that process is gone: the old folder goes back in place if the
target is missing, then every dead process's scratch and old folder is
removed. A folder is ours by the marker inside it, never by its name: a hidden
folder that merely looks like ``.X.building-<dead pid>-*`` or ``.X.old-<dead
pid>`` is someone else's and is left alone (issue 41.4); only an empty one
(a kill right after ``mkdtemp``) is removed by name, which loses nothing. It runs before every swap of the same target and when a
reader opens a folder (``recover_children``), and, through a record kept
under the state folder for the duration of each swap, at the start of every
``vlmrobust`` command (:func:`recover_pending`): whichever command runs next
puts things right, whatever folder it works on.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_STATE_ENV = "VLMROBUST_STATE_DIR"


def _libc() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(None, use_errno=True)
    except (OSError, TypeError):  # pragma: no cover - no C library to load (not POSIX)
        return None
    return lib if hasattr(lib, "renameat2") else None


_LIBC = _libc()


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap the names ``a`` and ``b`` (both must exist); False when
    this system or filesystem cannot, and nothing was changed."""
    if _LIBC is None:
        return False
    rc = _LIBC.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Written into a scratch folder when it is made and into the target just before a
# swap, removed from the target once the swap is done: what makes a leftover ours.
MARKER = ".vlmrobust-swap"


def mark(folder: Path) -> None:
    """Put this process's marker inside ``folder`` (best effort: a folder that
    cannot be written only keeps its leftovers, never loses data)."""
    with contextlib.suppress(OSError):
        (Path(folder) / MARKER).write_text(f"{os.getpid()}\n", encoding="ascii")


def _unmark(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        (Path(folder) / MARKER).unlink()


def _marked_by(folder: Path, pid: int) -> bool:
    """Whether ``folder`` carries process ``pid``'s marker, or is empty."""
    try:
        with os.scandir(folder) as it:
            if next(it, None) is None:
                return True
        marker = Path(folder) / MARKER
        if marker.is_symlink() or not marker.is_file():
            return False
        return marker.read_bytes()[:32].strip() == str(pid).encode("ascii")
    except OSError:
        return False


def scratch_prefix(target: Path) -> str:
    return f".{target.name}.building-{os.getpid()}-"


def old_path(target: Path) -> Path:
    return target.parent / f".{target.name}.old-{os.getpid()}"


def _leftovers(target: Path) -> tuple[list[Path], list[Path]]:
    """(old folders, scratch folders) beside ``target`` whose process is gone."""
    olds: list[Path] = []
    scratch: list[Path] = []
    marker_old, marker_new = f".{target.name}.old-", f".{target.name}.building-"
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return [], []
    for e in entries:
        if not e.is_dir(follow_symlinks=False):
            continue
        if e.name.startswith(marker_old):
            pid_text, into = e.name[len(marker_old):], olds
        elif e.name.startswith(marker_new):
            pid_text, into = e.name[len(marker_new):].split("-", 1)[0], scratch
        else:
            continue
        if (pid_text.isdigit() and not pid_alive(int(pid_text))
                and _marked_by(Path(e.path), int(pid_text))):
            into.append(Path(e.path))
    return olds, scratch


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def recover(target: Path) -> bool:
    """Undo what a killed swap of ``target`` left (see the module text); True
    when the previous folder had to be put back. Entries of live processes are
    never touched."""
    target = Path(target)
    olds, scratch = _leftovers(target)
    restored = False
    if olds and not os.path.lexists(target):
        newest = max(olds, key=lambda p: p.stat().st_mtime_ns)
        with contextlib.suppress(FileNotFoundError):
            os.rename(newest, target)
            olds.remove(newest)
            restored = True
    for p in (*olds, *scratch):
        _remove(p)
    _drop_dead_marker(target)
    return restored


def _drop_dead_marker(target: Path) -> None:
    """A marker a killed swap left inside the target itself (put back, or swapped
    in before it was removed) goes; a live process's stays."""
    marker = target / MARKER
    try:
        if marker.is_symlink() or not marker.is_file():
            return
        pid_text = marker.read_bytes()[:32].strip().decode("ascii")
    except (OSError, UnicodeDecodeError):
        return
    if pid_text.isdigit() and not pid_alive(int(pid_text)):
        _unmark(target)


def recover_children(folder: Path) -> None:
    """:func:`recover` every target inside ``folder`` that a killed swap left
    (e.g. a model folder of a submissions tree), before the folder is read."""
    try:
        names = [e.name for e in os.scandir(folder)]
    except OSError:
        return
    targets = set()
    for name in names:
        for marker in (".old-", ".building-"):
            if name.startswith(".") and marker in name:
                targets.add(name[1:name.rindex(marker)])
    for name in sorted(targets):
        if name:
            recover(Path(folder) / name)


def state_dir() -> Path:
    """Where in-flight swaps are recorded ($VLMROBUST_STATE_DIR, else
    $XDG_STATE_HOME/vlmrobust, else ~/.local/state/vlmrobust)."""
    env = os.environ.get(_STATE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "vlmrobust"


def _record_path(target: Path) -> Path:
    key = hashlib.sha256(os.fsencode(os.path.abspath(target))).hexdigest()[:24]
    return state_dir() / "swaps" / f"{os.getpid()}-{key}.json"


_ACTIVE: set[Path] = set()


@contextlib.contextmanager
def recorded(target: Path) -> Iterator[None]:
    """A record of the work on ``target`` under the state folder while it runs
    (from the making of its scratch folder, :func:`vlmrobust.core.files.atomic.atomic_directory`,
    to the end of the swap), so that the next command of any kind finds it if
    this process is killed, also long before the swap. A state folder that
    cannot be written only loses that: readers still recover in place. A nested
    use keeps the outer record."""
    record: Path | None = _record_path(target)
    assert record is not None
    if record in _ACTIVE:
        yield
        return
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        part = record.with_name(record.name + ".part")  # a kill never leaves half a record
        part.write_text(json.dumps({"target": os.path.abspath(target)}) + "\n", encoding="utf-8")
        os.replace(part, record)
        _ACTIVE.add(record)
    except OSError:
        record = None
    try:
        yield
    finally:
        if record is not None:
            _ACTIVE.discard(record)
            with contextlib.suppress(OSError):
                record.unlink()


def recover_pending() -> None:
    """Recover every swap whose process was killed midway (called when any
    ``vlmrobust`` command starts); never raises."""
    folder = state_dir() / "swaps"
    try:
        records = list(folder.glob("*.json"))
    except OSError:
        return
    for record in records:
        pid_text = record.name.split("-", 1)[0]
        if not pid_text.isdigit() or pid_alive(int(pid_text)):
            continue
        try:
            raw = json.loads(record.read_bytes()[:65536].decode("utf-8"))
            target = Path(str(raw["target"]))
            recover(target)
            record.unlink()
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                record.unlink()


Carry = Callable[[Path], Callable[[str], bool]]


def keep_all(previous: Path) -> Callable[[str], bool]:
    """A ``carry`` that drops nothing: every previous entry the new folder lacks stays."""
    return lambda rel: False


def swap_in(new: Path, target: Path, carry: Carry | None = None) -> None:
    """Make the finished folder ``new`` (a scratch folder beside ``target``) the
    target; the previous target, if any, is removed after. With ``carry``, what
    the previous target holds that ``new`` lacks and ``carry(previous folder)``
    does not drop is carried over first (:func:`carry_over`): checked after the
    rename, so nothing that appeared in the target while the command ran is lost.
    See the module text for what a kill at any point leaves and how it is undone."""
    new, target = Path(new), Path(target)
    with recorded(target):
        if not os.path.lexists(target):
            os.rename(new, target)
            _unmark(target)
            return
        mark(target)  # the previous content, about to become a leftover
        if exchange(new, target):
            previous = new
        else:
            previous = old_path(target)
            os.rename(target, previous)
            try:
                os.rename(new, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.rename(previous, target)
                _unmark(target)
                raise
        _unmark(target)
        if carry is not None:
            drop = carry(previous)
            try:
                carry_over(previous, target, lambda rel: rel == MARKER or drop(rel))
            except BaseException:
                _unmark(previous)  # unmarked: kept, with whatever was not carried yet
                raise
        _remove(previous)


def _link_one(src: Path, dst: Path, st: os.stat_result) -> None:
    """``dst`` becomes the same inode as ``src`` (a hard link, also of a
    symbolic link, a FIFO or a device node, never followed), else a copy of it."""
    try:
        os.link(src, dst, follow_symlinks=False)
        return
    except OSError:
        pass
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(src, dst, follow_symlinks=False)
    elif stat.S_ISFIFO(st.st_mode):
        os.mkfifo(dst, stat.S_IMODE(st.st_mode))
    else:
        os.mknod(dst, st.st_mode, st.st_rdev)


def carry_over(old: Path, new: Path, drop: Callable[[str], bool] = lambda rel: False) -> None:
    """Bring every entry of the folder ``old`` into the folder ``new`` that
    ``new`` does not already hold and ``drop(relative path)`` does not claim:
    hidden files, links, FIFOs and device nodes included, as hard links (the
    same inodes; nothing is read or followed). Folders are recreated."""
    old, new = Path(old), Path(new)
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(old / rel) as it:
            entries = list(it)
        for e in entries:
            sub = f"{rel}{e.name}"
            src, dst = Path(e.path), new / sub
            if drop(sub):
                continue
            st = os.lstat(src)
            if stat.S_ISDIR(st.st_mode):
                if not os.path.lexists(dst):
                    dst.mkdir()
                    shutil.copystat(src, dst, follow_symlinks=False)
                if dst.is_dir() and not dst.is_symlink():
                    stack.append(sub + "/")
            elif not os.path.lexists(dst):
                _link_one(src, dst, st)
