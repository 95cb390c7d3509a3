"""Issue #40 hostile items 1-3: the `discover` commands never delete, replace
or write inside anything they did not create: a project folder, their own
inputs (records, images, the questioner, the --taxonomy file), a dataset."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fixtures.discover import make_record, planted_folder
from tests.fixtures.hostile import hostile_folder, snapshot
from tests.fixtures.safe_write import fails
from tests.fixtures.score import write_mcq
from tests.fixtures.trust import run_cli
from vlmrobust.core.discover_records import write_records
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.owned import MARK, check_owned_folder, owned_directory

ROLES = ["--answerer", "rule:blind=count", "--verifier", "rule:planted"]


def project(folder: Path) -> Path:
    """A user's project: code, secrets, a model config and a journal."""
    hostile_folder(folder)
    (folder / "config.json").write_text('{"mine": 1}\n')
    (folder / "journal.jsonl").write_text('{"note": "mine"}\n')
    return folder


def records(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rec.jsonl"
    write_records(path, [make_record(completion_id=f"a.png#{i}") for i in range(3)])
    return path


def fake_questioner(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "llama"}\n')
    return folder


# -- 1. taxonomy --out -------------------------------------------------------------


def test_taxonomy_refuses_a_project_its_inputs_and_a_dataset(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = records(tmp_path / "recs")
    proj = project(tmp_path / "proj")
    q = fake_questioner(tmp_path / "q")
    ds = write_mcq(tmp_path / "ds")
    watched = [proj, rec.parent, q, ds]
    before = [snapshot(p) for p in watched]
    base = ["discover", "taxonomy", str(rec), "--tagger", "rule:planted"]
    fails([*base, "--out", str(proj)], capsys, ".env", "did not write")
    fails([*base, "--out", str(rec.parent)], capsys, "overlap")  # holds the records file
    fails([*base, "--out", str(ds)], capsys, "dataset")
    fails([*base, "--out", str(ds / "data")], capsys, "dataset")
    fails(["discover", "taxonomy", str(rec), "--tagger", f"vlm:{q}", "--out", str(q)], capsys,
          "overlap")
    fails([*base, "--images", str(q), "--out", str(q / "tax")], capsys, "overlap")
    assert [snapshot(p) for p in watched] == before


def test_taxonomy_replaces_its_own_folder_only_while_unchanged(tmp_path: Path) -> None:
    from vlmrobust.evaluation.discover.taxonomy import TaxonomyConfig, build_taxonomy

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0 + len(t), float(i)] for i, t in enumerate(texts)]

    rec = records(tmp_path / "recs")
    out = tmp_path / "tax"
    build_taxonomy(rec, out, "rule:planted", TaxonomyConfig(), embed=embed)
    assert sorted(p.name for p in out.iterdir()) == [MARK, "records.jsonl", "taxonomy.json"]
    build_taxonomy(rec, out, "rule:planted", TaxonomyConfig(), embed=embed)  # a rerun
    (out / "taxonomy.json").write_text("edited by hand\n")
    with pytest.raises(VlmrobustError, match=r"taxonomy\.json"):
        build_taxonomy(rec, out, "rule:planted", TaxonomyConfig(), embed=embed)
    assert (out / "taxonomy.json").read_text() == "edited by hand\n"


# -- 2. train --out, planted --out / --questioner-out -----------------------------------


def test_train_refuses_a_project_and_the_questioner_it_trains(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("trl")
    images = planted_folder(tmp_path, n=2)
    q = fake_questioner(tmp_path / "q")
    proj = project(tmp_path / "proj")
    before = [snapshot(p) for p in (proj, q, images)]
    base = ["discover", "train", "--questioner", str(q), "--images", str(images), *ROLES]
    fails([*base, "--out", str(proj)], capsys, "discover_run.json")
    fails([*base, "--out", str(q)], capsys, "is the --questioner folder")
    fails([*base, "--out", str(q / "run")], capsys, "overlap")
    fails([*base, "--out", str(images)], capsys, "overlap")
    fails([*base, "--out", str(write_mcq(tmp_path / "ds"))], capsys)
    assert [snapshot(p) for p in (proj, q, images)] == before


def test_planted_refuses_a_project_and_a_users_image_of_the_same_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proj = project(tmp_path / "proj")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "planted-0000.png").write_bytes(b"my own picture")
    before = [snapshot(proj), snapshot(mine)]
    fails(["discover", "planted", "--n", "2", "--out", str(tmp_path / "imgs"),
           "--questioner-out", str(proj)], capsys, "--questioner-out", "did not write")
    assert not (tmp_path / "imgs").exists()  # nothing written before the refusal
    fails(["discover", "planted", "--n", "2", "--out", str(proj)], capsys)
    fails(["discover", "planted", "--n", "2", "--out", str(mine)], capsys, "planted-0000.png")
    fails(["discover", "planted", "--n", "2", "--out", str(tmp_path / "a"),
           "--questioner-out", str(tmp_path / "a" / "q")], capsys, "overlap")
    assert [snapshot(proj), snapshot(mine)] == before
    # its own folder is replaced: a rerun with fewer images leaves no stale one
    out = tmp_path / "imgs"
    assert run_cli(["discover", "planted", "--n", "3", "--out", str(out)], capsys)[0] == 0
    assert run_cli(["discover", "planted", "--n", "2", "--out", str(out)], capsys)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == [MARK, "planted-0000.png",
                                                     "planted-0001.png"]


# -- 3. evaluate --out, sample --out ----------------------------------------------------


def test_evaluate_and_sample_never_replace_their_inputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = records(tmp_path / "recs")
    tax = tmp_path / "skills.txt"
    tax.write_text("counting\n")
    ds = write_mcq(tmp_path / "ds")
    images = planted_folder(tmp_path, n=2)
    q = fake_questioner(tmp_path / "q")
    watched = [rec.parent, ds, images, q]
    before = [snapshot(p) for p in watched] + [tax.read_bytes()]
    ev = ["discover", "evaluate", str(rec), "--no-sd", "--taxonomy", str(tax), "--out"]
    fails([*ev, str(rec)], capsys, "is an input")
    fails([*ev, str(tax)], capsys, "is an input")
    fails([*ev, str(ds / "manifest.json")], capsys, "dataset")
    fails([*ev, str(ds / "data" / "m.json")], capsys, "dataset")
    fails([*ev, str(images / "planted-0000.png")], capsys, "not a metrics file")
    fails([*ev, str(q / "config.json")], capsys, "not a metrics file")
    sa = ["discover", "sample", "--questioner", str(q), "--images", str(images), *ROLES, "--out"]
    fails([*sa, str(images / "planted-0000.png")], capsys, "inside the input folder")
    fails([*sa, str(q / "config.json")], capsys, "inside the input folder")
    fails([*sa, str(ds / "manifest.json")], capsys, "dataset")
    fails([*sa, str(tax)], capsys, "not a records file")
    assert [snapshot(p) for p in watched] + [tax.read_bytes()] == before
    # its own earlier output is replaced
    out = tmp_path / "m.json"
    assert run_cli([*ev, str(out)], capsys)[0] == 0
    assert run_cli([*ev, str(out)], capsys)[0] == 0


def test_an_owned_folder_keeps_a_file_that_appears_while_it_is_written(tmp_path: Path) -> None:
    out = tmp_path / "o"
    with owned_directory(out, "t") as tmp:
        (tmp / "a.txt").write_text("1")
    check_owned_folder(out, "--out", "t")
    with owned_directory(out, "t") as tmp:
        (tmp / "a.txt").write_text("2")
        (out / "late.txt").write_text("user")  # during the run
    assert (out / "late.txt").read_text() == "user" and (out / "a.txt").read_text() == "2"
    with pytest.raises(VlmrobustError, match=r"late\.txt"):
        check_owned_folder(out, "--out", "t")
    shutil.rmtree(out)
