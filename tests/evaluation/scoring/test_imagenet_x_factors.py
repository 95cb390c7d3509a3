"""Done-when: ImageNet-X factor accuracies in scores match a hand computation on
a fixture in ImageNet-X's published JSONL format, joined on source_file; the
factor counts from the top-factor file match the imagenet-x package's own
loader."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.scoring.dataset import score_tables
from vlmrobust.evaluation.scoring.imagenet_x import load_annotations, packaged_annotations
from vlmrobust.metrics.lines.factors import FACTORS, NAMED_FACTORS


def _line(name: str, cls: int, **on: int) -> str:
    row = {"file_name": name, "class": cls, **{f: on.get(f, 0) for f in FACTORS},
           "justification": "hand-written fixture", "one_word": "x"}
    return json.dumps(row)


def test_factor_accuracies_match_hand_computation(tmp_path: Path) -> None:
    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text("\n".join([
        _line("ILSVRC2012_val_00000001.JPEG", 65, pose=1, background=1),
        _line("ILSVRC2012_val_00000002.JPEG", 970, pose=1),
        _line("ILSVRC2012_val_00000003.JPEG", 230, color=1, pose=1),
        _line("ILSVRC2012_val_00000004.JPEG", 809, texture=1),
        _line("ILSVRC2012_val_00000099.JPEG", 1, pose=1),  # not in the dataset
    ]) + "\n")
    files = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in (1, 2, 3, 4, 5)]  # 5: not annotated
    ids = [f"imagenet-val-wordnet-{i}" for i in range(5)] + ["imagenet-r-wordnet-0"]
    answers = [0, 1, 2, 0, 1, 0]
    # predicted: right, wrong, right, wrong, right | right
    preds = [0, 0, 2, 1, 1, 0]
    dataset = pa.table({
        "id": ids, "options": [["a", "b", "c"]] * 6, "answer": answers,
        "variant": ["imagenet-val"] * 5 + ["imagenet-r"],
        "distractors": ["wordnet"] * 6,
        "source_file": [*files, "n01443537/art_0.jpg"],
        "config": ["imagenet-val-wordnet"] * 5 + ["imagenet-r-wordnet"]})
    manifest = {"spec": {"name": "imagenet-mcq", "version": "1"}, "fingerprint": "f",
                "reference_variant": "imagenet-val",
                "configs": {"imagenet-val-wordnet": 5, "imagenet-r-wordnet": 1}}
    logits = [[10.0 if j == p else 0.0 for j in range(3)] for p in preds]
    scores = score_tables(dataset, manifest, pa.table({"id": ids, "logits": logits}),
                          "m", imagenet_x=ann)
    cfgs = scores["datasets"]["imagenet-mcq"]["configs"]
    f = cfgs["imagenet-val-wordnet"]["factors"]
    # by hand: pose on images 1, 2, 3 -> right, wrong, right = 2/3
    assert f["pose"] == {"n": 3, "accuracy": pytest.approx(2 / 3)}
    assert f["background"] == {"n": 1, "accuracy": 1.0}
    assert f["color"] == {"n": 1, "accuracy": 1.0}
    assert f["texture"] == {"n": 1, "accuracy": 0.0}
    assert f["larger"] == {"n": 0, "accuracy": None}
    assert "style" not in f  # not one of seed 001's 10 named factors
    assert cfgs["imagenet-val-wordnet"]["factor_annotations"] == {
        "file": "imagenet_x_val_top_factor.jsonl", "prototypes_file": None,
        "prototypes_removed": 0, "n_annotated": 5, "factors": list(NAMED_FACTORS)}
    assert f["annotated"] == {"n": 4, "accuracy": 0.5}
    assert "factors" not in cfgs["imagenet-r-wordnet"]  # imagenet-val configs only


def test_bad_annotation_files(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text(_line("x.JPEG", 1).replace('"pose": 0', '"pose": 2') + "\n")
    with pytest.raises(VlmrobustError, match=r"line 1 \(x.JPEG\): factor 'pose' is 2"):
        load_annotations(p)
    p.write_text("{not json\n")
    with pytest.raises(VlmrobustError, match="line 1 is not JSON"):
        load_annotations(p)
    with pytest.raises(VlmrobustError, match="not found"):
        load_annotations(tmp_path / "missing.jsonl")


def test_installed_package_annotations_parse() -> None:
    path = packaged_annotations()
    if path is None:
        pytest.skip("imagenet-x is not installed (the `factors` extra)")
    ann = load_annotations(path)
    assert len(ann) > 40_000
    assert all(name.startswith("ILSVRC2012_val_") for name in list(ann)[:100])


def test_prototypes_beside_the_file_are_removed(tmp_path: Path) -> None:
    from vlmrobust.core.imagenet_x import load

    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text("\n".join([_line("a.JPEG", 1, pose=1), _line("b.JPEG", 2, color=1),
                              _line("c.JPEG", 3, pose=1)]) + "\n")
    (tmp_path / "prototypical_paths.csv").write_text("file_name\nb.JPEG\nz.JPEG\n")
    got = load(ann)
    assert set(got.factors) == {"a.JPEG", "c.JPEG"} and got.prototypes_removed == 1
    assert got.counts()["pose"] == 2 and got.counts()["color"] == 0
    assert got.counts(["a.JPEG", "b.JPEG", "q.JPEG"])["pose"] == 1
    (tmp_path / "prototypical_paths.csv").write_text("path\nb.JPEG\n")
    load.cache_clear()
    with pytest.raises(VlmrobustError, match="not imagenet-x's prototype list"):
        load(ann)
    load.cache_clear()


def test_factor_counts_match_the_package_loader() -> None:
    """Per-factor image counts of our reader (top-factor file, prototypes
    removed) equal those of imagenet-x's own ``load_annotations()`` (its
    default: which_factor="top", filter_prototypes=True), and the named
    factors are its 10 most frequent."""
    package = pytest.importorskip("imagenet_x")
    pytest.importorskip("pandas")
    from vlmrobust.core.imagenet_x import load_default

    theirs = package.load_annotations()
    ours = load_default()
    assert ours is not None and ours.file == "imagenet_x_val_top_factor.jsonl"
    assert len(ours.factors) == len(theirs)
    assert set(ours.factors) == set(theirs["file_name"])
    counts = ours.counts()
    assert counts == {f: int(theirs[f].sum()) for f in package.FACTORS}
    top10 = sorted(package.FACTORS, key=lambda f: -int(theirs[f].sum()))[:10]
    assert list(NAMED_FACTORS) == top10
    assert ours.prototypes_removed == 48_868 - len(theirs)


def test_card_section_counts_this_builds_images_per_factor() -> None:
    from vlmrobust.builders.imagenet_x_card import imagenet_x_section
    from vlmrobust.core.imagenet_x import Annotations

    ann = Annotations("imagenet_x_val_top_factor.jsonl",
                      {"a.JPEG": frozenset({"pose"}), "b.JPEG": frozenset({"pose"}),
                       "c.JPEG": frozenset({"texture"}), "d.JPEG": frozenset({"style"})},
                      3000, "prototypical_paths.csv")
    text = "\n".join(imagenet_x_section(["a.JPEG", "c.JPEG", "d.JPEG", "x.JPEG"],
                                        "5-option multiple choice", ann))
    assert "`imagenet_x_val_top_factor.jsonl`" in text and "3,000 images" in text
    assert "3 of this build's 4 imagenet-val images are annotated" in text
    assert "| pose | 1 |" in text and "| texture | 1 |" in text and "| larger | 0 |" in text
    assert "style" not in text.split("| factor |")[1]  # only the 10 named factors are listed


def test_classification_imagenet_val_gets_factors_over_the_full_label_space(tmp_path: Path) -> None:
    """A classification config of imagenet-val rows (the classification family's):
    factor accuracy is top-1 over the whole label space, joined on source_file;
    the K-option config of the same rows gets none."""
    import datasets

    from tests.fixtures.classification import png, toy_label_space
    from vlmrobust.core.kinds import CLASSIFICATION
    from vlmrobust.core.writer import BuildInfo, write_dataset
    from vlmrobust.evaluation.predictions.api import write_predictions
    from vlmrobust.evaluation.scoring.dataset import score

    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text("\n".join([_line(f"ILSVRC2012_val_{i:08d}.JPEG", 0, **{f: 1})
                              for i, f in ((1, "pose"), (2, "pose"), (3, "texture"),
                                           (4, "pose"))]) + "\n")
    space = toy_label_space()
    feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                               "label": datasets.Value("int32"),
                               "candidates": datasets.Sequence(datasets.Value("int32")),
                               "variant": datasets.Value("string"),
                               "source_file": datasets.Value("string")})

    def rows(config: str, k: bool) -> list[dict[str, object]]:
        return [{"id": f"{config}-{i}", "image": {"bytes": png(i), "path": None},
                 "label": i % len(space), "candidates": [i % len(space), (i + 1) % len(space)] if k else [],
                 "variant": "imagenet-val", "source_file": f"ILSVRC2012_val_{i:08d}.JPEG"}
                for i in range(1, 6)]

    ds = tmp_path / "ds"
    write_dataset(ds, configs={"imagenet-val": rows("imagenet-val", False),
                               "imagenet-val-k2": rows("imagenet-val-k2", True)},
                  features=feats, card="x", info=BuildInfo("classification", "1", 0),
                  kind=CLASSIFICATION, label_spaces={"imagenet-val": space, "imagenet-val-k2": space})
    n = len(space)
    # imagenet-val rows 1..5: right, wrong, right, right, wrong (over the whole space)
    right = {1: True, 2: False, 3: True, 4: True, 5: False}
    ids, logits = [], []
    for i in range(1, 6):
        y = i % n
        pick = y if right[i] else (y + 2) % n
        ids.append(f"imagenet-val-{i}")
        logits.append([3.0 if j == pick else 0.0 for j in range(n)])
    for i in range(1, 6):
        ids.append(f"imagenet-val-k2-{i}")
        logits.append([1.0, 0.0])
    preds = write_predictions(ds, ids, logits, model="m", family="clip", out=tmp_path / "p.parquet")
    cfgs = score(ds, preds, tmp_path / "s.json", imagenet_x=ann)["datasets"][
        "classification"]["configs"]
    f = cfgs["imagenet-val"]["factors"]
    assert f["pose"] == {"n": 3, "accuracy": pytest.approx(2 / 3)}  # images 1, 2, 4
    assert f["texture"] == {"n": 1, "accuracy": 1.0}
    assert f["annotated"] == {"n": 4, "accuracy": 0.75}
    assert cfgs["imagenet-val"]["factor_annotations"]["file"] == "imagenet_x_val_top_factor.jsonl"
    assert "factors" not in cfgs["imagenet-val-k2"]


def test_classification_build_card_and_class_folder_source_files(tmp_path: Path) -> None:
    """The classification family's imagenet-val config (class-folder layout:
    source_file ``nXXXXXXXX/ILSVRC2012_val_*.JPEG``) joins ImageNet-X on the file's
    base name, and its card names the annotation file and the images per factor."""
    import re

    from tests.fixtures.classification_layouts import imagenet_layouts, raw_spec
    from vlmrobust.builders.classification.build import build
    from vlmrobust.builders.families import BuildOptions
    from vlmrobust.core.datadir import read_table
    from vlmrobust.evaluation.predictions.api import write_predictions
    from vlmrobust.evaluation.scoring.dataset import score

    imagenet_layouts(tmp_path / "src")
    raw = raw_spec()
    raw["variants"] = [v for v in raw["variants"] if v["name"] == "imagenet-val"]
    ds = tmp_path / "ds"
    build(raw, Path("classification.yaml"),
          BuildOptions(out=ds, source_root=tmp_path / "src", progress=False, device="cpu"))
    card = (ds / "README.md").read_text(encoding="utf-8")
    if packaged_annotations() is not None:
        assert "## ImageNet-X factors" in card and "`imagenet_x_val_top_factor.jsonl`" in card
        n_rows = len(read_table(ds, "imagenet-val", columns=["id"]))
        assert re.search(rf"\d+ of this build's {n_rows} imagenet-val images are annotated", card)
        assert "| pose |" in card and "| larger |" in card
    rows = read_table(ds, "imagenet-val", columns=["id", "label", "source_file"]).to_pylist()
    assert all("/" in r["source_file"] for r in rows)  # the class-folder path
    names = [r["source_file"].rpartition("/")[2] for r in rows]
    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text("\n".join(_line(n, 0, pose=1) for n in names[:4]) + "\n")
    space_n = 1000
    ids = [r["id"] for r in rows]
    logits = [[1.0 if j == (r["label"] if i % 2 == 0 else (r["label"] + 1) % space_n) else 0.0
               for j in range(space_n)] for i, r in enumerate(rows)]
    preds = write_predictions(ds, ids, logits, model="m", family="clip", out=tmp_path / "p.parquet",
                              configs=["imagenet-val"])
    cfg = score(ds, preds, tmp_path / "s.json", config="imagenet-val", imagenet_x=ann)[
        "datasets"]["classification"]["configs"]["imagenet-val"]
    assert cfg["factors"]["pose"] == {"n": 4, "accuracy": 0.5}  # rows 0, 2 right; 1, 3 wrong
