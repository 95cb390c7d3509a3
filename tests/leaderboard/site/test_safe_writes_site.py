"""Issue #28 items 1-5, continued from test_safe_writes.py: the site
commands (leaderboard build --out, publish --site; demo --fresh: test_demo_fresh.py), the
other outputs and the predictions API never delete, replace or write inside
anything vlmrobust did not create."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures.hostile import hostile_folder, lstat_kind, snapshot, special_paths
from tests.fixtures.safe_write import bench_c_info, fails, leftovers, make_world
from tests.fixtures.trust import perfect_predictions, run_cli
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.writer import write_dataset


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_world(tmp_path_factory.mktemp("world"))


# -- leaderboard build --out / publish --site ---------------------------------------------


@pytest.mark.parametrize("command", ["build", "publish"])
def test_site_commands_refuse_special_paths(world: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str],
                                            command: str) -> None:
    flag = "--out" if command == "build" else "--site"
    for name, path in sorted(special_paths(tmp_path / "sp").items()):
        kind = lstat_kind(path)
        fails(["leaderboard", command, "--submissions", str(world["subs"]), flag, str(path),
                "--quiet", "--datasets", str(world["mcq"]), str(world["bc"])], capsys)
        assert lstat_kind(path) == kind, name
    assert not any((tmp_path / "sp" / "dir-target").iterdir())
    proj = hostile_folder(tmp_path / "proj")
    before = snapshot(proj)
    fails(["leaderboard", command, "--submissions", str(world["subs"]), flag, str(proj),
            "--quiet", "--datasets", str(world["mcq"]), str(world["bc"])], capsys,
           "not a vlmrobust site")
    assert snapshot(proj) == before


def test_publish_keeps_hidden_files_links_fifos_and_devices_of_the_site(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    argv = ["leaderboard", "publish", "--submissions", str(world["subs"]), "--site", str(site),
            "--quiet", "--datasets", str(world["mcq"]), str(world["bc"])]
    assert run_cli(argv, capsys)[0] == 0
    hostile_folder(site / "host")
    (site / ".nojekyll").write_text("")
    os.mkfifo(site / "pipe")
    os.symlink("index.html", site / "home.html")
    theirs = {k: v for k, v in snapshot(site).items()
              if k.startswith(("host", ".nojekyll", "pipe", "home.html"))}
    rc, err = run_cli(argv, capsys)  # a FIFO in the site must not hang it
    assert rc == 0, err
    after = snapshot(site)
    assert {k: after.get(k) for k in theirs} == theirs
    assert not leftovers(tmp_path)


def test_writer_extra_files_land_in_the_same_swap(tmp_path: Path) -> None:
    from tests.fixtures.score import bench_c_features, bench_c_rows

    def write(out: Path, extra: dict[str, bytes]) -> None:
        write_dataset(out, configs={"default": bench_c_rows(2)}, features=bench_c_features(),
                      card="toy", info=bench_c_info(), extra_files=extra)

    write(tmp_path / "ds", {"selection.parquet": b"table"})
    assert (tmp_path / "ds" / "selection.parquet").read_bytes() == b"table"
    write(tmp_path / "ds", {})  # a rebuild without it drops it: it was the build's own
    assert not (tmp_path / "ds" / "selection.parquet").exists()
    with pytest.raises(ValueError, match=r"notes\.txt"):
        write(tmp_path / "ds", {"notes.txt": b"x"})
    assert (tmp_path / "ds" / "manifest.json").is_file() and not leftovers(tmp_path)


def test_site_apart_from_its_submissions_and_datasets(world: dict[str, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs"
    shutil.copytree(world["subs"], subs)
    before = snapshot(subs)
    data = ["--quiet", "--datasets", str(world["mcq"]), str(world["bc"])]
    for site in (subs / "site", subs, tmp_path):  # inside, equal, holding the submissions
        fails(["leaderboard", "build", "--submissions", str(subs), "--out", str(site), *data],
               capsys, "overlap")
    fails(["leaderboard", "publish", "--submissions", str(subs), "--site",
            str(world["mcq"] / "site"), *data], capsys, "overlap")
    assert snapshot(subs) == before


def test_a_fifo_or_link_in_place_of_a_lock_file_is_refused_not_followed(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs"
    subs.mkdir()
    os.mkfifo(subs / ".x.lock")  # opening it for writing would block forever
    fails(["submit", "--submissions", str(subs), "--model-id", "x", "--dataset",
            str(world["mcq"]), "--predictions", str(world["pm"])], capsys, "is a FIFO")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, tmp_path / ".site.lock")
    fails(["leaderboard", "build", "--submissions", str(world["subs"]), "--out",
            str(tmp_path / "site"), "--quiet", "--datasets", str(world["mcq"]), str(world["bc"])],
           capsys, "is a symbolic link")
    assert victim.read_text() == "keep me\n" and not (tmp_path / "site").exists()
    assert lstat_kind(subs / ".x.lock") == "p" and not (subs / "x").exists()


@pytest.mark.parametrize("command", ["convert", "predict"])
def test_other_outputs_refuse_a_foreign_folder(world: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               command: str) -> None:
    from tests.builders.test_convert import mmstar

    out = hostile_folder(tmp_path / "out.parquet")
    before = snapshot(out)
    if command == "convert":
        (tmp_path / "src").mkdir()
        src, _ = mmstar(tmp_path / "src")
        argv = ["convert", "vlmevalkit-tsv", str(src), "--out", str(out)]
        needle = "is not a dataset built by vlmrobust"
    else:
        argv = ["predict", "--model", "classifier:efficientnet-lite0", "--dataset",
                str(world["mcq"]), "--out", str(out)]
        needle = "is a directory"
    fails(argv, capsys, needle)
    assert snapshot(out) == before


def test_write_predictions_api_never_writes_inside_the_dataset(world: dict[str, Path],
                                                               tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(world["mcq"], ds)
    before = snapshot(ds)
    for out in (ds / "p.parquet", ds / "data" / "p.jsonl"):
        with pytest.raises(VlmrobustError, match="inside the input folder"):
            perfect_predictions(ds, out)
    os.mkfifo(tmp_path / "p.parquet")
    with pytest.raises(VlmrobustError, match="is a FIFO"):
        perfect_predictions(ds, tmp_path / "p.parquet")
    assert snapshot(ds) == before and lstat_kind(tmp_path / "p.parquet") == "p"
