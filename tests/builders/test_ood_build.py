"""Done-when (#24.1): every OOD layout (MOS iNaturalist / SUN / Places / Textures,
ImageNet-O, NINCO) builds beside ImageNet val from a hand-made fixture in its
published layout, the result validates and scores, and a wrong layout is
refused in one line with nothing written."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions, get_builder
from vlmrobust.core.label_space import read_label_space

SPEC = resolve_spec("ood")
# ILSVRC-2012's own val labels; image 1 has no ReaL label (dropped with clean labels)
VAL = {"ILSVRC2012_val_00000001.JPEG": 65, "ILSVRC2012_val_00000002.JPEG": 970,
       "ILSVRC2012_val_00000003.JPEG": 230, "ILSVRC2012_val_00000004.JPEG": 809}


def _jpg(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = np.random.default_rng(seed).integers(0, 255, size=(12, 16, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=90)
    path.write_bytes(buf.getvalue())


def write_sources(root: Path) -> Path:
    """ImageNet val (flat) + each OOD set in its published layout, 2-3 images each."""
    files = [f"imagenet-val/{f}" for f in VAL]
    files += [f"iNaturalist/images/{h}.jpg" for h in ("0a1b", "ff02")]
    files += [f"SUN/images/sun_{c}.jpg" for c in ("aaa", "bbb")]
    files += [f"Places/images/{c}.jpg" for c in ("b_badlands_0001", "c_canyon_0002")]
    files += ["dtd/images/banded/banded_0002.jpg", "dtd/images/zigzagged/zigzagged_0133.jpg"]
    files += ["imagenet-o/n01443537/ILSVRC_o_01.jpg", "imagenet-o/n01910747/ILSVRC_o_02.jpg"]
    files += [f"NINCO/NINCO_OOD_classes/{c}/{c}_{i}.jpg"
              for c, n in (("amphiuma_means", 2), ("caracal", 3)) for i in range(n)]
    for i, f in enumerate(files):
        _jpg(root / f, i)
    (root / "imagenet-o" / "README.txt").write_text("ImageNet-O\n")
    return root


def _build(root: Path, out: Path, **kw: Any) -> dict[str, Any]:
    raw = {**load_spec_yaml(SPEC), "clean_labels": "real"}
    return get_builder("ood")(raw, SPEC, BuildOptions(out=out, source_root=root, progress=False, **kw))


def test_every_layout_builds_loads_and_scores(tmp_path: Path) -> None:
    import datasets

    src = write_sources(tmp_path / "src")
    out = tmp_path / "ds"
    m = _build(src, out)
    assert m["kind"] == "ood" and m["absent_sets"] == []
    assert m["configs"] == {"imagenet-val": 3, "inaturalist": 2, "sun": 2, "places": 2,
                            "textures": 2, "imagenet-o": 2, "ninco": 5}
    assert m["ood_classes"] == {"textures": ["banded", "zigzagged"],
                                "ninco": ["amphiuma_means", "caracal"]}
    space = read_label_space(out, "ninco")
    assert len(space) == 1000 and space.classes[970].wnid == "n09193705"
    val = datasets.load_dataset(str(out), "imagenet-val", split="test")
    assert val["label"] == [970, 230, 809] and val["is_ood"] == [False] * 3
    assert val["id"][0] == "imagenet-val/ILSVRC2012_val_00000002.JPEG"
    assert val["ood_source"] == [None] * 3
    ninco = datasets.load_dataset(str(out), "ninco", split="test")
    assert ninco["label"] == [-1] * 5 and ninco["ood_class"][:3] == ["amphiuma_means"] * 2 + ["caracal"]
    assert ninco["id"][0] == "ninco/amphiuma_means/amphiuma_means_0.jpg"
    tex = datasets.load_dataset(str(out), "textures", split="test")
    assert tex["source_file"] == ["banded/banded_0002.jpg", "zigzagged/zigzagged_0133.jpg"]
    assert tex["ood_class"] == ["banded", "zigzagged"]  # DTD's texture category
    # ImageNet-O's wnid folder is the class a ResNet-50 was fooled into: no ood_class
    ino = datasets.load_dataset(str(out), "imagenet-o", split="test")
    assert ino["source_file"][0].startswith("n01443537/") and ino["ood_class"] == [None, None]
    import pyarrow.parquet as pq

    t = pq.read_table(next((out / "data" / "sun").glob("*.parquet")))
    assert t.column("image").to_pylist()[0]["bytes"] == (src / "SUN/images/sun_aaa.jpg").read_bytes()
    card = (out / "README.md").read_text()
    assert "ID set is shared" in card and "amphiuma_means" in card and "FPR@95" in card
    from vlmrobust.builders.card_meta import validate_card

    validate_card(card)
    # the build scores: random logits over the 1000 classes
    from tests.fixtures.ood import dataset_ids, write_logits
    from tests.fixtures.score import write_meta
    from vlmrobust.evaluation.scoring.dataset import score

    ids = [r[1] for r in dataset_ids(out)]
    preds = write_logits(tmp_path / "p.parquet", ids, np.random.default_rng(0).normal(size=(len(ids), 1000)))
    write_meta(preds, out)
    block = score(out, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert sorted(block["sets"]) == ["imagenet-o", "inaturalist", "ninco", "places", "sun", "textures"]
    assert block["sets"]["ninco"]["n_classes"] == 2 and block["sets"]["sun"]["class_mean_auroc"] is None
    assert block["sets"]["textures"]["n_classes"] == 2
    assert block["sets"]["imagenet-o"]["class_mean_auroc"] is None


def test_rebuild_is_identical_and_absent_sets_are_named(tmp_path: Path) -> None:
    src = write_sources(tmp_path / "src")
    a = _build(src, tmp_path / "a")
    b = _build(src, tmp_path / "b")
    assert a["fingerprint"] == b["fingerprint"]
    import shutil

    shutil.rmtree(src / "Places")
    c = _build(src, tmp_path / "c")
    assert c["absent_sets"] == ["places"] and "places" not in c["configs"]
    assert "Not built: `places`" in (tmp_path / "c" / "README.md").read_text()


def _break(root: Path, how: str) -> str:
    """Damage one layout; the message expected."""
    if how == "flat-images-without-images-folder":
        for p in (root / "iNaturalist" / "images").iterdir():
            p.rename(root / "iNaturalist" / p.name)
        (root / "iNaturalist" / "images").rmdir()
        return "iNaturalist: no images/ folder; expected iNaturalist/images/*.jpg"
    if how == "textures-without-class-folders":
        _jpg(root / "dtd" / "images" / "stray.jpg", 99)
        return "stray.jpg: image outside a class folder in textures; expected dtd/images/<texture>/*.jpg"
    if how == "imagenet-o-non-wnid":
        _jpg(root / "imagenet-o" / "goldfish" / "x.jpg", 98)
        return "goldfish: unexpected folder in imagenet-o (not a wnid like n01443537)"
    if how == "ninco-empty-class":
        (root / "NINCO" / "NINCO_OOD_classes" / "empty_class").mkdir()
        return "empty_class: class folder without images; expected NINCO/NINCO_OOD_classes/<class>/*.jpg"
    if how == "sun-subfolder":
        _jpg(root / "SUN" / "images" / "extra" / "y.jpg", 97)
        return "extra: unexpected folder in sun; expected SUN/images/*.jpg"
    if how == "no-ood-set":
        import shutil

        for d in ("iNaturalist", "SUN", "Places", "dtd", "imagenet-o", "NINCO"):
            shutil.rmtree(root / d)
        return "none of the spec's OOD sets is there; expected iNaturalist/images/*.jpg"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["flat-images-without-images-folder", "textures-without-class-folders",
                                 "imagenet-o-non-wnid", "ninco-empty-class", "sun-subfolder",
                                 "no-ood-set"])
def test_a_wrong_layout_is_refused_in_one_line(tmp_path: Path, how: str) -> None:
    src = write_sources(tmp_path / "src")
    want = _break(src, how)
    out = tmp_path / "ds"
    proc = subprocess.run([sys.executable, "-m", "vlmrobust.cli.main", "build", "ood",
                           "--source-root", str(src), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and want in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_sample_builds_with_three_ood_classes(tmp_path: Path) -> None:
    m = get_builder("ood")(load_spec_yaml(SPEC), SPEC,
                           BuildOptions(out=tmp_path / "s", sample=True, progress=False))
    assert m["sample"] is True and m["configs"] == {"sample-photo": 101, "sample-ood": 35}
    assert m["ood_classes"] == {"sample-ood": ["astronomy", "biomedical", "textures"]}
    rows = json.loads(json.dumps(m["image_counts"]))
    assert rows["sample-ood"] == 35
