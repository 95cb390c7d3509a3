"""Issue #28 items 1-5 and the symlink loops of 16: vlmrobust never deletes,
replaces or writes inside anything it did not create. Every --out,
--submissions and --site is tried on folders holding hidden files, links,
FIFOs and device nodes, and as a FIFO, a device node, a link and a link loop."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures.hostile import hostile_folder, lstat_kind, snapshot, special_paths
from tests.fixtures.safe_write import bench_c_info, fails, leftovers, make_world
from tests.fixtures.score import write_mcq
from tests.fixtures.trust import run_cli
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.writer import write_dataset
from vlmrobust.evaluation.submissions import add_submission


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_world(tmp_path_factory.mktemp("world"))


# -- 1. build --out -----------------------------------------------------------------


def test_build_refuses_a_foreign_folder_and_keeps_it(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    proj = hostile_folder(tmp_path / "x" / "proj")
    before = snapshot(proj)
    fails(["build", "imagenet-mcq", "--sample", "--limit", "6", "--out", str(proj)], capsys,
           "is not a dataset built by vlmrobust")
    assert snapshot(proj) == before
    # only the user's file: the case of the issue
    only = tmp_path / "y" / "proj"
    only.mkdir(parents=True)
    (only / "main.py").write_text("code\n")
    fails(["build", "imagenet-mcq", "--sample", "--limit", "6", "--out", str(only)], capsys)
    assert (only / "main.py").read_text() == "code\n"


def test_build_never_deletes_its_own_spec(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.benchmarks import resolve_spec

    specdir = tmp_path / "specdir"
    specdir.mkdir()
    spec = specdir / "my-spec.yaml"
    shutil.copy(resolve_spec("imagenet-mcq"), spec)
    fails(["build", str(spec), "--sample", "--out", str(specdir)], capsys, "my-spec.yaml")
    assert spec.is_file()
    # even when the folder also looks like a dataset
    write_mcq(tmp_path / "ds")
    shutil.copy(spec, tmp_path / "ds" / "my-spec.yaml")
    fails(["build", str(tmp_path / "ds" / "my-spec.yaml"), "--sample", "--out",
            str(tmp_path / "ds")], capsys)
    assert (tmp_path / "ds" / "my-spec.yaml").is_file()


def test_build_refuses_files_links_fifos_devices_and_loops(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("mine\n")
    paths = {"plain": plain, **special_paths(tmp_path / "sp")}
    for _, path in sorted(paths.items()):
        kind = lstat_kind(path)
        fails(["build", "imagenet-mcq", "--sample", "--limit", "6", "--out", str(path)], capsys)
        assert lstat_kind(path) == kind
    assert plain.read_text() == "mine\n"
    assert (tmp_path / "sp" / "victim.txt").read_text() == "keep me\n"
    assert not any((tmp_path / "sp" / "dir-target").iterdir())


def test_writer_replaces_only_a_dataset_or_an_empty_folder(tmp_path: Path) -> None:
    from tests.fixtures.score import bench_c_features, bench_c_rows

    def write(out: Path) -> None:
        write_dataset(out, configs={"default": bench_c_rows(2)}, features=bench_c_features(),
                      card="toy", info=bench_c_info())

    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty)
    assert (empty / "manifest.json").is_file()
    write(empty)  # a dataset it built is replaced
    assert not leftovers(tmp_path)
    # a dataset folder holding something no build wrote is refused, nothing lost
    for name in (".gitattributes", "notes.txt"):
        (empty / name).write_text("x")
        before = snapshot(empty)
        with pytest.raises(VlmrobustError, match="which no build wrote"):
            write(empty)
        assert snapshot(empty) == before
        (empty / name).unlink()
    os.symlink(tmp_path, empty / "data" / "link")
    with pytest.raises(VlmrobustError, match="data/link"):
        write(empty)
    # a dataset is never built inside another one
    with pytest.raises(VlmrobustError, match="inside the dataset"):
        write(empty / "data" / "nested")


# -- 2. score --out -----------------------------------------------------------------


def test_score_refuses_devices_fifos_links_and_its_inputs(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["score", "--dataset", str(world["mcq"]), "--predictions", str(world["pm"])]
    for _, path in sorted(special_paths(tmp_path / "sp").items()):
        kind = lstat_kind(path)
        fails([*base, "--out", str(path)], capsys, " is a ")
        assert lstat_kind(path) == kind
    assert (tmp_path / "sp" / "victim.txt").read_text() == "keep me\n"
    # --imagenet-x F --out F
    fx = tmp_path / "x.jsonl"
    fx.write_text('{"file_name": "a"}\n')
    fails([*base, "--imagenet-x", str(fx), "--out", str(fx)], capsys, "is an input")
    assert fx.read_text() == '{"file_name": "a"}\n'
    # a predictions file that is a link loop: one line
    fails(["score", "--dataset", str(world["mcq"]), "--predictions",
            str(tmp_path / "sp" / "loop"), "--out", str(tmp_path / "s.json")], capsys)
    assert not (tmp_path / "s.json").exists()


def test_validate_and_submit_refuse_a_link_loop_in_one_line(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = special_paths(tmp_path / "sp")["loop"]
    fails(["validate", "--dataset", str(world["mcq"]), "--predictions", str(loop)], capsys)
    fails(["submit", "--submissions", str(tmp_path / "subs"), "--model-id", "m", "--dataset",
            str(world["mcq"]), "--predictions", str(loop)], capsys)
    fails(["submit", "--submissions", str(loop), "--model-id", "m", "--dataset",
            str(world["mcq"]), "--predictions", str(world["pm"])], capsys, "symbolic link")
    fails(["leaderboard", "build", "--submissions", str(world["subs"]), "--out", str(loop),
            "--quiet"], capsys)
    assert lstat_kind(loop) == "l"


# -- 3. submit into existing folders ------------------------------------------------


def test_submit_into_a_project_folder_keeps_everything(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = hostile_folder(tmp_path / "myproject")
    before = snapshot(proj)
    rc, err = run_cli(["submit", "--submissions", str(proj), "--model-id", "x", "--dataset",
                       str(world["mcq"]), "--predictions", str(world["pm"])], capsys)
    assert rc == 0, err
    after = snapshot(proj)
    assert {k: v for k, v in after.items() if k in before} == before
    new = set(after) - set(before)
    assert {k for k in new if not k.startswith("x/")} == {".x.lock", "x"}  # nothing else
    assert {"x/imagenet-mcq/predictions.parquet", "x/meta.yaml", "x/scores.json"} <= new


def test_resubmit_keeps_hidden_files_links_fifos_and_devices_of_the_model_folder(
        world: dict[str, Path], tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    add_submission(subs, "m", world["mcq"], world["pm"])
    root = subs / "m"
    hostile_folder(root / "notes")  # a user's folder inside the model folder
    (root / ".review").write_text("looked at it\n")
    (root / "imagenet-mcq" / ".checked").write_text("ok\n")
    os.mkfifo(root / "pipe")
    os.symlink("imagenet-mcq", root / "alias")
    theirs = {k: v for k, v in snapshot(root).items()
              if k.startswith(("notes", ".review", "pipe", "alias", "imagenet-mcq/.checked"))}
    add_submission(subs, "m", world["bc"], world["pb"])  # another dataset
    add_submission(subs, "m", world["mcq"], world["pm"])  # the same dataset again
    after = snapshot(root)
    assert {k: after.get(k) for k in theirs} == theirs  # same inodes, same bytes
    assert (root / "bench-c" / "predictions.parquet").is_file()
    assert not leftovers(subs)


@pytest.mark.parametrize("kind", ["file", "link-to-dir", "link-to-file", "fifo", "device",
                                  "foreign-folder"])
def test_model_id_naming_something_else_is_refused(world: dict[str, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   kind: str) -> None:
    from tests.fixtures.hostile import make_device

    subs = tmp_path / "subs"
    subs.mkdir()
    target = subs / "x"
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_text("f\n")
    if kind == "file":
        target.write_text("mine\n")
    elif kind == "link-to-dir":
        os.symlink(tmp_path / "elsewhere", target)
    elif kind == "link-to-file":
        os.symlink(tmp_path / "elsewhere" / "f", target)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        if not make_device(target):
            pytest.skip("cannot create a device node here")
    else:
        hostile_folder(target)
    before = snapshot(subs)
    fails(["submit", "--submissions", str(subs), "--model-id", "x", "--dataset",
            str(world["mcq"]), "--predictions", str(world["pm"])], capsys)
    after = snapshot(subs)
    after.pop(".x.lock", None)
    assert after == before
    assert not leftovers(subs)
    assert (tmp_path / "elsewhere" / "f").read_text() == "f\n"


# -- 4. no write inside an input ------------------------------------------------------


def test_submit_into_the_dataset_folder_is_refused(world: dict[str, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(world["mcq"], ds)
    before = snapshot(ds)
    for subs in (ds, ds / "data", ds / "submissions"):
        fails(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset", str(ds),
                "--predictions", str(world["pm"])], capsys, "inside the input folder")
    # nor inside another built dataset
    fails(["submit", "--submissions", str(ds / "data"), "--model-id", "m", "--dataset",
            str(world["mcq"]), "--predictions", str(world["pm"])], capsys, "inside the dataset")
    assert snapshot(ds) == before


def test_submit_refuses_a_dataset_inside_the_model_folder(world: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs"
    add_submission(subs, "m", world["mcq"], world["pm"])
    inner = subs / "m" / "my-dataset"
    shutil.copytree(world["bc"], inner)
    fails(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset", str(inner),
            "--predictions", str(world["pb"])], capsys, "lies inside the submission folder")
    assert (inner / "manifest.json").is_file()


def test_predict_out_inside_the_dataset_or_special_is_refused(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = tmp_path / "ds"
    shutil.copytree(world["mcq"], ds)
    before = snapshot(ds)
    base = ["predict", "--model", "classifier:efficientnet-lite0", "--dataset", str(ds)]
    fails([*base, "--out", str(ds / "data" / "p.parquet")], capsys, "inside the input folder")
    fails([*base, "--out", str(ds / "p.jsonl")], capsys, "inside the input folder")
    assert snapshot(ds) == before
    sp = special_paths(tmp_path / "sp")
    for name in ("fifo", "link-to-file", "device"):
        if name in sp:
            target = sp[name].with_suffix(".parquet")
            os.rename(sp[name], target)
            fails([*base, "--out", str(target)], capsys, " is a ")
    (tmp_path / "p.jsonl.meta.yaml").mkdir()
    fails([*base, "--out", str(tmp_path / "p.jsonl")], capsys, "sidecar")
