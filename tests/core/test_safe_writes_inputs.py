"""Issue #40 hostile items 5-6: `convert --out` never replaces a folder that
holds its source; `leaderboard record-reference --record` and `score --out`
never write inside a dataset or a submission they read, nor over the
prototypical_paths.csv read beside --imagenet-x."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.hostile import snapshot
from tests.fixtures.safe_write import fails, make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_world(tmp_path_factory.mktemp("world"))


def test_convert_refuses_an_out_that_holds_its_source(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    ds = tmp_path / "ds"
    shutil.copytree(world["mcq"], ds)
    before = snapshot(ds)
    shard = sorted((ds / "data").rglob("*.parquet"))[0]
    for source in (shard, shard.parent, ds / "data"):
        fails(["convert", "parquet", str(source), "--out", str(ds)], capsys, "holds the input")
    mapping = ds / "map.yaml"
    mapping.write_text("question: q\n")
    fails(["convert", "parquet", str(world["pm"]), "--mapping", str(mapping), "--out", str(ds)],
          capsys, "holds the input")
    mapping.unlink()
    assert snapshot(ds) == before


def test_record_reference_never_writes_inside_a_dataset_or_a_submission(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = world["subs"]
    before = snapshot(subs), snapshot(world["mcq"])
    base = ["leaderboard", "record-reference", "--submissions", str(subs), "--model-id",
            "model-0"]
    fails([*base, "--record", str(world["mcq"] / "reference.yaml")], capsys, "dataset")
    fails([*base, "--record", str(world["mcq"] / "data" / "reference.yaml")], capsys, "dataset")
    fails([*base, "--record", str(subs / "model-0" / "reference.yaml")], capsys,
          "inside the input folder")
    assert (snapshot(subs), snapshot(world["mcq"])) == before


def test_score_never_replaces_the_prototypes_beside_imagenet_x(
        world: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text('{"file_name": "a.JPEG"}\n')
    protos = tmp_path / "prototypical_paths.csv"
    protos.write_text("a.JPEG\n")
    base = ["score", "--dataset", str(world["mcq"]), "--predictions", str(world["pm"]),
            "--imagenet-x", str(ann), "--out"]
    fails([*base, str(protos)], capsys, "is an input")
    assert protos.read_text() == "a.JPEG\n"
    fails([*base, str(world["mcq"] / "scores.json")], capsys, "inside the input folder")
