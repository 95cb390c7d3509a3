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
  a class and is skipped. **Split rule** (spec ``caltech_split``): seed 002
  counts "4,331 test images from ... 101 classes" (§2.2) and Table 7 gives
  Caltech101 "4.3K" training and "4.3K" validation images: a per-class half
  split, released by the seed's authors as ``caltech.jsonl`` (one JSON object
  per image: ``image`` path ending ``<class>/<file>``, ``split`` train|test).
  ``auto`` (default) takes that list's test images when the file is in the
  ``caltech101/`` folder or the source root (4,331 images), else ``half``;
  ``seed-list`` requires the file; ``half`` is, per class, floor(n/2) images
  drawn by a permutation seeded by (spec seed, class folder) (4,310 on the full
  release: the seed's list gives its 57 odd-sized classes the extra image 21
  times, a count no rule reproduces); ``first30`` is the 30-per-class training
  protocol's complement (all but the first 30 by name; 5,647 images). Class names: the
  folder name with ``_`` as a space, and the five plural or face folders
  renamed as CLIP names them (Faces "off-center face", Faces_easy "centered
  face", Leopards "leopard", Motorbikes "motorbike", airplanes "airplane").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.builders.classification.sources import (
    MAX_META_BYTES,
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
CALTECH_LAYOUT = ("caltech101/101_ObjectCategories/<class>/image_NNNN.jpg (+ caltech.jsonl, the "
                  "seed's split list, in caltech101/)")
CALTECH_TRAIN_PER_CLASS = 30
CALTECH_BACKGROUND = "BACKGROUND_Google"
CALTECH_SPLIT_FILE = "caltech.jsonl"
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


def _seed_list(d: Path, root: Path, classes: set[str]) -> tuple[Path, set[str]] | None:
    """The seed authors' split file's test keys (``<class>/<file>``), when the
    file is in the caltech101/ folder or the source root."""
    import json

    from vlmrobust.core.files.bounded import read_bytes_bounded

    path = next((p for p in (d.parent / CALTECH_SPLIT_FILE, root / CALTECH_SPLIT_FILE)
                 if p.is_file()), None)
    if path is None:
        return None
    test: set[str] = set()
    text = read_bytes_bounded(path, MAX_META_BYTES, path.name).decode("utf-8", "replace")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            parts = str(rec["image"]).replace("\\", "/").split("/")
            split = rec["split"]
        except (ValueError, KeyError, TypeError):
            raise layout_error(path.parent, f"{path.name} line {lineno} is not "
                               '{"image": ".../<class>/<file>", "split": "train"|"test"}',
                               CALTECH_LAYOUT) from None
        if split not in ("train", "test") or len(parts) < 2:
            raise layout_error(path.parent, f"{path.name} line {lineno}: split must be train or "
                               "test and image end in <class>/<file>", CALTECH_LAYOUT)
        if parts[-2] not in classes:
            raise layout_error(path.parent, f"{path.name} line {lineno}: class {parts[-2]!r} has "
                               f"no folder in {d.name}/", CALTECH_LAYOUT)
        if split == "test":
            test.add(f"{parts[-2]}/{parts[-1]}")
    return path, test


def half_split(images: Sequence[Path], seed: int, folder: str) -> list[Path]:
    """Per class, floor(n/2) test images drawn by a permutation seeded by
    (seed, class folder), in file-name order.

    >>> ps = [Path(f"image_{i:04d}.jpg") for i in range(1, 6)]
    >>> len(half_split(ps, 0, "ant")), half_split(ps, 0, "ant") == half_split(ps, 0, "ant")
    (2, True)
    """
    digest = hashlib.sha256(f"caltech101-half:{seed}:{folder}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    chosen = set(rng.permutation(len(images))[:len(images) // 2].tolist())
    return [p for i, p in enumerate(images) if i in chosen]


def read_caltech101(root: Path, split: str = "auto", seed: int = 0,
                    train_per_class: int = CALTECH_TRAIN_PER_CLASS) -> VariantSource:
    d = root / "caltech101" / "101_ObjectCategories"
    d = d if d.is_dir() else find_dir(root, ("101_ObjectCategories",), CALTECH_LAYOUT)
    classes = [p for p in subdirs(d) if p.name != CALTECH_BACKGROUND]
    if len(classes) < 2:
        raise layout_error(d, "fewer than two class folders", CALTECH_LAYOUT)
    space = named_space("caltech101", [caltech_name(p.name) for p in classes])
    listed = None if split in ("half", "first30") else _seed_list(d, root, {p.name for p in classes})
    if split == "seed-list" and listed is None:
        raise layout_error(d.parent, f"no {CALTECH_SPLIT_FILE} (seed 002's split list) here or in "
                           "the source root; add it, or set caltech_split: half", CALTECH_LAYOUT)
    rule = split if split != "auto" else ("seed-list" if listed else "half")
    gone = sorted(k for k in listed[1] if not (d / k).is_file()) if listed is not None else []
    if rule == "seed-list" and gone and listed is not None:
        raise layout_error(d, f"{gone[0]} (a test image of {listed[0].name}) is missing",
                           CALTECH_LAYOUT)
    items: list[SourceItem] = []
    for label, sub in enumerate(classes):
        images = images_in(sub)
        if rule == "first30":
            if len(images) <= train_per_class:
                raise layout_error(sub, f"{len(images)} images, none left after the first "
                                   f"{train_per_class} (training) ones", CALTECH_LAYOUT)
            test = images[train_per_class:]
        elif listed is not None and rule == "seed-list":
            test = [p for p in images if f"{sub.name}/{p.name}" in listed[1]]
        else:
            test = half_split(images, seed, sub.name)
        if not test:
            raise layout_error(sub, f"{len(images)} images, no test image under caltech_split "
                               f"{rule}", CALTECH_LAYOUT)
        items.extend(SourceItem(f"{sub.name}/{p.name}", p, label, (label,)) for p in test)
    what = {"first30": f"per class, all but the first {train_per_class} images by name",
            "seed-list": f"the test images of {CALTECH_SPLIT_FILE} (seed 002's authors' list)",
            "half": "per class, floor(n/2) images drawn by a permutation seeded by "
                    "(seed, class folder)"}[rule]
    return VariantSource("caltech101", "caltech101", space, tuple(items), relative_folder(d, root),
                         {"split": what, "caltech_split": rule})
