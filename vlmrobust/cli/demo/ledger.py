"""What a demo wrote in its --out folder, so that ``demo --fresh`` deletes that
and nothing else.

After every stage the demo records in :data:`LEDGER` (inside --out) each
folder and regular file under its entries (datasets/, predictions/, ...) that
it made: absent when the run started, or already its own then and unchanged
since. A file is named by its inode, size and modification time, so a file a
user put in, or replaced, later is not the demo's. ``--fresh`` refuses, before
deleting anything, when one of those entries holds anything else (a user's
``datasets/my-survey.csv``, a link, a FIFO), or holds no ledger at all.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.bounded import MIB, read_bytes_bounded
from vlmrobust.core.files.output_guard import kind_of

LEDGER = ".vlmrobust-demo.json"
# What a demo writes in its --out folder.
DEMO_ENTRIES = ("datasets", "predictions", "eval", "submissions", "reference-runs.yaml", "site",
                "discover", "details")
Stamp = tuple[str, int, int, int]  # kind ("d" / "f"), inode, size, mtime_ns


def _stamp(st: os.stat_result) -> Stamp | None:
    if stat.S_ISDIR(st.st_mode):
        return ("d", st.st_ino, 0, 0)
    if stat.S_ISREG(st.st_mode):
        return ("f", st.st_ino, st.st_size, st.st_mtime_ns)
    return None  # a link, FIFO, device node or socket: never the demo's


def scan(out: Path) -> dict[str, Stamp | None]:
    """Every entry under the demo's entries of ``out`` (links not followed)."""
    found: dict[str, Stamp | None] = {}
    stack = [name for name in DEMO_ENTRIES if os.path.lexists(out / name)]
    while stack:
        rel = stack.pop()
        st = os.lstat(out / rel)
        found[rel] = _stamp(st)
        if stat.S_ISDIR(st.st_mode):
            stack.extend(f"{rel}/{e.name}" for e in os.scandir(out / rel))
    return found


def _read(out: Path) -> dict[str, Stamp] | None:
    path = out / LEDGER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        raw = json.loads(read_bytes_bounded(path, 256 * MIB, "demo ledger").decode("utf-8"))
        return {str(k): (str(v[0]), int(v[1]), int(v[2]), int(v[3]))
                for k, v in raw["entries"].items()}
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError,
            VlmrobustError):
        return None


class Ledger:
    """The demo's own entries: loaded when a run starts, saved after each stage."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.owned = _read(out) or {}
        self.before = scan(out) if out.is_dir() else {}

    def save(self) -> None:
        now = scan(self.out)
        mine = {rel: s for rel, s in now.items() if s is not None and (
            rel not in self.before or self.owned.get(rel) == self.before[rel])}
        body = {"entries": {k: list(v) for k, v in sorted(mine.items())}}
        write_text_atomic(self.out / LEDGER, json.dumps(body, indent=0) + "\n")


def remove_own(out: Path) -> None:
    """--fresh: remove the demo's own entries of ``out``, or refuse naming the
    first entry that is not the demo's (nothing removed then)."""
    present = scan(out)
    if not present:
        return
    owned = _read(out)
    if owned is None:
        first = sorted(present)[0]
        raise VlmrobustError(f"--out {out} holds {first} but no {LEDGER}: it was not written by "
                             "a demo (or by one older than the ledger); move it away before --fresh")
    for rel in sorted(present):
        if present[rel] is None or owned.get(rel) != present[rel]:
            st = os.lstat(out / rel)
            what = kind_of(st.st_mode) if present[rel] is None else "not what the demo wrote"
            raise VlmrobustError(f"--out {out}: {rel} is {what}; --fresh deletes only what a demo "
                                 "wrote: move it away first")
    for rel in sorted(present, key=lambda r: -r.count("/")):  # files, then their folders
        path = out / rel
        if present[rel] == owned.get(rel) and os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                path.unlink()
    (out / LEDGER).unlink(missing_ok=True)
