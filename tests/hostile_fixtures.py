"""Folders and paths that vlmrobust must never delete, replace or write inside:
hidden files and folders, symbolic links, FIFOs and device nodes, with a
snapshot (names, kinds, inodes, bytes of regular files) to prove it."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def make_device(path: Path) -> bool:
    """A character device node like /dev/null at ``path`` (root may; others cannot)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        return False
    return True


def hostile_folder(folder: Path) -> Path:
    """``folder`` holding a hidden file, a hidden folder, a symbolic link, a
    dangling link, a FIFO, a device node (where permitted) and a user's file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".env").write_text("SECRET=1\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")
    (folder / "main.py").write_text("print('mine')\n")
    outside = folder.parent / f"{folder.name}-outside.txt"
    outside.write_text("outside\n")
    os.symlink(outside, folder / "link")
    os.symlink(folder.parent / "does-not-exist", folder / "dangling")
    os.mkfifo(folder / "pipe")
    make_device(folder / "null")
    return folder


def snapshot(root: Path) -> dict[str, tuple[str, int, bytes | str | None]]:
    """Every entry under ``root`` (links not followed): kind, inode (0 for a
    folder: a new version of a folder is a new folder holding the same entries)
    and the bytes of a regular file or the target of a link."""
    out: dict[str, tuple[str, int, bytes | str | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            p = Path(dirpath) / name
            st = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", st.st_ino, os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", st.st_ino, p.read_bytes())
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", 0, None)
            else:
                out[rel] = (stat.filemode(st.st_mode)[0], st.st_ino, None)
    return out


def special_paths(tmp: Path) -> dict[str, Path]:
    """One of each path kind an output must never replace."""
    tmp.mkdir(parents=True, exist_ok=True)
    victim = tmp / "victim.txt"
    victim.write_text("keep me\n")
    os.mkfifo(tmp / "fifo")
    os.symlink(victim, tmp / "link-to-file")
    (tmp / "dir-target").mkdir()
    os.symlink(tmp / "dir-target", tmp / "link-to-dir")
    os.symlink(tmp / "loop", tmp / "loop")
    paths = {"fifo": tmp / "fifo", "link-to-file": tmp / "link-to-file",
             "link-to-dir": tmp / "link-to-dir", "loop": tmp / "loop"}
    if make_device(tmp / "device"):
        paths["device"] = tmp / "device"
    return paths


def lstat_kind(path: Path) -> str:
    return stat.filemode(os.lstat(path).st_mode)[0]


