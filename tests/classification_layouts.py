"""Hand-made fixtures of every classification variant's published on-disk
layout (tiny images written where each release puts them), for the builder tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vlmrobust.core.classes import label_space, load_imagenet_classes

CLASSES = load_imagenet_classes()
OBJECTNET = {"Chair": (559, 765), "Banana": (954,), "Mug": (504,)}
FLOWER_NAMES = {"1": "pink primrose", "2": "sweet pea", "3": "tiger lily"}
CAR_NAMES = ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Audi R8 Coupe 2012"]
VID_CLASSES = {"0": ["n02691156", "airplane"], "1": ["n02084071", "dog"], "2": ["n02958343", "car"]}
VID_GROUPS = {"n02691156": [404, 895], "n02084071": [207, 208], "n02958343": [436, 511, 817]}
IMAGENET_D = {"backpack": [414], "chair": [423, 559, 765], "banana": [954], "mug": [504],
              "binder_closed": [446]}


def img(path: Path, seed: int, fmt: str = "JPEG", size: int = 12) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = (np.random.default_rng(seed).random((size, size, 3)) * 255).astype(np.uint8)
    Image.fromarray(arr).save(path, format=fmt)
    return path


def imagenet_layouts(root: Path) -> None:
    for j, c in enumerate((1, 207, 281)):
        for i in range(2):
            img(root / "imagenet-val" / CLASSES[c].wnid / f"ILSVRC2012_val_{j * 10 + i + 1:08d}.JPEG",
                j * 10 + i)
            img(root / "imagenetv2-matched-frequency-format-val" / str(c) / f"v2_{i}.jpeg", 50 + j * 10 + i)
            img(root / "imagenet-sketch" / "sketch" / CLASSES[c].wnid / f"sketch_{i}.JPEG", 80 + j + i)
    for j, c in enumerate(label_space("imagenet-r")[:2]):
        img(root / "imagenet-r" / CLASSES[c].wnid / "art_0.jpg", 100 + j)
    for j, c in enumerate(label_space("imagenet-a")[:2]):
        img(root / "imagenet-a" / CLASSES[c].wnid / "a_0.jpg", 120 + j)
    on = root / "objectnet"
    for j, name in enumerate(OBJECTNET):
        for i in range(2):
            img(on / "images" / name.lower() / f"{i:04d}.png", 200 + 10 * j + i, "PNG")
    (on / "mappings").mkdir(parents=True)
    (on / "mappings" / "objectnet_to_imagenet_1k.json").write_text(json.dumps(
        {name: "; ".join(CLASSES[c].label for c in ids) for name, ids in OBJECTNET.items()}))
    (on / "mappings" / "folder_to_objectnet_label.json").write_text(json.dumps(
        {name.lower(): name for name in OBJECTNET}))


def flowers_layout(root: Path) -> None:
    import scipy.io

    d = root / "flowers102"
    labels = [1, 2, 3, 1, 2, 3, 1]
    for n in range(1, len(labels) + 1):
        img(d / "jpg" / f"image_{n:05d}.jpg", 300 + n)
    scipy.io.savemat(d / "imagelabels.mat", {"labels": np.array([labels], dtype=np.uint8)})
    scipy.io.savemat(d / "setid.mat", {"trnid": np.array([[6]]), "valid": np.array([[7]]),
                                       "tstid": np.array([[1, 2, 3, 4, 5]])})
    (d / "cat_to_name.json").write_text(json.dumps(FLOWER_NAMES))


def cars_layout(root: Path) -> None:
    import scipy.io

    d = root / "stanford_cars"
    (d / "devkit").mkdir(parents=True)
    names = np.empty((1, len(CAR_NAMES)), dtype=object)
    names[0, :] = CAR_NAMES
    scipy.io.savemat(d / "devkit" / "cars_meta.mat", {"class_names": names})
    dtype = [("bbox_x1", "O"), ("bbox_y1", "O"), ("bbox_x2", "O"), ("bbox_y2", "O"),
             ("class", "O"), ("fname", "O")]
    annos = np.empty((1, 4), dtype=dtype)
    for i, cls in enumerate((3, 1, 2, 3)):
        fname = f"{i + 1:05d}.jpg"
        img(d / "cars_test" / fname, 400 + i)
        annos[0, i] = (np.array([[1]]), np.array([[1]]), np.array([[10]]), np.array([[10]]),
                       np.array([[cls]], dtype=np.uint8), np.array([fname]))
    scipy.io.savemat(d / "cars_test_annos_withlabels.mat", {"annotations": annos})


def caltech_layout(root: Path, per_class: int = 32) -> None:
    d = root / "caltech101" / "101_ObjectCategories"
    for j, cls in enumerate(("BACKGROUND_Google", "Faces_easy", "dollar_bill")):
        for i in range(per_class):
            img(d / cls / f"image_{i + 1:04d}.jpg", 500 + 100 * j + i, size=8)


def vid_layout(root: Path) -> None:
    d = root / "imagenet-vid-robust"
    frames: dict[str, list[int]] = {}
    pmsets: dict[str, list[str]] = {}
    for v, cls in enumerate((0, 1, 2)):
        keys = [f"val/ILSVRC2015_val_{v:08d}/{f:06d}.JPEG" for f in range(3)]
        for f, key in enumerate(keys):
            img(d / key, 700 + 10 * v + f)
            frames[key] = [cls] if v != 1 else [1, 0]
        pmsets[keys[0]] = keys[1:]
    (d / "metadata").mkdir()
    (d / "misc").mkdir()
    (d / "metadata" / "pmsets.json").write_text(json.dumps(pmsets))
    (d / "metadata" / "labels.json").write_text(json.dumps(frames))
    (d / "misc" / "imagenet_vid_class_index.json").write_text(json.dumps(VID_CLASSES))
    (d / "misc" / "rev_wnid_map.json").write_text(json.dumps(
        {w: [CLASSES[i].wnid for i in ids] for w, ids in VID_GROUPS.items()}))


def imagenet_d_layout(root: Path) -> None:
    d = root / "ImageNet-D"
    for s, split in enumerate(("background", "texture", "material")):
        for j, cls in enumerate(IMAGENET_D):
            img(d / split / cls / f"{split}_{j}.jpg", 800 + 10 * s + j)
    (d / "imgnet_d2imgnet_id.txt").write_text(json.dumps(IMAGENET_D))


def threedcc_layout(root: Path) -> None:
    for sev in (1, 2):
        for j, c in enumerate((1, 207)):
            img(root / "3dcc" / "near_focus" / str(sev) / CLASSES[c].wnid / f"ILSVRC2012_val_{j:08d}.JPEG",
                900 + 10 * sev + j)


def all_layouts(root: Path) -> Path:
    for make in (imagenet_layouts, flowers_layout, cars_layout, caltech_layout, vid_layout,
                 imagenet_d_layout, threedcc_layout):
        make(root)
    return root


def raw_spec(**over: Any) -> dict[str, Any]:
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec

    raw = load_spec_yaml(resolve_spec("classification"))
    for v in raw["variants"]:
        if v["name"] == "3dcc":
            v.update(corruptions=["near_focus"], severities=[1, 2])
    return {**raw, "label_set_sizes": [2], **over}
