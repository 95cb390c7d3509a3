"""imagenet-mcq from on-disk source folders (vlmrobust.builders.sources layouts): ReaL
cleaning, ObjectNet multi-labels, and clear errors that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.imagenet_mcq import FakeEmbedder
from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.build import build, build_dataset, source_inputs
from vlmrobust.builders.imagenet_mcq.seeding import key_hash
from vlmrobust.builders.imagenet_mcq.spec import parse_spec
from vlmrobust.core.classes import label_space, load_imagenet_classes, real_labels, val_labels
from vlmrobust.core.datadir import read_table
from vlmrobust.core.errors import SourceError

CLASSES = load_imagenet_classes()
VAL_FILES = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, 31)]
# ObjectNet name -> IN-1k classes (by index): clocks and chairs map to two classes
OBJECTNET = {"Clock": (409, 892), "Chair": (559, 765), "Banana": (954,), "Mug": (504,),
             "Bench": (703,), "Lemon": (951,)}


def _img(path: Path, seed: int, fmt: str = "JPEG") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = (np.random.default_rng(seed).random((16, 16, 3)) * 255).astype(np.uint8)
    Image.fromarray(arr).save(path, format=fmt)


def make_sources(root: Path, objectnet_mapping: bool = True) -> Path:
    labels = val_labels()
    for i, name in enumerate(VAL_FILES):
        _img(root / "imagenet-val" / CLASSES[labels[name]].wnid / name, i)
    for j, c in enumerate(label_space("imagenet-r")[:3]):
        for i in range(4):
            _img(root / "imagenet-r" / CLASSES[c].wnid / f"art_{i}.jpg", 100 + 10 * j + i)
    on = root / "objectnet"
    for j, name in enumerate(OBJECTNET):
        folder = name.lower()
        for i in range(3):
            _img(on / "images" / folder / f"{i:04d}.png", 200 + 10 * j + i, "PNG")
    if objectnet_mapping:
        (on / "mappings").mkdir(parents=True)
        (on / "mappings" / "objectnet_to_imagenet_1k.json").write_text(json.dumps(
            {name: "; ".join(CLASSES[c].label for c in ids) for name, ids in OBJECTNET.items()}))
        (on / "mappings" / "folder_to_objectnet_label.json").write_text(json.dumps(
            {name.lower(): name for name in OBJECTNET}))
    return root


def raw_spec(strategies: list[str]) -> dict:
    raw = load_spec_yaml(resolve_spec("imagenet-mcq"))
    keep = {"imagenet-val", "imagenet-r", "objectnet"}
    # FakeEmbedder stands in for a classifier: its weight rows are the prototypes
    return {**raw, "strategies": strategies, "questions_per_variant": 20,
            "variants": [v for v in raw["variants"] if v["name"] in keep],
            "visual": raw["sample"]["visual"]}


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sources(tmp_path_factory.mktemp("src"))


def test_real_labels_clean_val_and_objectnet_multilabels(sources: Path, tmp_path: Path) -> None:
    spec = parse_spec(raw_spec(["random", "wordnet", "visual"]), Path("s.yaml"))
    inputs = source_inputs(spec, sources)
    by = {v.name: v for v in inputs}
    real = real_labels()
    no_label = [f for f in VAL_FILES if not real[f]]
    assert no_label and by["imagenet-val"].dropped == len(no_label)
    assert len(by["imagenet-val"].items) == len(VAL_FILES) - len(no_label)
    assert by["objectnet"].space == tuple(sorted(c for ids in OBJECTNET.values() for c in ids))
    manifest = build_dataset(spec, inputs, BuildOptions(tmp_path / "ds", progress=False),
                             reference="imagenet-val", embedder=FakeEmbedder())
    assert manifest["configs"]["imagenet-val-random"] == 20
    assert manifest["dropped"]["imagenet-val"] == len(no_label)
    relabelled = next(it for it in by["imagenet-val"].items if "00000008" in it.key)
    assert relabelled.label == 700 and relabelled.valid == {700}  # filed under 415
    items = {(v.name, key_hash(it.key)): it for v in inputs for it in v.items}
    for config in manifest["configs"]:
        variant = config.rsplit("-", 1)[0]
        space = set(by[variant].space)
        for r in read_table(tmp_path / "ds", config).to_pylist():
            it = items[(variant, r["id"].rsplit("-", 1)[1])]
            assert r["label"] == it.label
            assert set(r["option_class_ids"]) <= space
            assert len(set(r["option_class_ids"])) == 5
            ok = [c in it.valid for c in r["option_class_ids"]]
            assert ok.count(True) == 1 and ok[r["answer"]]
    group = {c: name for name, ids in OBJECTNET.items() for c in ids}
    for strategy in ("random", "wordnet", "visual"):
        for r in read_table(tmp_path / "ds", f"objectnet-{strategy}").to_pylist():
            truth = OBJECTNET[group[r["label"]]]
            assert [c in truth for c in r["option_class_ids"]].count(True) == 1
            # one option per ObjectNet class: never "analog clock" and "wall clock" together
            assert len({group[c] for c in r["option_class_ids"]}) == 5


def test_build_entry_point_with_source_root(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    manifest = build(raw_spec(["random"]), Path("s.yaml"),
                     BuildOptions(out=out, source_root=sources, progress=False))
    assert manifest["reference_variant"] == "imagenet-val"
    assert manifest["sample"] is False
    assert set(manifest["configs"]) == {"imagenet-val-random", "imagenet-r-random",
                                        "objectnet-random"}
    assert manifest["configs"]["imagenet-r-random"] == 12
    assert "ImageNet terms of access" in (out / "README.md").read_text()


@pytest.mark.parametrize("breakage, needle", [
    ("missing-variant", "imagenet-r"),
    ("objectnet-no-mapping", "mappings"),
    ("undecodable", "ILSVRC2012_val_00000004.JPEG"),
])
def test_bad_sources_name_the_file_and_write_nothing(tmp_path: Path, breakage: str,
                                                     needle: str) -> None:
    root = make_sources(tmp_path / "src", objectnet_mapping=breakage != "objectnet-no-mapping")
    if breakage == "missing-variant":
        import shutil

        shutil.rmtree(root / "imagenet-r")
    if breakage == "undecodable":
        bad = next((root / "imagenet-val").rglob("ILSVRC2012_val_00000004.JPEG"))
        bad.write_bytes(b"\xff\xd8\xff\xe0 truncated")
    out = tmp_path / "out"
    with pytest.raises(SourceError) as err:
        build(raw_spec(["random"]), Path("s.yaml"),
              BuildOptions(out=out, source_root=root, progress=False))
    msg = str(err.value)
    assert needle in msg
    assert "fix" in msg or "replace" in msg
    assert "\n" not in msg
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
