"""The retrieval dataset's family name, columns and rows, shared by the build from
Karpathy's splits (:mod:`vlmrobust.builders.retrieval.build`) and the embedded
sample (:mod:`vlmrobust.builders.retrieval.sample`), below both (issue 38.4: no
import circles)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlmrobust.builders.image_files import checked_image
from vlmrobust.builders.retrieval.karpathy import KarpathySplit

FAMILY = "retrieval"


def features() -> Any:
    from datasets import Features, List, Value
    from datasets import Image as HFImage

    return Features({
        "id": Value("string"), "image": HFImage(), "captions": List(Value("string")),
        "source": Value("string"), "source_file": Value("string"),
        "source_id": Value("int64"),
    })


def image_bytes(path: Path) -> bytes:
    """The file's bytes once PIL has decoded them."""
    return checked_image(path, "retrieval image", "restore the file from the published images")[0]


def rows(split: KarpathySplit) -> Iterator[dict[str, Any]]:
    for im in split.images:
        yield {"id": im.key, "image": {"bytes": image_bytes(im.path), "path": None},
               "captions": list(im.captions), "source": split.source,
               "source_file": im.filename, "source_id": im.source_id}
