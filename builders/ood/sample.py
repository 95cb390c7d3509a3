"""The ood family's embedded sample: the imagenet-mcq sample's 101 photos of
ImageNet classes as the ID set (config ``sample-photo``) and, as one OOD set
(config ``sample-ood``), scikit-image's images of things that are no ImageNet
class, in three OOD classes so that the class-mean AUROC runs as on NINCO:

- ``textures``: brick, grass, gravel (CC0 textures);
- ``astronomy``: the Hubble deep field (NASA, public domain);
- ``biomedical``: a cell in quantitative phase imaging (CC0), an
  immunohistochemistry section (no known copyright restrictions) and a retinal
  fundus crop with microaneurysms (CC0).

Each OOD image is used whole and as its four quadrant crops (5 rows per
image, 35 in all), PNG-encoded here with fixed parameters so rebuilds are
byte-identical. A stand-in that exercises the pipeline, not a benchmark."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.ood.dataset import IdImage, OodSpec, write_ood
from vlmrobust.builders.ood.layouts import OodImage, OodSet

ID_CONFIG = "sample-photo"
OOD_CONFIG = "sample-ood"
# (scikit-image loader, OOD class, licence as its docstring states it)
OOD_IMAGES = (
    ("brick", "textures", "CC0 (CC0Textures)"),
    ("grass", "textures", "CC0 (DeviantArt, linolafett)"),
    ("gravel", "textures", "CC0 (CC0Textures)"),
    ("hubble_deep_field", "astronomy", "public domain (NASA / HubbleSite)"),
    ("cell", "biomedical", "CC0 (Müller et al. 2018)"),
    ("immunohistochemistry", "biomedical", "no known copyright restrictions (CMMI)"),
    ("microaneurysms", "biomedical", "CC0 (Andreas Maier)"),
)
CROPS = ("full", "q0", "q1", "q2", "q3")


def _png(arr: np.ndarray[Any, Any]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def crop(arr: np.ndarray[Any, Any], which: str) -> np.ndarray[Any, Any]:
    """The whole image or one of its quadrants (q0 top left, q1 top right, q2
    bottom left, q3 bottom right).

    >>> a = np.arange(16).reshape(4, 4)
    >>> crop(a, "q3").tolist(), crop(a, "full").shape
    ([[10, 11], [14, 15]], (4, 4))
    """
    if which == "full":
        return arr
    h, w = arr.shape[0] // 2, arr.shape[1] // 2
    q = int(which[1])
    return arr[(q // 2) * h:(q // 2 + 1) * h, (q % 2) * w:(q % 2 + 1) * w]


def ood_images() -> OodSet:
    """The sample's OOD set; ``path`` names the scikit-image loader (the bytes
    are made by :func:`sample_ood_rows`)."""
    images = [OodImage(f"{cls}/{name}-{c}.png", Path(f"skimage.data.{name}"), cls)
              for name, cls, _ in OOD_IMAGES for c in CROPS]
    return OodSet(OOD_CONFIG, Path("skimage/data"), tuple(sorted(images, key=lambda im: im.key)))


def sample_ood_rows(s: OodSet) -> Iterator[dict[str, Any]]:
    import skimage.data

    cache: dict[str, np.ndarray[Any, Any]] = {}
    for im in s.images:
        name, which = Path(im.key).stem.rsplit("-", 1)
        if name not in cache:
            cache[name] = np.ascontiguousarray(getattr(skimage.data, name)())
        yield {"id": f"{s.name}/{im.key}",
               "image": {"bytes": _png(np.ascontiguousarray(crop(cache[name], which))), "path": None},
               "label": -1, "is_ood": True, "ood_source": s.name, "ood_class": im.folder,
               "source_file": im.key}


def build_sample(spec: OodSpec, options: BuildOptions) -> dict[str, Any]:
    from vlmrobust.builders.sample import load_sample

    photos = [im for im in load_sample() if im.group == "photo"]
    id_images = [IdImage(im.key, Path(im.path), int(im.class_index)) for im in photos]
    if options.limit is not None:
        id_images = id_images[:options.limit]
    ood = ood_images()
    licences = [("ImageNet-class photos (imagenet-mcq sample)", "other",
                 "each image's licence is listed in builders/sample/sample.csv"),
                *[(f"scikit-image {name} ({cls})", "other", lic) for name, cls, lic in OOD_IMAGES]]
    return write_ood(options.out, spec, id_images, {OOD_CONFIG: ood}, [],
                     id_note="the sample's ImageNet labels", sample=True, limit=options.limit,
                     source_fingerprints={}, licences=licences, ood_rows_of=sample_ood_rows,
                     id_config=ID_CONFIG, named_classes=(OOD_CONFIG,))
