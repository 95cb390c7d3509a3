"""The on-disk layouts the cue-conflict family reads, as published:

- **cue-conflict** (Geirhos et al. 2019, github.com/rgeirhos/texture-vs-shape,
  ``stimuli/style-transfer-preprocessed-512/``; also model-vs-human's
  ``datasets/cue-conflict/``): ``<category>/<shape><i>-<texture><j>.png``, 16
  category folders, 1,280 stimuli. The folder is the shape category, the name's
  second part the texture category.
- **stylized-imagenet** (model-vs-human's ``datasets/stylized/``: 800
  Stylized-ImageNet images, 50 per category, Geirhos et al. 2019's SIN test
  images in the 16-class space): ``dnn/session-1/<NNNN>_sty_dnn_<condition>_<category>_<name>.png``,
  the category being the fifth ``_``-separated field (model-vs-human's
  ``InfoMappingWithSessions``). These images carry no texture cue of a known
  category.

Any other arrangement is refused in one line that names the path and the
layout expected; nothing is read without a size bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vlmrobust.builders.cue_conflict.categories import CATEGORIES
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.metrics.holistic.shape_bias import cue_conflict_classes

CUE_CONFLICT = "cue-conflict"
STYLIZED = "stylized-imagenet"
VARIANTS = (CUE_CONFLICT, STYLIZED)
CUE_CONFLICT_LAYOUT = "<category>/<shape><i>-<texture><j>.png (e.g. bear/bear1-bird2.png)"
STYLIZED_LAYOUT = ("dnn/session-1/<NNNN>_sty_dnn_<condition>_<category>_<name>.png "
                   "(model-vs-human's datasets/stylized/)")
PUBLISHED_COUNTS = {CUE_CONFLICT: 1280, STYLIZED: 800}
MAX_FILES = 100_000  # either layout has about a thousand; a bound on what is listed
_IGNORED = frozenset({".DS_Store", "Thumbs.db"})


@dataclass(frozen=True)
class Stimulus:
    """One image: its shape category (the label) and, for cue-conflict stimuli,
    its texture category."""

    variant: str
    source_file: str  # path relative to the variant's root, '/'-separated
    path: Path
    shape: str
    texture: str | None

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r} is not one of {VARIANTS}")
        for c in (self.shape, self.texture):
            if c is not None and c not in CATEGORIES:
                raise ValueError(f"{self.source_file}: {c!r} is not one of the 16 categories")


def _entries(folder: Path, layout: str) -> list[Path]:
    if not folder.is_dir():
        raise VlmrobustError(f"{folder}: not a folder; fix: point --source-root at the published "
                             f"layout {layout}")
    out = []
    for i, p in enumerate(sorted(folder.iterdir())):
        if i >= MAX_FILES:
            raise VlmrobustError(f"{folder}: more than {MAX_FILES} entries; fix: point "
                                 f"--source-root at the published layout {layout}")
        if p.name not in _IGNORED and not p.name.startswith("."):
            out.append(p)
    return out


def read_cue_conflict(root: Path) -> list[Stimulus]:
    """Geirhos's stimuli under ``root`` (the folder holding the category folders),
    sorted by ``<category>/<file>``."""
    root = Path(root)
    out: list[Stimulus] = []
    for entry in _entries(root, CUE_CONFLICT_LAYOUT):
        if not entry.is_dir() or entry.name not in CATEGORIES:
            what = "a file" if not entry.is_dir() else "a folder"
            raise VlmrobustError(f"{entry}: {what} where a category folder was expected "
                                 f"(one of {', '.join(CATEGORIES)}); fix: use the published "
                                 f"layout {CUE_CONFLICT_LAYOUT}")
        for f in _entries(entry, CUE_CONFLICT_LAYOUT):
            rel = f"{entry.name}/{f.name}"
            if not f.is_file():
                raise VlmrobustError(f"{f}: not a file; fix: use the published layout "
                                     f"{CUE_CONFLICT_LAYOUT}")
            try:
                shape, texture = cue_conflict_classes(rel)
            except ValueError as exc:
                raise VlmrobustError(f"{f}: {exc}; fix: use the published layout "
                                     f"{CUE_CONFLICT_LAYOUT}") from None
            if texture not in CATEGORIES:
                raise VlmrobustError(f"{f}: texture {texture!r} is not one of the 16 categories; "
                                     f"fix: use the published layout {CUE_CONFLICT_LAYOUT}")
            out.append(Stimulus(CUE_CONFLICT, rel, f, shape, texture))
    if not out:
        raise VlmrobustError(f"{root}: no stimuli; fix: use the published layout "
                             f"{CUE_CONFLICT_LAYOUT}")
    return out


def stylized_category(name: str) -> str | None:
    """The category of a model-vs-human stylized file name, or None when the
    name does not follow ``<NNNN>_sty_dnn_<condition>_<category>_<name>.png``.

    >>> stylized_category("0350_sty_dnn_0_car_00_car-0149-ILSVRC2012-val-00049427.png")
    'car'
    >>> stylized_category("car1-bird2.png") is None
    True
    """
    parts = name.split("_")
    if len(parts) < 6 or not name.endswith(".png") or not parts[0].isdigit() \
            or parts[1] != "sty" or parts[4] not in CATEGORIES:
        return None
    return parts[4]


def read_stylized(root: Path) -> list[Stimulus]:
    """model-vs-human's Stylized-ImageNet images under ``root`` (the folder
    holding ``dnn/``), sorted by file name."""
    root = Path(root)
    session = root / "dnn" / "session-1"
    if not session.is_dir():
        raise VlmrobustError(f"{root}: no dnn/session-1/ folder; fix: use the published layout "
                             f"{STYLIZED_LAYOUT}")
    out: list[Stimulus] = []
    for f in _entries(session, STYLIZED_LAYOUT):
        category = stylized_category(f.name)
        if category is None or not f.is_file():
            raise VlmrobustError(f"{f}: not <NNNN>_sty_dnn_<condition>_<category>_<name>.png with "
                                 f"one of the 16 categories; fix: use the published layout "
                                 f"{STYLIZED_LAYOUT}")
        out.append(Stimulus(STYLIZED, f"dnn/session-1/{f.name}", f, category, None))
    if not out:
        raise VlmrobustError(f"{session}: no images; fix: use the published layout "
                             f"{STYLIZED_LAYOUT}")
    return out


READERS = {CUE_CONFLICT: read_cue_conflict, STYLIZED: read_stylized}
