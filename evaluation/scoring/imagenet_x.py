"""ImageNet-X annotations for scoring: the reader lives in
:mod:`vlmrobust.core.imagenet_x` (builders' cards use it too); this module keeps
the names scoring and the CLI import. Joined to rows on their ``source_file``."""

from __future__ import annotations

from pathlib import Path

from vlmrobust.core.imagenet_x import (
    MULTI_FILE,
    NAMED_FACTORS,
    TOP_FILE,
    Annotations,
    load,
    load_default,
    packaged_annotations,
)

PACKAGE_FILE = TOP_FILE
__all__ = ["MULTI_FILE", "NAMED_FACTORS", "PACKAGE_FILE", "TOP_FILE", "Annotations", "load",
           "load_annotations", "load_default", "packaged_annotations"]


def load_annotations(path: Path | str) -> dict[str, frozenset[str]]:
    """{val file name: factors} of ``path``, prototypes removed when the
    package's prototype list lies beside it."""
    return dict(load(Path(path)).factors)
