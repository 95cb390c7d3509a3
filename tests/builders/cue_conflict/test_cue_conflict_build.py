"""Done-when: each cue-conflict layout builds from a hand-made fixture, and a
wrong layout is refused in one line with nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.cue_conflict import (
    STYLIZED_NAMES,
    named_stimuli,
    png,
    write_cue_conflict,
    write_stylized,
)
from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.cue_conflict.build import build
from vlmrobust.builders.cue_conflict.categories import CATEGORIES, label_space
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.errors import SpecError, VlmrobustError
from vlmrobust.core.label_space import read_label_space

SPEC = resolve_spec("cue-conflict")


def _build(root: Path, out: Path, **kw: Any) -> dict[str, Any]:
    opts = BuildOptions(out=out, source_root=root, progress=False, **kw)
    return build(load_spec_yaml(SPEC), SPEC, opts)


def _table(out: Path, config: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for f in sorted((out / "data" / config).glob("*.parquet")):
        rows += pq.read_table(f).to_pylist()
    return rows


def test_both_layouts_build_from_hand_made_fixtures(tmp_path: Path) -> None:
    cc = write_cue_conflict(tmp_path)
    write_stylized(tmp_path)
    out = tmp_path / "ds"
    manifest = _build(tmp_path, out)
    assert manifest["kind"] == "classification"
    assert manifest["configs"] == {"cue-conflict": 32, "stylized-imagenet": 3}
    for config in ("cue-conflict", "stylized-imagenet"):
        assert read_label_space(out, config) == label_space()
    rows = {r["source_file"]: r for r in _table(out, "cue-conflict")}
    assert sorted(rows) == sorted(named_stimuli())
    r = rows["bear/bear2-airplane2.png"]
    assert (r["id"], r["label"], r["shape_category"], r["texture_category"], r["texture_label"]) \
        == ("cue-conflict/bear/bear2-airplane2.png", CATEGORIES.index("bear"), "bear",
            "airplane", CATEGORIES.index("airplane"))
    assert r["image"]["bytes"] == (cc / "bear" / "bear2-airplane2.png").read_bytes()
    sty = _table(out, "stylized-imagenet")
    assert [(s["shape_category"], s["texture_category"], s["texture_label"]) for s in sty] == \
        [("airplane", None, -1), ("knife", None, -1), ("dog", None, -1)]
    assert [s["source_file"] for s in sty] == [f"dnn/session-1/{n}" for n in STYLIZED_NAMES]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| `cue-conflict` | 32 (the published set has 1,280" in card
    assert "24 with shape ≠ texture" in card
    deviations = card.split("## Deviations from the seed", 1)[1].split("\n## ", 1)[0]
    assert "proportion of correct predictions" in deviations  # the seed's rule, quoted
    assert "shape / (shape + texture) decisions" in deviations
    assert "800 Stylized-ImageNet images" in deviations and "this build has none" not in deviations
    assert "`cue-conflict`, `stylized-imagenet` differ from the published count" in deviations
    from vlmrobust.builders.card_meta import validate_card

    header = validate_card(card)  # the hub would accept the card's metadata
    assert header["task_categories"] == ["image-classification"]


def test_load_dataset_reads_the_build(tmp_path: Path) -> None:
    from datasets import load_dataset

    write_cue_conflict(tmp_path)
    _build(tmp_path, tmp_path / "ds")
    ds = load_dataset(str(tmp_path / "ds"), "cue-conflict", split="test",
                      cache_dir=str(tmp_path / "hf"))
    assert ds.features["label"].names == list(CATEGORIES)
    assert len(ds) == 32 and ds[0]["image"].size == (8, 8)


def test_rebuild_gives_the_same_fingerprint_and_stylized_is_optional(tmp_path: Path) -> None:
    write_cue_conflict(tmp_path)
    a = _build(tmp_path, tmp_path / "a")
    b = _build(tmp_path, tmp_path / "b")
    assert a["fingerprint"] == b["fingerprint"]
    assert a["configs"] == {"cue-conflict": 32} and a["absent_variants"] == ["stylized-imagenet"]
    assert _build(tmp_path, tmp_path / "c", limit=5)["configs"] == {"cue-conflict": 5}


def _one_line(exc: pytest.ExceptionInfo[VlmrobustError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "fix:" in msg
    return msg


@pytest.mark.parametrize(("damage", "expected"), [
    ("flat", r"a file where a category folder was expected"),
    ("bad-name", r"bear/bear1_bird2\.png.*not <shape><i>-<texture><j>\.png"),
    ("wrong-folder", r"is in folder 'bear' but its shape class is 'cat'"),
    ("unknown-texture", r"texture 'zebra' is not one of the 16 categories"),
    ("unknown-category", r"zebra: a folder where a category folder was expected"),
    ("jpeg", r"a JPEG image under a \.png name"),
    ("empty", r"no stimuli"),
    ("missing", r"cue-conflict: missing"),
])
def test_wrong_cue_conflict_layout_is_refused_in_one_line(tmp_path: Path, damage: str,
                                                          expected: str) -> None:
    base = write_cue_conflict(tmp_path)
    if damage == "flat":
        (base / "bear1-bird1.png").write_bytes(png(1))
    elif damage == "bad-name":
        (base / "bear" / "bear1_bird2.png").write_bytes(png(1))
    elif damage == "wrong-folder":
        (base / "bear" / "cat1-bird2.png").write_bytes(png(1))
    elif damage == "unknown-texture":
        (base / "bear" / "bear9-zebra1.png").write_bytes(png(1))
    elif damage == "unknown-category":
        (base / "zebra").mkdir()
    elif damage == "jpeg":
        (base / "bear" / "bear9-bird1.png").write_bytes(png(1, "JPEG"))
    elif damage == "empty":
        shutil.rmtree(base)
        base.mkdir()
    elif damage == "missing":
        shutil.rmtree(base)
    out = tmp_path / "ds"
    with pytest.raises(VlmrobustError, match=expected) as exc:
        _build(tmp_path, out)
    _one_line(exc)
    assert not out.exists()


@pytest.mark.parametrize(("damage", "expected"), [
    ("cue-layout", r"stylized: no dnn/session-1/ folder"),
    ("bad-name", r"0004_dnn_car\.png: not <NNNN>_sty_dnn_"),
    ("unknown-category", r"zebra_00_x\.png: not <NNNN>_sty_dnn_"),
])
def test_wrong_stylized_layout_is_refused_in_one_line(tmp_path: Path, damage: str,
                                                      expected: str) -> None:
    write_cue_conflict(tmp_path)
    base = tmp_path / "stylized"
    if damage == "cue-layout":  # the cue-conflict layout where model-vs-human's was expected
        (base / "car").mkdir(parents=True)
        (base / "car" / "car1-bird1.png").write_bytes(png(1))
    else:
        write_stylized(tmp_path)
        name = "0004_dnn_car.png" if damage == "bad-name" else "0004_sty_dnn_0_zebra_00_x.png"
        (base / "dnn" / "session-1" / name).write_bytes(png(2))
    out = tmp_path / "ds"
    with pytest.raises(VlmrobustError, match=expected) as exc:
        _build(tmp_path, out)
    _one_line(exc)
    assert not out.exists()


def test_spec_and_options_are_checked(tmp_path: Path) -> None:
    write_cue_conflict(tmp_path)
    raw = {**load_spec_yaml(SPEC), "variants": {"imagenet-c": "x"}}
    with pytest.raises(SpecError, match=r"cue-conflict\.yaml: variants: 'imagenet-c' is not one"):
        build(raw, SPEC, BuildOptions(out=tmp_path / "o", source_root=tmp_path))
    with pytest.raises(VlmrobustError, match="pass --source-root"):
        build(load_spec_yaml(SPEC), SPEC, BuildOptions(out=tmp_path / "o"))


def test_cli_build_refuses_a_wrong_layout_with_one_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.cli.main import main

    (tmp_path / "cue-conflict").mkdir()
    (tmp_path / "cue-conflict" / "x.png").write_bytes(png(0))
    rc = main(["build", "cue-conflict", "--source-root", str(tmp_path), "--out",
               str(tmp_path / "ds")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].startswith("error: ")


def test_embedded_sample_is_a_named_stand_in_read_by_the_real_reader(tmp_path: Path) -> None:
    out = tmp_path / "sample"
    opts = BuildOptions(out=out, sample=True, progress=False)
    manifest = build(load_spec_yaml(SPEC), SPEC, opts)
    assert manifest["sample"] is True and manifest["configs"] == {"cue-conflict": 42}
    rows = _table(out, "cue-conflict")
    shapes = {r["shape_category"] for r in rows}
    textures = {r["texture_category"] for r in rows}
    assert shapes == {"airplane", "bear", "bird", "boat", "bottle", "truck"}
    assert textures == {"airplane", "bear", "bird", "cat", "dog", "elephant", "truck"}
    assert sum(r["shape_category"] == r["texture_category"] for r in rows) == 4
    for r in rows:  # the published naming, label = shape
        assert r["source_file"] == (f"{r['shape_category']}/{r['shape_category']}1-"
                                    f"{r['texture_category']}1.png")
        assert CATEGORIES[r["label"]] == r["shape_category"]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "a stand-in, not Geirhos's stimuli" in card and "rendition-noto-" in card
    deviations = card.split("## Deviations from the seed", 1)[1].split("\n## ", 1)[0]
    assert "**Embedded sample**" in deviations and "this build has none" in deviations
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample"]  # scratch removed
    again = build(load_spec_yaml(SPEC), SPEC, BuildOptions(out=tmp_path / "again", sample=True,
                                                            progress=False))
    assert again["fingerprint"] == manifest["fingerprint"]
