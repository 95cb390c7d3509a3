"""Tiny classification dataset directories (kind classification, a label space
stored once per config) for the evaluator's label-space tests."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.core.writer import BuildInfo, write_dataset


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG")
    return buf.getvalue()


def photos() -> list[Image.Image]:
    import skimage.data

    return [Image.fromarray(a) for a in (skimage.data.chelsea(), skimage.data.coffee(),
                                         skimage.data.astronaut(), skimage.data.rocket())]


def imagenet_space(name: str = "imagenet-1k") -> LabelSpace:
    """The 1,000 ImageNet classes, class i standing for ImageNet index i."""
    from vlmrobust.core.classes import load_imagenet_classes

    return LabelSpace(name, tuple(ClassEntry(c.name, (), c.wnid, (i,))
                                  for i, c in enumerate(load_imagenet_classes())))


def write_classification(out: Path, spaces: Mapping[str, LabelSpace],
                         rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> Path:
    """A dataset directory of kind classification: ``rows[config]`` hold
    ``id``, ``image`` (PIL), ``label`` and optionally ``candidates``."""
    from datasets import Features, Value
    from datasets import Image as HFImage
    from datasets import Sequence as HFSequence

    cols: dict[str, Any] = {"id": Value("string"), "image": HFImage(), "label": Value("int32")}
    if any("candidates" in r for rs in rows.values() for r in rs):
        cols["candidates"] = HFSequence(Value("int32"))
    configs = {c: [{**r, "image": {"bytes": png(r["image"]), "path": None}} for r in rs]
               for c, rs in rows.items()}
    write_dataset(out, configs=configs, features=Features(cols), card="test classification",
                  info=BuildInfo("classification", "0.1", 0), kind=CLASSIFICATION,
                  label_spaces=dict(spaces))
    return out
