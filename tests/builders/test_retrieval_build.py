"""Done-when (#24.3): Flickr30K and MSCOCO build from hand-made fixtures in
Karpathy's published layout, load with datasets.load_dataset, and a wrong layout
is refused in one line naming the expected one, with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.retrieval import write_flickr30k, write_mscoco, write_sources
from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.retrieval.build import build
from vlmrobust.builders.retrieval.karpathy import read_karpathy
from vlmrobust.core.errors import SourceError, SpecError, VlmrobustError

SPEC = resolve_spec("retrieval")


def _build(root: Path, out: Path, **kw: Any) -> dict[str, Any]:
    return build(load_spec_yaml(SPEC), SPEC, BuildOptions(out=out, source_root=root,
                                                          progress=False, **kw))


def test_both_layouts_build_and_load(tmp_path: Path) -> None:
    import datasets

    src = write_sources(tmp_path / "src")
    out = tmp_path / "ds"
    manifest = _build(src, out)
    assert manifest["kind"] == "retrieval"
    assert manifest["configs"] == {"flickr30k": 6, "mscoco-5k": 5}
    assert manifest["caption_counts"] == {"flickr30k": 30, "mscoco-5k": 26}
    assert set(manifest["source_fingerprints"]) == {"flickr30k/dataset_flickr30k.json",
                                                    "mscoco-5k/dataset_coco.json"}
    coco = datasets.load_dataset(str(out), "mscoco-5k", split="test")
    first = coco[0]
    assert first["id"] == "mscoco-391917"  # the first test entry (two val entries before it)
    assert first["source_file"] == "COCO_val2014_000000391917.jpg"
    # six captions kept, raw text normalised: double space and trailing " \n" gone
    assert first["captions"] == [f"A {c} thing number 2, caption {j}." for j, c in
                                 enumerate(("blue", "yellow", "purple", "orange", "white",
                                            "black"))]
    assert first["image"].size == (28, 24)
    raw = (src / "mscoco" / "val2014" / "COCO_val2014_000000391917.jpg").read_bytes()
    import pyarrow.parquet as pq

    table = pq.read_table(next((out / "data" / "mscoco-5k").glob("*.parquet")))
    assert table.column("image").to_pylist()[0]["bytes"] == raw  # byte for byte
    fl = datasets.load_dataset(str(out), "flickr30k", split="test")
    assert fl["id"][:2] == ["flickr30k-1000092809", "flickr30k-1000092816"]  # train skipped
    assert all(len(c) == 5 for c in fl["captions"])
    card = (out / "README.md").read_text()
    assert "image→text" in card and "`captions` (list of strings" in card
    deviations = card.split("## Deviations from the seed", 1)[1].split("\n## ", 1)[0]
    assert "Recall@K is the metric with K = 5" in deviations  # the seed's rule, quoted
    assert "Recall@1 and @10 are reported beside it" in deviations
    assert "averaged recall@5" in deviations and "Embedded sample" not in deviations
    from vlmrobust.builders.card_meta import validate_card

    validate_card(card)


def test_same_sources_same_fingerprint_and_captions_change_it(tmp_path: Path) -> None:
    src = write_sources(tmp_path / "src")
    a = _build(src, tmp_path / "a")
    b = _build(src, tmp_path / "b")
    assert a["fingerprint"] == b["fingerprint"]
    f = src / "flickr30k" / "dataset_flickr30k.json"
    data = json.loads(f.read_text())
    data["images"][-1]["sentences"][0]["raw"] = "another caption"
    f.write_text(json.dumps(data))
    assert _build(src, tmp_path / "c")["fingerprint"] != a["fingerprint"]


def test_absent_source_is_left_out_and_limit_cuts(tmp_path: Path, capsys: Any) -> None:
    write_mscoco(tmp_path / "src")
    m = _build(tmp_path / "src", tmp_path / "ds", limit=2)
    assert m["configs"] == {"mscoco-5k": 2} and m["absent_configs"] == ["flickr30k"]
    assert "flickr30k: no flickr30k folder" in capsys.readouterr().err
    card = (tmp_path / "ds" / "README.md").read_text()
    assert "cut to 2 images by --limit" in card
    assert "- Counts: `mscoco-5k` differs from the published split" in card


def _refused(root: Path, out: Path, match: str) -> str:
    with pytest.raises(VlmrobustError, match=match) as exc:
        _build(root, out)
    assert "\n" not in str(exc.value)
    assert not out.exists()
    return str(exc.value)


def test_wrong_layouts_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    # nothing of either source
    (tmp_path / "empty").mkdir()
    msg = _refused(tmp_path / "empty", out, "none of the spec's sources is there")
    assert "dataset_flickr30k.json + flickr30k-images/" in msg
    # a flickr30k folder without Karpathy's split file (e.g. only the images)
    bare = tmp_path / "bare"
    (bare / "flickr30k" / "flickr30k-images").mkdir(parents=True)
    msg = _refused(bare, out, "no flickr30k layout found")
    assert "expected Karpathy's split file beside the images" in msg
    # the COCO split file in the Flickr folder
    swapped = tmp_path / "swapped"
    write_mscoco(swapped)
    (swapped / "flickr30k").mkdir()
    shutil.copy(swapped / "mscoco" / "dataset_coco.json",
                swapped / "flickr30k" / "dataset_flickr30k.json")
    _refused(swapped, out, r"says \"dataset\": 'coco', not 'flickr30k'")
    # a missing image
    src = write_sources(tmp_path / "src")
    victim = next((src / "flickr30k" / "flickr30k-images").glob("*.jpg"))
    victim.unlink()
    _refused(src, out, f"{victim.name}: missing image of dataset_flickr30k.json images")


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: d.pop("images"), r"no \"images\" list"),
    (lambda d: d["images"][3].update(sentences=[]), r"images\[3\]\.sentences: missing or empty"),
    (lambda d: d["images"][3]["sentences"][1].update(raw=7), r"sentences\[1\]\.raw"),
    (lambda d: d["images"][3].update(filename="../etc/passwd"), r"is not a plain file name"),
    (lambda d: d["images"][3].update(split=None), r"images\[3\]\.split"),
    (lambda d: d["images"][4].update(filename=d["images"][3]["filename"]), r"repeats images\[3\]"),
])
def test_malformed_split_file_refused_naming_entry(tmp_path: Path, edit: Any, match: str) -> None:
    folder = write_flickr30k(tmp_path / "src")
    f = folder / "dataset_flickr30k.json"
    data = json.loads(f.read_text())
    edit(data)
    f.write_text(json.dumps(data))
    msg = _refused(tmp_path / "src", tmp_path / "ds", match)
    assert "expected Karpathy's layout" in msg or "repeats" in msg


def test_not_json_and_spec_refused(tmp_path: Path) -> None:
    folder = write_flickr30k(tmp_path / "src")
    (folder / "dataset_flickr30k.json").write_text("{not json")
    with pytest.raises(SourceError, match="not valid JSON"):
        read_karpathy("flickr30k", tmp_path / "src")
    # --sample builds the embedded sample (tests/builders/test_retrieval_sample.py)
    with pytest.raises(SpecError, match="'coco' is not one of"):
        build({"name": "r", "version": "1", "sources": {"x": "coco"}}, SPEC,
              BuildOptions(out=tmp_path / "o", source_root=tmp_path))


def test_cli_build(tmp_path: Path, capsys: Any) -> None:
    from vlmrobust.cli.main import main

    src = write_sources(tmp_path / "src")
    assert main(["build", "retrieval", "--source-root", str(src), "--out",
                 str(tmp_path / "ds")]) == 0
    (tmp_path / "nothing").mkdir()
    capsys.readouterr()
    assert main(["build", "retrieval", "--source-root", str(tmp_path / "nothing"), "--out",
                 str(tmp_path / "ds2")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "none of the spec's sources" in err[0]
    assert not (tmp_path / "ds2").exists()
