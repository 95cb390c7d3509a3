"""build / publish: atomic swap, releases changelog, crash and kill safety, CLI.

The site mechanics are tested on synthetic submissions passed as loaded records
(they have no predictions to re-score); the CLI, which always re-scores, is
tested on real submissions."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vlmrobust.cli import main
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site import publish
from vlmrobust.leaderboard.site.publish import PublishError, build_site, publish_site, read_releases
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.timezone.utc)


def _dead_pid() -> int:
    """The pid of a process that has exited: only a dead process's leftovers
    are recovered (a fixed number could belong to a live process)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _subs(root: Path, n: int = 4, start: int = 0) -> Path:
    for i in range(start, start + n):
        write_submission(root, *synthetic_submission(i, ("classifier", "clip", "vlm")[i % 3]))
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_publish_records_releases_and_changes(tmp_path: Path) -> None:
    subs = _subs(tmp_path / "subs")
    site = tmp_path / "site"
    r1 = publish_site(load_submissions(subs), site, now=NOW)
    assert r1["version"] == "1" and r1["date"] == "2026-05-01T12:00:00Z"
    assert r1["changes"] is None and r1["n_models"] == 4
    assert r1["baselines"]["version"] == "4" and r1["baselines"]["transform"] == "probit"
    # Two classifiers are below the minimum of 3: the release says "no line", never a number.
    refs = [f for f in r1["fits"] if f["kind"] == "reference"]
    assert refs and all(f["slope"] is None and f["n"] == 2 and "no line: 2 reference model(s)"
                        in f["reason"] for f in refs)
    # Add one model, rescore another, remove a third.
    _subs(subs, 1, start=4)
    scores = json.loads((subs / "clip-0001" / "scores.json").read_text())
    scores["datasets"]["imagewikiqa"]["configs"]["default"]["accuracy"] = 0.5
    (subs / "clip-0001" / "scores.json").write_text(json.dumps(scores))
    for f in (subs / "vlm-0002").iterdir():
        f.unlink()
    (subs / "vlm-0002").rmdir()
    r2 = publish_site(load_submissions(subs), site, now=NOW + dt.timedelta(days=1))
    assert r2["version"] == "2"
    assert r2["changes"] == {"added": ["clip-0004"], "removed": ["vlm-0002"],
                             "updated": ["clip-0001"]}
    releases = read_releases(site)
    assert [r["version"] for r in releases] == ["1", "2"]
    page = (site / "releases.html").read_text()
    assert "2026-05-02T12:00:00Z" in page and "added: clip-0004" in page
    assert page.index("2026-05-02") < page.index("2026-05-01")  # newest first
    assert "Release 2 · 2026-05-02T12:00:00Z" in (site / "index.html").read_text()
    with pytest.raises(PublishError, match="already published"):
        publish_site(load_submissions(subs), site, version="2")
    r3 = publish_site(load_submissions(subs), site, version="2026.1", now=NOW)
    assert r3["version"] == "2026.1"
    with pytest.raises(PublishError, match="cannot increment"):
        publish_site(load_submissions(subs), site)
    mode = stat.S_IMODE(site.stat().st_mode)
    assert mode & 0o055 == 0o055 & ~_umask()  # readable by a web server


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_exception_midway_leaves_previous_site(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    subs = _subs(tmp_path / "subs")
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    before = _snapshot(site)
    _subs(subs, 2, start=4)
    real = publish._write_one
    calls = {"n": 0}

    def flaky(root: Path, rel: str, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 6:
            raise OSError("injected: disk full")
        real(root, rel, data)

    monkeypatch.setattr(publish, "_write_one", flaky)
    with pytest.raises(OSError, match="injected"):
        publish_site(load_submissions(subs), site, now=NOW)
    assert calls["n"] == 6
    assert _snapshot(site) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.lock", "site", "subs"]


def test_failed_check_leaves_previous_site(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    subs = _subs(tmp_path / "subs")
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    before = _snapshot(site)
    real = publish.render_site

    def leaky(*args: object, **kwargs: object) -> dict[str, bytes]:
        files = real(*args, **kwargs)  # type: ignore[arg-type]
        # single-quoted: the old regex check only read double-quoted attributes
        files["index.html"] += b"<img src='https://example.com/track.png'>"
        return files

    monkeypatch.setattr(publish, "render_site", leaky)
    with pytest.raises(PublishError, match="URL scheme 'https' is not allowed"):
        publish_site(load_submissions(subs), site, now=NOW)
    assert _snapshot(site) == before


KILLER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from vlmrobust.leaderboard.site import publish
    from vlmrobust.leaderboard.load import load_submissions
    real = publish._write_one
    count = 0
    def slow(root, rel, data):
        global count
        real(root, rel, data)
        count += 1
        if count == 5:
            Path(sys.argv[3]).write_text("half")
            time.sleep(600)
    publish._write_one = slow
    publish.publish_site(load_submissions(Path(sys.argv[1])), Path(sys.argv[2]))
""")


def test_sigkill_midway_leaves_previous_site(tmp_path: Path) -> None:
    subs = _subs(tmp_path / "subs")
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    before = _snapshot(site)
    _subs(subs, 2, start=4)
    marker = tmp_path / "half-written"
    proc = subprocess.Popen([sys.executable, "-c", KILLER, str(subs), str(site), str(marker)])
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, "publish exited before the kill"
            assert time.monotonic() < deadline, "publish never reached the kill point"
            time.sleep(0.05)
        building = list(tmp_path.glob(".site.building-*"))
        # 5 pages written, besides the scratch folder's marker (vlmrobust.core.files.swap)
        written = [p for p in building[0].rglob("*.*") if p.name != ".vlmrobust-swap"]
        assert len(building) == 1 and len(written) == 5
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _snapshot(site) == before
    # The next publish clears the debris and succeeds.
    release = publish_site(load_submissions(subs), site, now=NOW)
    assert release["version"] == "2"
    assert release["changes"]["added"] == ["clip-0004", "vlm-0005"]
    assert not list(tmp_path.glob(".site.building-*"))


def test_kill_between_the_swap_renames_is_recovered(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    subs = _subs(tmp_path / "subs")
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    before = _snapshot(site)
    # What atomic_directory leaves if killed after moving the old site aside.
    pid = _dead_pid()
    (site / ".vlmrobust-swap").write_text(f"{pid}\n")  # swap_in marks it before the rename
    os.replace(site, tmp_path / f".site.old-{pid}")
    monkeypatch.setattr(publish, "_write_one", lambda *a: (_ for _ in ()).throw(
        OSError("injected")))
    with pytest.raises(OSError, match="injected"):
        publish_site(load_submissions(subs), site, now=NOW)
    assert _snapshot(site) == before
    assert not list(tmp_path.glob(".site.old-*"))
    monkeypatch.undo()
    assert publish_site(load_submissions(subs), site, now=NOW)["version"] == "2"


def test_build_keeps_changelog_and_is_reproducible(tmp_path: Path) -> None:
    subs = _subs(tmp_path / "subs")
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    index = build_site(load_submissions(subs), site)
    assert index == site / "index.html"
    assert "Preview build (not a release)" in index.read_text()
    assert [r["version"] for r in read_releases(site)] == ["1"]
    first = _snapshot(site)
    build_site(load_submissions(subs), site)
    assert _snapshot(site) == first


def test_refuses_to_replace_a_foreign_folder(tmp_path: Path) -> None:
    subs = _subs(tmp_path / "subs", 1)
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("precious")
    with pytest.raises(PublishError, match="is not a vlmrobust site"):
        build_site(load_submissions(subs), home)
    with pytest.raises(PublishError, match="is not a vlmrobust site"):
        publish_site(load_submissions(subs), home)
    assert (home / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "subs"]


def test_second_concurrent_publish_is_refused(tmp_path: Path) -> None:
    import fcntl

    subs = _subs(tmp_path / "subs", 2)
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    before = _snapshot(site)
    with open(tmp_path / ".site.lock", "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        with pytest.raises(PublishError, match="being built by another process"):
            publish_site(load_submissions(subs), site)
    assert _snapshot(site) == before
    assert [r["version"] for r in read_releases(site)] == ["1"]


def test_corrupt_releases_json_is_refused(tmp_path: Path) -> None:
    subs = _subs(tmp_path / "subs", 2)
    site = tmp_path / "site"
    publish_site(load_submissions(subs), site, now=NOW)
    (site / "releases.json").write_text("{not json")
    before = _snapshot(site)
    with pytest.raises(PublishError, match=r"releases\.json: not valid JSON"):
        publish_site(load_submissions(subs), site)
    assert _snapshot(site) == before


def test_cli_build_and_publish(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fixtures.submission import real_submissions

    subs, datasets = real_submissions(tmp_path, 3)
    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--submissions", str(subs), "--out", str(site),
                 "--quiet", "--datasets", *map(str, datasets)]) == 0
    assert capsys.readouterr().out.strip() == str(site / "index.html")
    assert main(["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
                 "--version", "v1", "--quiet", "--dataset-store", str(datasets[0].parent)]) == 0
    assert "published release v1 (3 models)" in capsys.readouterr().out
    (subs / "model-1" / "scores.json").write_text("[]")
    assert main(["leaderboard", "publish", "--submissions", str(subs), "--site",
                 str(site), "--datasets", *map(str, datasets)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "model-1/scores.json" in err
    assert len(err.strip().splitlines()) == 1
    assert [r["version"] for r in read_releases(site)] == ["v1"]
