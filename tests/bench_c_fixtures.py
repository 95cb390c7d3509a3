"""A tiny real Bench-C source (six scikit-image photos at 40×36, two categories),
a spec, and stand-in selectors whose answers move with the corruption: shared by
the Bench-C build and copies tests."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vlmrobust.builders.bench_c.build import build_dataset
from vlmrobust.builders.bench_c.sources import load_source
from vlmrobust.builders.bench_c.spec import parse_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.writer import BuildInfo, write_dataset

CORRUPTIONS = ["gaussian_noise", "glass_blur", "fog", "brightness", "contrast", "pixelate"]


def png_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "PNG")
    return buf.getvalue()


def write_source(root: Path, with_category: bool = True) -> Path:
    import skimage.data
    from datasets import Features, List, Value
    from datasets import Image as HFImage

    photos = [skimage.data.astronaut(), skimage.data.chelsea(), skimage.data.coffee(),
              np.dstack([skimage.data.camera()] * 3), skimage.data.rocket(),
              skimage.data.immunohistochemistry()]
    cols: dict[str, Any] = {
        "id": Value("string"), "image": HFImage(), "question": Value("string"),
        "options": List(Value("string")), "answer": Value("int32"),
        "option_class_ids": List(Value("int32")),
    }
    if with_category:
        cols["variant"] = Value("string")
    rows = []
    for i, photo in enumerate(photos):
        img = np.asarray(Image.fromarray(photo).resize((40, 36), Image.BILINEAR))
        row: dict[str, Any] = {
            "id": f"q{i}", "image": {"bytes": png_bytes(img), "path": None},
            "question": f"What is shown in picture {i}?",
            "options": [f"thing {i}", "cat", "cup", "rocket"], "answer": i % 4,
            "option_class_ids": [i, 281, 504, 812],
        }
        if with_category:
            row["variant"] = "photo" if i % 2 else "render"
        rows.append(row)
    out = root / "src"
    write_dataset(out, configs={"main": rows}, features=Features(cols), card="toy",
                  info=BuildInfo("toy", "1", 0))
    return out


def raw_spec(**selection: Any) -> dict[str, Any]:
    sel = {"selectors": ["other:bright", "other:red"], "image_embedder": "other:emb",
           "pool_per_category": 3, "batch_size": 16, **selection}
    return {"family": "bench-c", "name": "bench-c", "version": "0.1", "seed": 7,
            "corruptions": CORRUPTIONS, "severities": [1, 2, 3, 4, 5],
            "selection": sel,
            "sources": [{"name": "toy", "path": "src", "category_column": "variant"}]}


class FakeSelector:
    """Answers from image statistics, so corruption severity moves the answer."""

    family = "other"

    def __init__(self, name: str, channel: int | None, fail_after: int | None = None) -> None:
        self.name, self.channel, self.fail_after, self.calls = name, channel, fail_after, 0

    def option_logits(self, rows: Any) -> np.ndarray:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("simulated kill")
        out = []
        for row in rows:
            arr = np.asarray(row["image"], dtype=float)
            v = arr.mean() if self.channel is None else arr[..., self.channel].mean()
            k = len(row["options"])
            out.append([-abs(v / 256 * k - j - 0.5) for j in range(k)])
        return np.array(out, np.float32)

    def embed_images(self, images: Any) -> np.ndarray:
        feats = []
        for im in images:
            arr = np.asarray(im, dtype=float) / 255
            f = np.concatenate([arr.mean(axis=(0, 1)), arr.std(axis=(0, 1))])
            feats.append(f / np.linalg.norm(f))
        return np.array(feats, np.float32)


def text_embed(texts: Any) -> np.ndarray:
    out = np.zeros((len(texts), 26))
    for i, t in enumerate(texts):
        for ch in t.lower():
            if ch.isalpha():
                out[i, ord(ch) - 97] += 1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def run(tmp: Path, out: Path, fail_after: int | None = None,
        selectors: dict[str, FakeSelector] | None = None,
        selectors_list: list[str] | None = None, keep_work: bool = False,
        seed: int | None = None, **sel: Any) -> dict[str, Any]:
    if selectors_list is not None:
        sel["selectors"] = selectors_list
    raw = raw_spec(**sel)
    if seed is not None:
        raw["seed"] = seed
    spec = parse_spec(raw, tmp / "bench-c.yaml")
    src = load_source(spec.sources[0], tmp)
    models = selectors or {"other:bright": FakeSelector("b", None, fail_after),
                           "other:red": FakeSelector("r", 0),
                           "other:emb": FakeSelector("e", None)}
    return build_dataset(spec, spec.selection, [src], out,
                         options=BuildOptions(out=out, progress=False),
                         loader=models.__getitem__, text_embedder=text_embed, keep_work=keep_work)
