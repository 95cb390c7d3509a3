"""ImageNet-X factor annotations (Idrissi et al. 2023) for ImageNet val, read as
seed 001 uses them: the **top-factor** file of the PyPI package ``imagenet-x``
(``annotations/imagenet_x_val_top_factor.jsonl``: one JSON object per line,
``file_name`` = ``ILSVRC2012_val_XXXXXXXX.JPEG``, one 0/1 field per factor, at
most one of them 1: the annotators' main factor) with the package's
prototypical images removed (``annotations/prototypical_paths.csv`` lists
3,000 class-example images; 2,758 of them are among the file's 48,868 val
images), which is what the package's own ``load_annotations()`` returns by
default: 46,110 images.

Seed 001's 10 factors (:data:`NAMED_FACTORS`) are the 10 most frequent top
factors of that set. The multi-factor file (an image may carry several
factors) reads the same way when named explicitly.

Found in the installed package without importing it (pandas stays out), or
read from a file the user names (``--imagenet-x``); the prototype list is
taken from beside the annotation file when it is there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import open_bounded, read_bytes_bounded

TOP_FILE = "annotations/imagenet_x_val_top_factor.jsonl"
MULTI_FILE = "annotations/imagenet_x_val_multi_factor.jsonl"
PROTOTYPES_FILE = "prototypical_paths.csv"
#: ImageNet-X's 16 factors of variation, in the order of its paper's figures.
FACTORS = ("pose", "background", "pattern", "color", "smaller", "shape", "partial_view",
           "subcategory", "texture", "larger", "darker", "object_blocking", "person_blocking",
           "style", "brighter", "multiple_objects")
#: Seed 001's 10 factors: the 10 most frequent top factors once prototypes are
#: removed (pose 15,064 ... larger 150 images), most frequent first.
NAMED_FACTORS = ("pose", "background", "color", "pattern", "smaller", "shape", "partial_view",
                 "subcategory", "texture", "larger")
_MAX_BYTES = 256 << 20  # the shipped val files are ~17 MB (48,868 lines)
_MAX_PROTOTYPE_BYTES = 16 << 20


@dataclass(frozen=True)
class Annotations:
    """{val file name: factors marked 1} and where they came from."""

    file: str  # the annotation file's name (e.g. imagenet_x_val_top_factor.jsonl)
    factors: Mapping[str, frozenset[str]]
    prototypes_removed: int  # images dropped because the prototype list names them
    prototypes_file: str | None  # None: no prototype list was found beside the file

    def counts(self, keys: Iterable[str] | None = None) -> dict[str, int]:
        """Images per factor (all 16), over ``keys`` (e.g. a dataset's source
        files) or over every annotated image."""
        c: Counter[str] = Counter()
        names = self.factors.keys() if keys is None else (k for k in keys if k in self.factors)
        for k in names:
            c.update(self.factors[k])
        return {f: c.get(f, 0) for f in FACTORS}


def packaged_annotations(which: str = "top") -> Path | None:
    """The installed imagenet-x package's val top-factor (or ``"multi"``) file, or None."""
    if which not in ("top", "multi"):
        raise ValueError(f"which must be 'top' or 'multi', got {which!r}")
    spec = importlib.util.find_spec("imagenet_x")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        path = Path(loc) / (TOP_FILE if which == "top" else MULTI_FILE)
        if path.is_file():
            return path
    return None


def _prototypes(path: Path) -> frozenset[str]:
    """The file names of the package's prototype list (a CSV with a
    ``file_name`` header)."""
    text = read_bytes_bounded(path, _MAX_PROTOTYPE_BYTES, "ImageNet-X prototype list").decode(
        "utf-8", errors="replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or lines[0] != "file_name":
        raise VlmrobustError(f"{path}: not imagenet-x's prototype list (first line must be "
                             "'file_name'); fix: restore it or remove it")
    return frozenset(lines[1:])


def _read(path: Path) -> dict[str, frozenset[str]]:
    what = "ImageNet-X annotation file"
    if not path.exists() and not path.is_symlink():
        raise VlmrobustError(f"{path}: ImageNet-X annotation file not found; fix: pass "
                             f"imagenet-x's {TOP_FILE} or `pip install imagenet-x`")
    out: dict[str, frozenset[str]] = {}
    # open_bounded: a FIFO or device cannot hang the read, a folder or an oversized
    # file is refused before a byte is read
    with open_bounded(path, _MAX_BYTES, what) as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise VlmrobustError(f"{path}: line {n} is not UTF-8 text; fix: use imagenet-x's "
                                     "JSONL annotation file") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: '[[[[...' nested too deep
                raise VlmrobustError(f"{path}: line {n} is not JSON; fix: use imagenet-x's "
                                     "JSONL annotation file") from None
            name = row.get("file_name") if isinstance(row, dict) else None
            if not isinstance(name, str) or not name:
                raise VlmrobustError(f"{path}: line {n} has no file_name; fix: use imagenet-x's "
                                     "JSONL annotation file")
            bad = [f for f in FACTORS if row.get(f) not in (0, 1)]
            if bad:
                raise VlmrobustError(f"{path}: line {n} ({name[:80]}): factor {bad[0]!r} is "
                                     f"{row.get(bad[0])!r:.80}, expected 0 or 1; fix: restore the "
                                     "file")
            if name in out:
                raise VlmrobustError(f"{path}: line {n}: {name} is annotated twice; fix: restore "
                                     "the file")
            out[name] = frozenset(f for f in FACTORS if row[f] == 1)
    if not out:
        raise VlmrobustError(f"{path}: no annotations; fix: pass {TOP_FILE}")
    return out


@functools.lru_cache(maxsize=4)
def load(path: Path) -> Annotations:
    """The annotations of ``path`` without the prototypes listed beside it; a
    malformed line is a one-line error naming the file, the line and the fix."""
    path = Path(path)
    factors = _read(path)
    proto_path = path.parent / PROTOTYPES_FILE
    removed = 0
    if proto_path.is_file():
        protos = _prototypes(proto_path)
        removed = sum(1 for k in factors if k in protos)
        factors = {k: v for k, v in factors.items() if k not in protos}
    return Annotations(path.name, factors, removed,
                       PROTOTYPES_FILE if proto_path.is_file() else None)


def load_default() -> Annotations | None:
    """The installed package's top-factor annotations, prototypes removed; None
    without the package."""
    path = packaged_annotations("top")
    return None if path is None else load(path)
