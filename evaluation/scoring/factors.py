"""ImageNet-X factor accuracies of a scored config (seed 001 §IV): rows of an
``imagenet-val`` config are joined to the top-factor annotations on their
``source_file`` (vlmrobust.core.imagenet_x: the package's default, prototypes
removed) and scored per named factor (vlmrobust.metrics.lines.factors).

What the accuracy means follows the dataset: over the full label space for the
classification family (a 1000-way decision, as seed 001), 5-option multiple
choice for imagenet-mcq (whose imagenet-val config holds a sample of ImageNet
val, so a rare factor rests on few images: the block gives ``n`` per factor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.imagenet_x import NAMED_FACTORS, Annotations, load, packaged_annotations
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex
from vlmrobust.metrics.lines.factors import factor_accuracies

FACTOR_VARIANT = "imagenet-val"


def has_factor_rows(index: DatasetIndex) -> bool:
    """Whether ``index`` has imagenet-val rows with a ``source_file`` to join."""
    cols = index.columns
    return ("source_file" in cols and "variant" in cols
            and FACTOR_VARIANT in set(cols["variant"].tolist()))


def annotations_for(index: DatasetIndex, imagenet_x: Path | str | None) -> Annotations | None:
    """The annotations to join when ``index`` has imagenet-val rows with a
    ``source_file``: the given file, else the installed package's top-factor
    file, else None."""
    if not has_factor_rows(index):
        return None
    path = Path(imagenet_x) if imagenet_x is not None else packaged_annotations("top")
    return None if path is None else load(path)


def factor_block(index: DatasetIndex, rows: NDArray[np.int64], correct: NDArray[np.bool_],
                 annotations: Annotations | None) -> dict[str, Any] | None:
    """{factor: {n, accuracy}} for the named factors plus ``annotated``, when
    ``rows`` are all imagenet-val rows; None otherwise."""
    cols = index.columns
    if annotations is None or "source_file" not in cols or "variant" not in cols:
        return None
    variants = set(cols["variant"][rows].tolist())
    if variants != {FACTOR_VARIANT}:
        return None
    # ImageNet val file names are unique: a class-folder path joins by its base name
    keys = [str(k).rpartition("/")[2] for k in cols["source_file"][rows].tolist()]
    return factor_accuracies(correct, keys, annotations.factors, NAMED_FACTORS)


def annotation_record(annotations: Annotations) -> dict[str, Any]:
    """Where the factors came from, for scores.json (``factor_annotations``)."""
    return {"file": annotations.file, "prototypes_file": annotations.prototypes_file,
            "prototypes_removed": annotations.prototypes_removed,
            "n_annotated": len(annotations.factors), "factors": list(NAMED_FACTORS)}
