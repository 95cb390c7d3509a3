"""Wrong ImageNet val / Sketch / A / ObjectNet layouts are refused by the
classification build in one line naming the damaged file or folder and the
layout expected, and nothing is written (issue 23: every variant's wrong layout;
the other variants' damages are in test_classification_build.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.classification_layouts import CLASSES, imagenet_layouts, img, raw_spec
from vlmrobust.builders.classification.build import build
from vlmrobust.builders.classification.layouts_imagenet import IMAGENET_LAYOUTS
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.classes import label_space
from vlmrobust.core.errors import SourceError

NOT_IN_A = next(i for i in range(1000) if i not in set(label_space("imagenet-a")))
ON = Path("objectnet")
ON_MAP = ON / "mappings" / "objectnet_to_imagenet_1k.json"
ON_FOLDERS = ON / "mappings" / "folder_to_objectnet_label.json"


def _flat_val(root: Path) -> Path:
    shutil.rmtree(root / "imagenet-val")
    return img(root / "imagenet-val" / "photo_1.JPEG", 1)


def _empty(root: Path, folder: str) -> Path:
    shutil.rmtree(root / folder)
    (root / folder).mkdir()
    return root / folder


def _flat_sketch(root: Path) -> Path:
    shutil.rmtree(root / "imagenet-sketch")
    img(root / "imagenet-sketch" / "sketch" / "sketch_0.JPEG", 1)
    return root / "imagenet-sketch" / "sketch"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _remove(path: Path) -> Path:
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


# (variant, damage: source root -> the file or folder the refusal must name)
DAMAGES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "val-stray-folder": ("imagenet-val", lambda r: _mkdir(r / "imagenet-val" / "train")),
    "val-unknown-wnid": ("imagenet-val", lambda r: _mkdir(r / "imagenet-val" / "n99999999")),
    "val-flat-unlisted": ("imagenet-val", _flat_val),
    "val-empty": ("imagenet-val", lambda r: _empty(r, "imagenet-val")),
    "val-kisel-header": ("imagenet-val-clean",
                         lambda r: _write(r / "clean_validation.csv", "a,b\n1,2\n")),
    "sketch-unknown-wnid": ("imagenet-sketch",
                            lambda r: _mkdir(r / "imagenet-sketch" / "sketch" / "n99999999")),
    "sketch-no-class-folders": ("imagenet-sketch", _flat_sketch),
    "a-class-outside-its-200": ("imagenet-a",
                                lambda r: img(r / "imagenet-a" / CLASSES[NOT_IN_A].wnid / "a.jpg", 3).parent),
    "a-stray-folder": ("imagenet-a", lambda r: _mkdir(r / "imagenet-a" / "README")),
    "on-no-mappings": ("objectnet", lambda r: _remove(r / ON / "mappings")),
    "on-no-images": ("objectnet", lambda r: _remove(r / ON / "images")),
    "on-no-folder-map": ("objectnet", lambda r: _remove(r / ON_FOLDERS)),
    "on-unknown-folder": ("objectnet", lambda r: img(r / ON / "images" / "toaster" / "0.png", 2, "PNG").parent),
    "on-truncated-json": ("objectnet", lambda r: _write(r / ON_MAP, "{")),
    "on-unknown-imagenet-label": ("objectnet", lambda r: _write(r / ON_MAP, json.dumps(
        {"Chair": "no such class", "Banana": "banana", "Mug": "coffee mug"}))),
    "on-folder-map-not-an-object": ("objectnet", lambda r: _write(r / ON_FOLDERS, "[1, 2]")),
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = tmp_path_factory.mktemp("src")
    imagenet_layouts(r)
    return r


@pytest.mark.parametrize("variant", ["imagenet-val", "imagenet-sketch", "imagenet-a", "objectnet"])
def test_the_undamaged_layouts_build(root: Path, tmp_path: Path, variant: str) -> None:
    m = build(raw_spec(variants=[variant], label_set_sizes=[]), Path("x.yaml"),
              BuildOptions(out=tmp_path / "out", source_root=root, progress=False))
    assert m["configs"][variant] > 0


@pytest.mark.parametrize("what", sorted(DAMAGES))
def test_a_wrong_layout_is_refused_in_one_line_naming_the_place_and_the_layout(
        root: Path, tmp_path: Path, what: str) -> None:
    copy = tmp_path / "src"
    shutil.copytree(root, copy)
    variant, damage = DAMAGES[what]
    place = damage(copy)
    out = tmp_path / "out"
    with pytest.raises(SourceError) as err:
        build(raw_spec(variants=[variant], label_set_sizes=[]), Path("x.yaml"),
              BuildOptions(out=out, source_root=copy, progress=False))
    msg = str(err.value)
    assert "\n" not in msg and "Traceback" not in msg
    assert msg.startswith(str(place)), msg  # the damaged file or folder comes first
    layout = IMAGENET_LAYOUTS[variant.removesuffix("-clean")]  # the clean subset: val's layout
    assert "fix: " in msg and msg.endswith(f"expected layout: {layout} "
                                           "(builders/classification/)")
    assert not out.exists() and not list(tmp_path.glob("out*"))
