"""The site writer owns only what carries the project's marker inside it, never
a name pattern (issue 41.4): a site whose file list (.vlmrobust-files.json) is
missing keeps a user's my-app.js and data.json, and hidden folders that merely
look like the swap's scratch names (.X.building-<dead pid>-*, .X.old-<dead pid>)
are neither deleted nor renamed; marked leftovers of a killed run still are."""

from __future__ import annotations

import os
from pathlib import Path

from tests.leaderboard.site.test_leaderboard_publish import _dead_pid, _snapshot, _subs
from vlmrobust.core.files import swap
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import OWNED, build_site


def test_a_site_without_its_file_list_keeps_foreign_files(tmp_path: Path) -> None:
    subs = load_submissions(_subs(tmp_path / "subs", 3))
    site = tmp_path / "site"
    build_site(subs, site)
    (site / OWNED).unlink()
    (site / "my-app.js").write_text("console.log('mine')\n")
    (site / "data.json").write_text('{"mine": true}\n')
    (site / "notes").mkdir()
    (site / "notes" / "todo.html").write_text("<p>mine</p>\n")
    build_site(subs, site)
    assert (site / "my-app.js").read_text() == "console.log('mine')\n"
    assert (site / "data.json").read_text() == '{"mine": true}\n'
    assert (site / "notes" / "todo.html").read_text() == "<p>mine</p>\n"
    # the new list names only what the build wrote: the user's files stay foreign
    build_site(subs, site)
    assert (site / "my-app.js").is_file() and (site / "data.json").is_file()
    assert "my-app.js" not in (site / OWNED).read_text()


def _lookalikes(parent: Path, name: str) -> dict[str, dict[str, bytes]]:
    pid = _dead_pid()
    out = {}
    for hidden in (f".{name}.building-{pid}-mine", f".{name}.old-{pid}"):
        (parent / hidden).mkdir(parents=True)
        (parent / hidden / "keep.txt").write_text(f"{hidden}: a user's file\n")
        out[hidden] = _snapshot(parent / hidden)
    return out


def test_lookalike_scratch_folders_are_neither_deleted_nor_renamed(tmp_path: Path) -> None:
    subs = load_submissions(_subs(tmp_path / "subs", 3))
    # no site yet: an unmarked .site.old-<dead pid> was renamed into place
    before = _lookalikes(tmp_path, "site")
    build_site(subs, tmp_path / "site")
    assert (tmp_path / "site" / "index.html").is_file()
    assert not (tmp_path / "site" / "keep.txt").exists()
    for hidden, files in before.items():
        assert _snapshot(tmp_path / hidden) == files
    # an existing site: the lookalikes were deleted
    build_site(subs, tmp_path / "site")
    for hidden, files in before.items():
        assert _snapshot(tmp_path / hidden) == files


def test_marked_leftovers_are_still_recovered(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.mkdir()
    (target / "a.txt").write_text("previous\n")
    pid = _dead_pid()
    (target / swap.MARKER).write_text(f"{pid}\n")
    os.replace(target, tmp_path / f".t.old-{pid}")
    scratch = tmp_path / f".t.building-{pid}-x"
    scratch.mkdir()
    (scratch / swap.MARKER).write_text(f"{pid}\n")
    empty = tmp_path / f".t.building-{pid}-y"  # killed right after mkdtemp
    empty.mkdir()
    other = tmp_path / f".t.building-{pid}-z"  # marked by another (live) process
    other.mkdir()
    (other / swap.MARKER).write_text(f"{os.getpid()}\n")
    assert swap.recover(target) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == [".t.building-" + f"{pid}-z", "t"]
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]  # the marker went too
