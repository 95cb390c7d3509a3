"""The embedded cue-conflict sample: a **stand-in** for Geirhos's stimuli made
from images that ship with the package (builders/sample), never a copy of them.

Geirhos et al. transfer the style of one category's texture image onto another
category's object photo. We have no style transfer and few photos, so a
stimulus here is an emoji rendition's silhouette (the shape; the noto artwork
of a category's ImageNet class) filled with a tiled patch cut from the middle
of a photo of another category (the texture). The 16 categories, the naming
``<shape>/<shape><i>-<texture><j>.png`` and the label space are the real ones;
only 6 categories have a silhouette and 7 a photo, so the sample has
6 × 7 = 42 stimuli, 4 of them with equal shape and texture. The stimuli are
written in the published layout and read back by the same reader as the real
set (layout.read_cue_conflict).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vlmrobust.builders.cue_conflict.categories import CATEGORY_CLASSES
from vlmrobust.builders.sample import SampleImage, load_sample

SIZE = 224
TILE = 56  # 4 x 4 tiles of the texture patch fill the image
STYLE = "noto"  # the rendition artwork whose silhouettes are used
WHITE = 235  # a rendition pixel whose channels all exceed this is background


@dataclass(frozen=True)
class SampleStimulus:
    name: str  # <shape>/<shape>1-<texture>1.png
    shape_key: str  # the sample image giving the silhouette
    texture_key: str  # the sample image giving the texture
    licences: tuple[str, ...]


def _sources() -> tuple[dict[str, SampleImage], dict[str, SampleImage]]:
    """Per category: its first noto rendition (shape) and its first photo (texture)."""
    category_of = {i: c for c, ids in CATEGORY_CLASSES.items() for i in ids}
    shapes: dict[str, SampleImage] = {}
    textures: dict[str, SampleImage] = {}
    for s in sorted(load_sample(), key=lambda s: s.key):
        c = category_of.get(s.class_index)
        if c is None:
            continue
        if s.group == "rendition" and s.style == STYLE:
            shapes.setdefault(c, s)
        elif s.group == "photo":
            textures.setdefault(c, s)
    return shapes, textures


def silhouette(rgb: np.ndarray) -> np.ndarray:
    """The object mask of a rendition on a white background (True = object),
    white areas enclosed by the outline included (a bear's white face)."""
    from scipy.ndimage import binary_fill_holes

    return np.asarray(binary_fill_holes((rgb < WHITE).any(axis=2)), dtype=bool)


def texture_patch(rgb: np.ndarray) -> np.ndarray:
    """A square patch from the middle of the photo's non-white area, tiled to SIZE."""
    from PIL import Image

    obj = (rgb < WHITE).any(axis=2)
    ys, xs = np.nonzero(obj) if obj.any() else np.nonzero(np.ones(obj.shape, dtype=bool))
    cy, cx = int(np.median(ys)), int(np.median(xs))
    half = max(4, min(int(ys.max() - ys.min()), int(xs.max() - xs.min())) // 4)
    patch = rgb[max(0, cy - half):cy + half, max(0, cx - half):cx + half]
    small = np.asarray(Image.fromarray(patch).resize((TILE, TILE), Image.Resampling.BICUBIC))
    reps = SIZE // TILE
    return np.tile(small, (reps, reps, 1))


def _rgb(path: Path, size: int | None = None) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as src:
        im = src.convert("RGB")
    if size is not None:
        im = im.resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(im)


def stimulus_png(shape_path: Path, texture_path: Path) -> bytes:
    """White background, the silhouette filled with the texture (PNG, fixed params)."""
    from PIL import Image

    mask = silhouette(_rgb(shape_path, SIZE))
    out = np.full((SIZE, SIZE, 3), 255, dtype=np.uint8)
    out[mask] = texture_patch(_rgb(texture_path))[mask]
    buf = io.BytesIO()
    Image.fromarray(out).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def write_sample_stimuli(dest: Path) -> list[SampleStimulus]:
    """Write the stand-in stimuli to ``dest/<shape>/<shape>1-<texture>1.png`` (the
    published layout) and return where each came from."""
    shapes, textures = _sources()
    out: list[SampleStimulus] = []
    for sc, s in sorted(shapes.items()):
        for tc, t in sorted(textures.items()):
            name = f"{sc}/{sc}1-{tc}1.png"
            path = dest / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(stimulus_png(s.path, t.path))
            out.append(SampleStimulus(name, s.key, t.key, (s.licence, t.licence)))
    return out


def provenance_lines(stimuli: list[SampleStimulus]) -> list[str]:
    """Card lines: every source image the sample uses, with its licence."""
    used: dict[str, str] = {}
    for s in stimuli:
        used.update({s.shape_key: s.licences[0], s.texture_key: s.licences[1]})
    return [f"| `{k}` | {lic} |" for k, lic in sorted(used.items())]
