"""The visual strategy's neighbour lists: embed every question image, build
class prototypes, search them with FAISS, nearest first.

Prototypes (spec ``visual.prototypes``):

- ``classifier`` (default): the rows of the classifier's final linear layer
  (``adapter.class_prototypes()``). The logit of class c is ``w_c · f + b_c``, so
  ``w_c`` is a genuine prototype of c in the very space of the pooled features,
  and it exists for every class, including the many classes that have no image
  in a small build such as the embedded sample.
- ``images``: the normalised mean of the normalised embeddings of the build's
  images of each class (over all variants). Classes without any image have no
  prototype and can then never be visual distractors.
- ``image-set`` (the seed's protocol): the normalised mean of the L2-normalised
  embeddings of a user-given image set, ``visual.prototype_images`` = a folder of
  ``<wnid>/`` class folders such as a per-class subset of ImageNet train (up to
  ``visual.per_class`` images each, first in file-name order), embedded by any
  image encoder (vlmrobust.models.encoders.image_encoders: transformers DINOv2 / DINOv3,
  timm backbones, open_clip image towers, classifiers). Embeddings are cached.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from vlmrobust.builders.imagenet_mcq.items import Item
from vlmrobust.builders.imagenet_mcq.mining import (
    embed_files,
    image_prototypes,
    l2_normalise,
    nearest_prototypes,
)
from vlmrobust.builders.imagenet_mcq.spec import VisualSpec
from vlmrobust.core.errors import VlmrobustError

NUM_CLASSES = 1000


class Embedder(Protocol):
    def embed_images(self, images: Sequence[Any]) -> np.ndarray: ...


def prototype_note(visual: VisualSpec) -> str:
    if visual.prototypes == "image-set":
        return (f"Class prototypes are the normalised means of the L2-normalised "
                f"`{visual.encoder}` embeddings of up to {visual.per_class} images per class "
                f"from the image set `{visual.prototype_images}` (first in file-name order); "
                "classes without images there are never visual distractors.")
    if visual.prototypes == "classifier":
        return ("Class prototypes are the L2-normalised weight rows of the classifier's "
                "final layer (one per class, in the same feature space).")
    return ("Class prototypes are the normalised mean embeddings of the images of each "
            "class in this build; classes without images are never visual distractors.")


def image_set_files(folder: Path, per_class: int) -> list[tuple[Path, int]]:
    """(file, IN-1k class) of up to ``per_class`` images of each ``<wnid>/`` folder."""
    from vlmrobust.builders.sources import IMAGE_SUFFIXES
    from vlmrobust.core.classes import class_by_wnid

    if not folder.is_dir():
        raise VlmrobustError(f"{folder}: prototype image set not found; fix: put <wnid>/ class "
                             "folders there (e.g. a per-class subset of ImageNet train) or "
                             "change visual.prototype_images")
    out: list[tuple[Path, int]] = []
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            label = class_by_wnid(sub.name).index
        except VlmrobustError:
            raise VlmrobustError(f"{sub}: not an ImageNet-1k wnid folder; fix: remove it from "
                                 "the prototype image set") from None
        files = sorted(p for p in sub.iterdir() if p.is_file() and not p.name.startswith(".")
                       and p.suffix.lower() in IMAGE_SUFFIXES)
        out.extend((p, label) for p in files[:per_class])
    if not out:
        raise VlmrobustError(f"{folder}: no images in <wnid>/ folders; fix: fill the prototype "
                             "image set")
    return out


def _prototypes(
    visual: VisualSpec, embedder: Embedder, emb: np.ndarray, items: Sequence[Item],
    prototype_dir: Path | None = None, progress: bool = False, cache_dir: Path | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(NUM_CLASSES, D) prototypes and the mask of classes that have one."""
    if visual.prototypes == "image-set":
        if prototype_dir is None:
            raise VlmrobustError("visual.prototypes: image-set needs --source-root (the folder "
                                 f"that holds {visual.prototype_images})")
        files = image_set_files(prototype_dir, visual.per_class)
        set_emb = embed_files(
            embedder.embed_images, [f for f, _ in files], visual.batch_size, progress,
            desc=f"prototypes with {visual.encoder}", cache_dir=cache_dir,
            cache_tag=f"{visual.encoder}/v1")
        protos, has = image_prototypes(set_emb, [c for _, c in files], range(NUM_CLASSES))
        if protos.shape[1] != emb.shape[1]:
            raise VlmrobustError(f"{visual.encoder}: prototype size {protos.shape[1]} differs "
                                 f"from the question embeddings' {emb.shape[1]}")
        return protos, has
    if visual.prototypes == "classifier":
        fn = getattr(embedder, "class_prototypes", None)
        if fn is None:
            raise VlmrobustError(
                f"visual.encoder {visual.encoder!r} has no classifier weights to use as "
                "prototypes; set visual.prototypes: images in the spec"
            )
        protos = l2_normalise(np.asarray(fn(), dtype=np.float32))
        if protos.shape != (NUM_CLASSES, emb.shape[1]):
            raise VlmrobustError(
                f"{visual.encoder}: class prototypes {protos.shape} do not match "
                f"{NUM_CLASSES} classes x embedding size {emb.shape[1]}"
            )
        return protos, np.ones(NUM_CLASSES, dtype=bool)
    return image_prototypes(emb, [it.label for it in items], range(NUM_CLASSES))


def default_cache_dir() -> Path:
    """``$VLMROBUST_CACHE/embeddings``, else ``$XDG_CACHE_HOME/vlmrobust/embeddings``
    (``~/.cache`` by default)."""
    base = os.environ.get("VLMROBUST_CACHE")
    if base:
        return Path(base) / "embeddings"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "vlmrobust" / "embeddings"


def visual_neighbours(
    variants: Sequence[tuple[tuple[int, ...], Sequence[Item], bool]], embedder: Embedder,
    visual: VisualSpec, k: int, progress: bool, cache_dir: Path | None = None,
    prototype_dir: Path | None = None,
) -> dict[tuple[str, str], tuple[int, ...]]:
    """(variant, key) -> classes of the variant's label space, nearest prototype
    first, long enough to leave ``k`` after removing the item's valid labels
    (the whole space for a grouped variant, whose groups collapse the list)."""
    items = [it for _, its, _ in variants for it in its]
    emb = embed_files(
        embedder.embed_images, [it.path for it in items], visual.batch_size, progress,
        desc=f"embedding with {visual.encoder}", cache_dir=cache_dir,
        cache_tag=f"{visual.encoder}/v1",
    )
    protos, has = _prototypes(visual, embedder, emb, items, prototype_dir, progress, cache_dir)
    out: dict[tuple[str, str], tuple[int, ...]] = {}
    start = 0
    for space, its, grouped in variants:
        rows = emb[start:start + len(its)]
        start += len(its)
        if not its:
            continue
        cand = np.array([c for c in space if has[c]], dtype=np.int64)
        depth = len(cand) if grouped else min(len(cand), k + max(len(it.valid) for it in its))
        _, idx = nearest_prototypes(rows, protos[cand], depth)
        for it, row in zip(its, idx, strict=True):
            out[(it.variant, it.key)] = tuple(int(cand[j]) for j in row if j >= 0)
    return out
