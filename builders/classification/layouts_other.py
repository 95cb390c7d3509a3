"""Readers for the classification variants outside ImageNet (seed 002 §2.2),
each in its published on-disk layout (paths under ``--source-root``). Their
classes have no ImageNet ids: CLIP and VLMs read them, a 1000-way classifier
cannot.

- ``flowers102`` (Nilsback & Zisserman 2008; ``flowers102/`` or ``102flowers/``):
  ``jpg/image_00001.jpg`` ..., ``imagelabels.mat`` (``labels``: class 1..102 per
  image) and ``setid.mat`` (``trnid``, ``valid``, ``tstid``: 1-based image
  numbers). The config is the **test split** (``tstid``, 6,149 images). The
  release has no class names: they come from ``cat_to_name.json`` ({"1": name})
  in the folder when present, else from clip-benchmark's list (the names CLIP
  evaluates with).
- ``stanford-cars`` (Krause et al. 2013; ``stanford_cars/`` or ``stanford-cars/``,
  the layout torchvision reads): ``devkit/cars_meta.mat`` (``class_names``, 196),
  ``cars_test_annos_withlabels.mat`` (``annotations``: ``fname``, ``class``
  1..196) and ``cars_test/<fname>``. The config is the **test split** (8,041 images).
- ``caltech101`` (Fei-Fei et al. 2004; ``caltech101/`` or the folder itself):
  ``101_ObjectCategories/<class>/image_NNNN.jpg``; ``BACKGROUND_Google`` is not
  a class and is skipped. **Split rule**: per class, the images after the first
  30 in file-name order (the standard 30-per-class training protocol; a class
  with no image beyond them is refused). Class names: the
  folder name with ``_`` as a space, and the five plural or face folders
  renamed as CLIP names them (Faces "off-center face", Faces_easy "centered
  face", Leopards "leopard", Motorbikes "motorbike", airplanes "airplane").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.builders.classification.sources import (
    SourceItem,
    VariantSource,
    find_dir,
    images_in,
    layout_error,
    read_json,
    read_mat,
    relative_folder,
    subdirs,
)
from vlmrobust.builders.classification.spaces import named_space

FLOWERS_LAYOUT = "flowers102/{jpg/image_NNNNN.jpg, imagelabels.mat, setid.mat}"
CARS_LAYOUT = ("stanford_cars/{devkit/cars_meta.mat, cars_test_annos_withlabels.mat, "
               "cars_test/<fname>.jpg}")
CALTECH_LAYOUT = "caltech101/101_ObjectCategories/<class>/image_NNNN.jpg"
CALTECH_TRAIN_PER_CLASS = 30
CALTECH_BACKGROUND = "BACKGROUND_Google"
CALTECH_RENAMES = {"Faces": "off-center face", "Faces_easy": "centered face", "Leopards": "leopard",
                   "Motorbikes": "motorbike", "airplanes": "airplane"}


def _ints(value: Any) -> list[int]:
    return [int(x) for x in np.atleast_1d(np.asarray(value)).ravel().tolist()]


def _flower_names(d: Path, n: int) -> list[str]:
    own = d / "cat_to_name.json"
    if own.is_file():
        data = read_json(own, FLOWERS_LAYOUT)
        if not isinstance(data, dict) or sorted(data, key=int) != [str(i) for i in range(1, n + 1)]:
            raise layout_error(d, f"cat_to_name.json must name classes 1..{n}", FLOWERS_LAYOUT)
        return [str(data[str(i)]) for i in range(1, n + 1)]
    import json

    import clip_benchmark

    path = Path(clip_benchmark.__file__).parent / "datasets" / "en_classnames.json"
    names = json.loads(path.read_text(encoding="utf-8"))["flowers"]
    if len(names) != n:
        raise layout_error(d, f"{n} classes in imagelabels.mat, clip-benchmark names {len(names)}; "
                           "add cat_to_name.json", FLOWERS_LAYOUT)
    return [str(x) for x in names]


def read_flowers102(root: Path) -> VariantSource:
    d = find_dir(root, ("flowers102", "102flowers", "flowers-102"), FLOWERS_LAYOUT)
    labels = _ints(read_mat(d / "imagelabels.mat", FLOWERS_LAYOUT).get("labels"))
    split = read_mat(d / "setid.mat", FLOWERS_LAYOUT)
    if not labels or "tstid" not in split:
        raise layout_error(d, "imagelabels.mat has no 'labels' or setid.mat no 'tstid'", FLOWERS_LAYOUT)
    n_classes = max(labels)
    if min(labels) < 1:
        raise layout_error(d, "imagelabels.mat labels must be 1-based classes", FLOWERS_LAYOUT)
    space = named_space("flowers102", _flower_names(d, n_classes))
    items: list[SourceItem] = []
    for number in sorted(_ints(split["tstid"])):
        if not 1 <= number <= len(labels):
            raise layout_error(d, f"setid.mat names image {number}, imagelabels.mat has "
                               f"{len(labels)}", FLOWERS_LAYOUT)
        path = d / "jpg" / f"image_{number:05d}.jpg"
        if not path.is_file():
            raise layout_error(d / "jpg", f"{path.name} (test image {number}) is missing", FLOWERS_LAYOUT)
        label = labels[number - 1] - 1
        items.append(SourceItem(f"jpg/{path.name}", path, label, (label,)))
    return VariantSource("flowers102", "flowers102", space, tuple(items), relative_folder(d, root),
                         {"split": "test (setid.mat tstid)"})


def read_stanford_cars(root: Path) -> VariantSource:
    d = find_dir(root, ("stanford_cars", "stanford-cars", "StanfordCars"), CARS_LAYOUT)
    meta = read_mat(d / "devkit" / "cars_meta.mat", CARS_LAYOUT)
    names = [str(x).strip() for x in np.atleast_1d(meta.get("class_names", [])).tolist()]
    if not names:
        raise layout_error(d / "devkit", "cars_meta.mat has no class_names", CARS_LAYOUT)
    annos = read_mat(d / "cars_test_annos_withlabels.mat", CARS_LAYOUT).get("annotations")
    fields = getattr(getattr(annos, "dtype", None), "names", None) or ()
    if "fname" not in fields or "class" not in fields:
        raise layout_error(d, "cars_test_annos_withlabels.mat has no annotations(fname, class)",
                           CARS_LAYOUT)
    items: list[SourceItem] = []
    for a in np.atleast_1d(annos):
        fname, cls = str(a["fname"]), int(a["class"])
        if not 1 <= cls <= len(names):
            raise layout_error(d, f"{fname}: class {cls} outside 1..{len(names)}", CARS_LAYOUT)
        path = d / "cars_test" / fname
        if not path.is_file():
            raise layout_error(d / "cars_test", f"{fname} is missing", CARS_LAYOUT)
        items.append(SourceItem(f"cars_test/{fname}", path, cls - 1, (cls - 1,)))
    items.sort(key=lambda it: it.key)
    return VariantSource("stanford-cars", "stanford-cars", named_space("stanford-cars", names),
                         tuple(items), relative_folder(d, root), {"split": "test"})


def caltech_name(folder: str) -> str:
    """>>> caltech_name("Faces_easy"), caltech_name("dollar_bill")
    ('centered face', 'dollar bill')
    """
    return CALTECH_RENAMES.get(folder, folder.replace("_", " "))


def read_caltech101(root: Path, train_per_class: int = CALTECH_TRAIN_PER_CLASS) -> VariantSource:
    d = root / "caltech101" / "101_ObjectCategories"
    d = d if d.is_dir() else find_dir(root, ("101_ObjectCategories",), CALTECH_LAYOUT)
    classes = [p for p in subdirs(d) if p.name != CALTECH_BACKGROUND]
    if len(classes) < 2:
        raise layout_error(d, "fewer than two class folders", CALTECH_LAYOUT)
    space = named_space("caltech101", [caltech_name(p.name) for p in classes])
    items: list[SourceItem] = []
    for label, sub in enumerate(classes):
        images = images_in(sub)
        if len(images) <= train_per_class:
            raise layout_error(sub, f"{len(images)} images, none left after the first "
                               f"{train_per_class} (training) ones", CALTECH_LAYOUT)
        items.extend(SourceItem(f"{sub.name}/{p.name}", p, label, (label,))
                     for p in images[train_per_class:])
    return VariantSource("caltech101", "caltech101", space, tuple(items), relative_folder(d, root),
                         {"split": f"per class, all but the first {train_per_class} images by name"})
