"""Hand-made Flickr30K / MSCOCO sources in Karpathy's published layout: a split
file (``dataset_flickr30k.json`` / ``dataset_coco.json``) beside the images
(``flickr30k-images/<id>.jpg``, ``val2014/COCO_val2014_<12-digit id>.jpg``)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

COLOURS = ("red", "green", "blue", "yellow", "purple", "orange", "white", "black")


def jpeg(seed: int, size: int = 24) -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(size, size + 4, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _sentences(i: int, n: int) -> list[dict[str, Any]]:
    # raw captions as Karpathy's files hold them: COCO's often end in spaces / newlines
    return [{"raw": f"A {COLOURS[(i + j) % len(COLOURS)]}  thing number {i}, caption {j}. \n",
             "tokens": ["a", "thing"], "imgid": i, "sentid": 10 * i + j} for j in range(n)]


def write_flickr30k(root: Path, n_test: int = 6, n_train: int = 2) -> Path:
    folder = root / "flickr30k"
    (folder / "flickr30k-images").mkdir(parents=True, exist_ok=True)
    images = []
    for i in range(n_train + n_test):
        stem = 1000092795 + 7 * i
        split = "train" if i < n_train else "test"
        (folder / "flickr30k-images" / f"{stem}.jpg").write_bytes(jpeg(i))
        images.append({"filename": f"{stem}.jpg", "imgid": i, "split": split,
                       "sentids": [10 * i + j for j in range(5)], "sentences": _sentences(i, 5)})
    (folder / "dataset_flickr30k.json").write_text(
        json.dumps({"images": images, "dataset": "flickr30k"}), encoding="utf-8")
    return folder


def write_mscoco(root: Path, n_test: int = 5, n_val: int = 2, six: int = 1) -> Path:
    """COCO's layout; the first ``six`` test images have six captions."""
    folder = root / "mscoco"
    (folder / "val2014").mkdir(parents=True, exist_ok=True)
    images = []
    for i in range(n_val + n_test):
        cocoid = 391895 + 11 * i
        split = "val" if i < n_val else "test"
        name = f"COCO_val2014_{cocoid:012d}.jpg"
        (folder / "val2014" / name).write_bytes(jpeg(100 + i))
        n = 6 if split == "test" and i - n_val < six else 5
        images.append({"filepath": "val2014", "filename": name, "imgid": i, "cocoid": cocoid,
                       "split": split, "sentids": list(range(n)), "sentences": _sentences(i, n)})
    (folder / "dataset_coco.json").write_text(json.dumps({"images": images, "dataset": "coco"}),
                                              encoding="utf-8")
    return folder


def write_sources(root: Path) -> Path:
    write_flickr30k(root)
    write_mscoco(root)
    return root


def build_retrieval(root: Path, out: Path) -> Path:
    """``out``: the retrieval dataset the shipped spec builds from the sources
    written under ``root`` (the tests that predict, score and submit over one)."""
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.builders.families import BuildOptions
    from vlmrobust.builders.retrieval.build import build

    spec = resolve_spec("retrieval")
    build(load_spec_yaml(spec), spec, BuildOptions(out=out, source_root=root, progress=False))
    return out
