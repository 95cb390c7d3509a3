"""The classification family (issue 23): every variant builds from a hand-made
fixture in its published layout, a wrong layout is refused in one line naming
the expected one, ``load_dataset`` gives labels that index the stored label
space, and the build validates against predictions over it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.classification import index_rows, perfect_logits
from tests.fixtures.classification_layouts import (
    CAR_NAMES,
    FLOWER_NAMES,
    IMAGENET_D,
    all_layouts,
    raw_spec,
)
from tests.fixtures.score import write_meta
from vlmrobust.builders.classification.build import build, build_dataset, read_sources
from vlmrobust.builders.classification.spec import parse_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.datadir import read_manifest, read_table
from vlmrobust.core.errors import SourceError, SpecError, VlmrobustError
from vlmrobust.core.label_space import read_label_space

CLASSES_BY_WNID = {c.wnid: c.index for c in load_imagenet_classes()}
BASE = {"imagenet-val", "imagenet-v2", "imagenet-r", "imagenet-sketch", "imagenet-a", "objectnet",
        "flowers102", "stanford-cars", "caltech101", "imagenet-vid-robust", "imagenet-d-background",
        "imagenet-d-texture", "imagenet-d-material", "3dcc-near_focus-1", "3dcc-near_focus-2"}


def _selector(paths: Any) -> np.ndarray:
    """Logits that depend on each image's pixels only (for the builds compared)."""
    from PIL import Image

    rows = []
    for p in paths:
        with Image.open(p) as im:
            a = np.asarray(im.convert("RGB"), dtype=np.float64)
        rows.append(np.random.default_rng(int(a.sum()) % 2**32).normal(size=1000))
    return np.stack(rows)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return all_layouts(tmp_path_factory.mktemp("src"))


@pytest.fixture(scope="module")
def built(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real entry point, with the real selection model (EfficientNet-Lite0)."""
    out = tmp_path_factory.mktemp("out") / "classification"
    build(raw_spec(), Path("classification.yaml"),
          BuildOptions(out=out, source_root=root, progress=False, device="cpu"))
    return out


def _table(ds: Path, config: str) -> list[dict[str, Any]]:
    return read_table(ds, config, columns=["id", "label", "candidates", "valid_labels",
                                           "source_file"]).to_pylist()


def test_every_variant_is_a_config_over_its_label_space(built: Path) -> None:
    m = read_manifest(built)
    assert m["kind"] == "classification"
    configs = set(m["configs"])
    assert configs >= BASE
    assert {"imagenet-val-k2", "flowers102-k2", "stanford-cars-k2"} <= configs
    assert {f"imagenet-d-{s}-4opt" for s in ("background", "texture", "material")} <= configs
    sizes = {c: len(read_label_space(built, c)) for c in configs}
    assert sizes["imagenet-val"] == sizes["imagenet-v2"] == sizes["3dcc-near_focus-1"] == 1000
    assert sizes["imagenet-r"] == sizes["imagenet-a"] == 200
    assert sizes["objectnet"] == 3 and sizes["flowers102"] == 3 and sizes["caltech101"] == 2
    assert sizes["imagenet-vid-robust"] == 3 and sizes["imagenet-d-texture"] == len(IMAGENET_D)
    # the manifest names the V2 folder actually read
    assert m["imagenet_v2_release"] == "matched-frequency" and m["reference_config"] == "imagenet-val"
    assert m["source_folders"]["imagenet-v2"] == "imagenetv2-matched-frequency-format-val"


def test_load_dataset_labels_index_the_stored_label_space(built: Path, tmp_path: Path) -> None:
    from datasets import load_dataset

    flowers = load_dataset(str(built), "flowers102", split="test", cache_dir=str(tmp_path / "hf"))
    names = read_label_space(built, "flowers102").names
    truth = {f"jpg/image_{n:05d}.jpg": FLOWER_NAMES[str(c)] for n, c in
             zip(range(1, 6), [1, 2, 3, 1, 2], strict=True)}  # tstid 1..5 of the fixture
    assert {r["source_file"]: names[r["label"]] for r in flowers} == truth
    cars = read_label_space(built, "stanford-cars")
    assert cars.names == tuple(CAR_NAMES) and not cars.has_imagenet_ids
    got = {r["source_file"]: cars.names[r["label"]] for r in _table(built, "stanford-cars")}
    assert got["cars_test/00001.jpg"] == "Audi R8 Coupe 2012"
    sketch = read_label_space(built, "imagenet-sketch")
    for r in _table(built, "imagenet-sketch"):
        assert sketch.classes[r["label"]].wnid == r["source_file"].split("/")[0]
        assert sketch.classes[r["label"]].imagenet_ids == (r["label"],)
    caltech = read_label_space(built, "caltech101")
    assert caltech.names == ("centered face", "dollar bill")
    # no caltech.jsonl in the fixture: the seeded half, 16 of each class's 32
    per_class = [r["source_file"].split("/")[0] for r in _table(built, "caltech101")]
    assert sorted(per_class) == ["Faces_easy"] * 16 + ["dollar_bill"] * 16


def test_group_label_spaces_and_multi_labels(built: Path) -> None:
    on = read_label_space(built, "objectnet")
    assert on.names == ("banana", "chair", "mug") and on.classes[1].imagenet_ids == (559, 765)
    assert on.group_rule == "max" and on.has_imagenet_ids
    vid = read_label_space(built, "imagenet-vid-robust")
    assert vid.names == ("airplane", "dog", "car") and vid.classes[1].imagenet_ids == (207, 208)
    rows = read_table(built, "imagenet-vid-robust", columns=["source_file", "label", "valid_labels",
                                                              "pmset"]).to_pylist()
    assert len(rows) == 9
    for r in rows:
        video = r["source_file"].split("/")[1]
        assert r["pmset"] == f"val/{video}/000000.JPEG"
        if video.endswith("1"):
            assert r["label"] == 1 and r["valid_labels"] == [1, 0]
    d = read_label_space(built, "imagenet-d-material")
    assert d.names[0] == "backpack" and "binder closed" in d.names
    c3 = read_table(built, "3dcc-near_focus-2", columns=["corruption", "severity"]).to_pylist()
    assert c3 == [{"corruption": "near_focus", "severity": 2}] * 2


def test_the_dataset_index_keeps_valid_labels_and_perturbation_sets(built: Path) -> None:
    from vlmrobust.evaluation.validate.dataset_index import load_dataset_index

    index = load_dataset_index(built, ["imagenet-vid-robust", "flowers102"])
    rows = read_table(built, "imagenet-vid-robust", columns=["valid_labels", "pmset"]).to_pylist()
    valid = index.columns["valid_labels"]
    assert valid.dtype == object and valid.shape == (index.n_rows,)
    assert list(valid[:9]) == [tuple(r["valid_labels"]) for r in rows]
    assert list(index.columns["pmset"][:9]) == [r["pmset"] for r in rows]
    assert all(v == (lab,) for v, lab in zip(valid[9:], index.labels[9:], strict=True))


def test_imagenet_variant_layouts_are_refused_by_their_readers(root: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(root / "imagenet-r", src / "imagenet-r")
    (src / "imagenet-r" / "paintings").mkdir()
    with pytest.raises(SourceError, match="not a wnid like n01440764") as err:
        build(raw_spec(variants=["imagenet-r"]), Path("x.yaml"),
              BuildOptions(out=tmp_path / "out", source_root=src, progress=False))
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()
    shutil.copytree(root / "imagenetv2-matched-frequency-format-val",
                    src / "imagenetv2-threshold0.7-format-val")
    with pytest.raises(SourceError, match=r"threshold0\.7"):
        build(raw_spec(variants=["imagenet-v2"]), Path("x.yaml"),
              BuildOptions(out=tmp_path / "out", source_root=src, progress=False))


def test_k_configs_hold_the_label_and_no_other_valid_class(built: Path) -> None:
    for config in ("imagenet-val-k2", "flowers102-k2"):
        for r in _table(built, config):
            assert len(r["candidates"]) == 2 and r["label"] in r["candidates"]
            assert not set(r["candidates"]) & (set(r["valid_labels"]) - {r["label"]})
    full = {r["source_file"] for r in _table(built, "imagenet-val")}
    assert {r["source_file"] for r in _table(built, "imagenet-val-k2")} == full


def test_imagenet_d_options_are_the_selection_models_hardest_wrong_classes(built: Path) -> None:
    from PIL import Image

    from vlmrobust.models import load_adapter

    adapter: Any = load_adapter("classifier:efficientnet-lite0", device="cpu")
    space = read_label_space(built, "imagenet-d-texture")
    rows = read_table(built, "imagenet-d-texture-4opt",
                      columns=["image", "label", "candidates"]).to_pylist()
    import io

    for r in rows:
        im = Image.open(io.BytesIO(r["image"]["bytes"])).convert("RGB")
        logits = adapter.class_logits([im])[0]
        per_class = [max(logits[i] for i in c.imagenet_ids) for c in space.classes]
        wrong = sorted((c for c in range(len(space)) if c != r["label"]),
                       key=lambda c: (-per_class[c], c))[:3]
        assert sorted(r["candidates"]) == sorted([r["label"], *wrong])


def test_the_build_validates_against_predictions_over_the_label_space(built: Path,
                                                                       tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlmrobust.evaluation.validate.check import validate

    rows = index_rows(built)
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "logits": perfect_logits(rows)}), p)
    write_meta(p, built)
    report = validate(built, p)
    assert (report.aligned.predicted == report.index.answer).all()
    assert int(report.index.n_options.max()) == 1000


def test_two_builds_give_one_fingerprint(root: Path, tmp_path: Path) -> None:
    spec = parse_spec(raw_spec(variants=["flowers102", "imagenet-d", "caltech101"]), Path("x"))
    fps = []
    for name in ("a", "b"):
        sources, _ = read_sources(spec, root)
        fps.append(build_dataset(spec, sources, BuildOptions(tmp_path / name, progress=False),
                                 selector=_selector)["fingerprint"])
    assert fps[0] == fps[1]
    other = parse_spec({**raw_spec(variants=["flowers102", "imagenet-d", "caltech101"]), "seed": 1},
                       Path("x"))
    sources, _ = read_sources(other, root)
    assert build_dataset(other, sources, BuildOptions(tmp_path / "c", progress=False),
                         selector=_selector)["fingerprint"] != fps[0]


def _break(root: Path, what: str) -> str:
    """Damage one layout; return the variant it belongs to."""
    if what == "setid":
        (root / "flowers102" / "setid.mat").unlink()
        return "flowers102"
    if what == "cars-meta":
        (root / "stanford_cars" / "devkit" / "cars_meta.mat").unlink()
        return "stanford-cars"
    if what == "caltech-small":
        for p in sorted((root / "caltech101/101_ObjectCategories/dollar_bill").iterdir())[1:]:
            p.unlink()
        return "caltech101"
    if what == "vid-frame":
        next((root / "imagenet-vid-robust" / "val").rglob("000001.JPEG")).unlink()
        return "imagenet-vid-robust"
    if what == "imagenet-d-map":
        (root / "ImageNet-D" / "imgnet_d2imgnet_id.txt").unlink()
        return "imagenet-d"
    if what == "imagenet-d-class":
        (root / "ImageNet-D" / "texture" / "toaster").mkdir()
        return "imagenet-d"
    (root / "3dcc" / "snow").mkdir()
    return "3dcc"


@pytest.mark.parametrize("what, expected", [
    ("setid", "flowers102/{jpg/image_NNNNN.jpg, imagelabels.mat, setid.mat}"),
    ("cars-meta", "stanford_cars/{devkit/cars_meta.mat"),
    ("caltech-small", "caltech101/101_ObjectCategories/<class>/image_NNNN.jpg"),
    ("vid-frame", "imagenet-vid-robust/{metadata/pmsets.json"),
    ("imagenet-d-map", "ImageNet-D/{background,texture,material}/<class_dir>/<image>"),
    ("imagenet-d-class", "ImageNet-D/{background,texture,material}/<class_dir>/<image>"),
    ("3dcc", "3dcc/<corruption>/<severity 1..5>/<wnid>/<image>"),
])
def test_a_wrong_layout_is_refused_in_one_line_naming_the_expected_one(
        root: Path, tmp_path: Path, what: str, expected: str) -> None:
    copy = tmp_path / "src"
    shutil.copytree(root, copy)
    variant = _break(copy, what)
    out = tmp_path / "out"
    with pytest.raises(SourceError) as err:
        build(raw_spec(variants=[variant]), Path("x.yaml"),
              BuildOptions(out=out, source_root=copy, progress=False))
    msg = str(err.value)
    assert "\n" not in msg and "expected layout: " + expected in msg
    assert not out.exists()


def test_absent_variants_are_skipped_and_named_or_refused(root: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "flowers102").mkdir(parents=True)
    shutil.copytree(root / "flowers102", empty / "flowers102", dirs_exist_ok=True)
    m = build(raw_spec(variants=["flowers102", "stanford-cars"]), Path("x.yaml"),
              BuildOptions(out=tmp_path / "out", source_root=empty, progress=False))
    assert m["absent_variants"] == ["stanford-cars"] and "stanford-cars" not in m["configs"]
    with pytest.raises(VlmrobustError, match="stanford_cars"):
        build(raw_spec(variants=["stanford-cars"], skip_missing=False), Path("x.yaml"),
              BuildOptions(out=tmp_path / "out2", source_root=empty, progress=False))
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["configs"]["flowers102"] == 5


def test_imagenet_val_is_every_image_by_its_original_label_and_the_clean_subset_a_config(
        root: Path, tmp_path: Path) -> None:
    """Issue 33 item 8: seeds 001/002 score all 50,000 val images by their original
    labels: ``imagenet-val`` keeps every image even with Kisel et al.'s
    clean_validation.csv beside them; the clean subset is the ``imagenet-val-clean``
    config (only listed images, every proposed label valid, the image's own label
    first when it is among them)."""
    src = tmp_path / "src"
    shutil.copytree(root / "imagenet-val", src / "imagenet-val")
    files = sorted(p.name for p in (src / "imagenet-val").rglob("*.JPEG"))
    own = {p.name: CLASSES_BY_WNID[p.parent.name] for p in (src / "imagenet-val").rglob("*.JPEG")}
    lines = ["id,original_label,proposed_labels,validation",
             f'{files[0]},{own[files[0]]},"{own[files[0]]}, 5",*',
             f"{files[1]},{own[files[1]]},7,+",
             f"{files[2]},{own[files[2]]},{own[files[2]]},*"]
    (src / "clean_validation.csv").write_text("\n".join(lines) + "\n")
    m = build(raw_spec(variants=["imagenet-val", "imagenet-val-clean"], label_set_sizes=[5]),
              Path("x.yaml"), BuildOptions(out=tmp_path / "out", source_root=src, progress=False))
    assert m["configs"]["imagenet-val"] == len(files) == 6
    assert m["notes"]["imagenet-val"]["labels"] == "original ILSVRC-2012 labels, every image"
    full = {r["source_file"].split("/")[1]: r for r in _table(tmp_path / "out", "imagenet-val")}
    assert {f: (r["label"], r["valid_labels"]) for f, r in full.items()} == {
        f: (own[f], [own[f]]) for f in files}
    assert m["configs"]["imagenet-val-clean"] == 3
    assert m["notes"]["imagenet-val-clean"]["clean_labels"] == "clean_validation.csv"
    rows = {r["source_file"].split("/")[1]: r for r in _table(tmp_path / "out", "imagenet-val-clean")}
    assert rows[files[0]]["valid_labels"] == [own[files[0]], 5]
    assert rows[files[1]]["label"] == 7 and rows[files[1]]["valid_labels"] == [7]
    for r in _table(tmp_path / "out", "imagenet-val-clean-k5"):
        assert not set(r["candidates"]) & (set(r["valid_labels"]) - {r["label"]})
    assert m["reference_config"] == "imagenet-val"
    card = (tmp_path / "out" / "README.md").read_text()
    assert "## Deviations from the seed" in card and "all 50,000 images" in card
    with pytest.raises(SpecError, match="imagenet-val-clean needs clean_labels"):
        parse_spec(raw_spec(variants=["imagenet-val-clean"], clean_labels=None), Path("x.yaml"))


def test_the_card_passes_the_hub_header_check_and_names_what_numbers_are_over(built: Path) -> None:
    from vlmrobust.builders.card_meta import validate_card

    text = (built / "README.md").read_text()
    data = validate_card(text)
    assert data["task_categories"] == ["image-classification"]
    assert "whole label space" in text and "K candidates" in text
    assert "imagenet-d-<split>-4opt" in text and "classifier:efficientnet-lite0" in text
    assert "**pm-k accuracy**" in text and "accuracy_valid_labels" in text


def test_label_set_configs_hold_one_seeded_subset_for_every_k(root: Path, tmp_path: Path) -> None:
    raw = raw_spec(variants=["imagenet-val", "flowers102"], label_set_sizes=[2, 5],
                   label_set_images=2, label_set_variants=["imagenet-val"])
    m = build(raw, Path("x.yaml"), BuildOptions(out=tmp_path / "out", source_root=root,
                                                progress=False))
    assert m["configs"]["imagenet-val"] == 6 and m["label_set_images"] == 2  # every image
    assert m["configs"]["imagenet-val-k2"] == m["configs"]["imagenet-val-k5"] == 2
    assert "flowers102-k2" not in m["configs"]  # not listed in label_set_variants
    files = [{r["source_file"] for r in _table(tmp_path / "out", f"imagenet-val-k{k}")} for k in (2, 5)]
    assert files[0] == files[1] < {r["source_file"] for r in _table(tmp_path / "out", "imagenet-val")}
    with pytest.raises(VlmrobustError, match="label_set_images must be an integer >= 1"):
        build({**raw, "label_set_images": 0}, Path("x.yaml"),
              BuildOptions(out=tmp_path / "o2", source_root=root, progress=False))


@pytest.mark.parametrize("mat", ["flowers102/imagelabels.mat", "flowers102/setid.mat"])
@pytest.mark.parametrize("damage", [b"", b"MATLAB 5.0 MAT-file, truncated", b"\x00" * 40])
def test_a_damaged_mat_file_is_refused_in_one_line(root: Path, tmp_path: Path, mat: str,
                                                   damage: bytes) -> None:
    """scipy raises MatReadError / IndexError on a truncated or foreign .mat: one line, not a
    traceback, and nothing written (the audit found a 34-line traceback)."""
    copy = tmp_path / "src"
    shutil.copytree(root, copy)
    (copy / mat).write_bytes(damage)
    out = tmp_path / "out"
    with pytest.raises(SourceError) as err:
        build(raw_spec(variants=["flowers102"]), Path("x.yaml"),
              BuildOptions(out=out, source_root=copy, progress=False))
    msg = str(err.value)
    assert "\n" not in msg and "not a readable .mat file" in msg and mat.split("/")[1] in msg
    assert not out.exists()
