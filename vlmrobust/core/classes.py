"""ImageNet-1k class metadata from the package data in ``vlmrobust/core/data/``.

Runtime needs none of the packages the table was generated from
(``scripts/gen_class_table.py``; column origins in ``vlmrobust/core/data/README.md``).
"""

from __future__ import annotations

import functools
import gzip
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vlmrobust.core.errors import SourceError, VlmrobustError
from vlmrobust.core.files.bounded import read_json_bounded

DATA_DIR = Path(__file__).resolve().parent / "data"
CLASSES_TSV = DATA_DIR / "imagenet_classes.tsv"
REAL_LABELS = DATA_DIR / "imagenet_real_labels.txt.gz"
VAL_LABELS = DATA_DIR / "imagenet_val_labels.txt.gz"
N_CLASSES = 1000
N_VAL = 50_000

_WNID = re.compile(r"^n\d{8}$")

#: Variants whose label space is all 1000 classes.
FULL_SPACE_VARIANTS = ("imagenet-val", "imagenet-v2", "imagenet-sketch")
VARIANTS = (*FULL_SPACE_VARIANTS, "imagenet-r", "imagenet-a", "objectnet")


@dataclass(frozen=True)
class ImageNetClass:
    """One ImageNet-1k class. ``name`` is unique over the 1000 classes (ignoring
    case, punctuation and a plural 's'), so it can be shown as an option text."""

    index: int
    wnid: str
    name: str
    clean_name: str = ""
    clip_name: str = ""
    lemmas: tuple[str, ...] = field(default=())
    gloss: str = ""
    in_r: bool = False
    in_a: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.index < N_CLASSES:
            raise ValueError(f"class index {self.index} outside 0..{N_CLASSES - 1}")
        if not _WNID.match(self.wnid):
            raise ValueError(f"bad wnid {self.wnid!r} for class {self.index}")
        if not self.name.strip():
            raise ValueError(f"empty name for class {self.index}")

    @property
    def label(self) -> str:
        """The original ILSVRC-2012 label string (WordNet lemmas joined by ', ')."""
        return ", ".join(self.lemmas) if self.lemmas else self.name


@functools.lru_cache(maxsize=1)
def load_imagenet_classes() -> tuple[ImageNetClass, ...]:
    """The 1000 classes in index order.

    >>> classes = load_imagenet_classes()
    >>> len(classes), classes[0].wnid, classes[0].name
    (1000, 'n01440764', 'tench')
    """
    lines = [ln for ln in CLASSES_TSV.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    header = lines[0].split("\t")
    out = []
    for lineno, line in enumerate(lines[1:], start=2):
        row = dict(zip(header, line.split("\t"), strict=True))
        try:
            out.append(
                ImageNetClass(
                    index=int(row["index"]),
                    wnid=row["wnid"],
                    name=row["name"],
                    clean_name=row["clean_name"],
                    clip_name=row["clip_name"],
                    lemmas=tuple(row["lemmas"].split("|")),
                    gloss=row["gloss"],
                    in_r=row["in_r"] == "1",
                    in_a=row["in_a"] == "1",
                )
            )
        except (KeyError, ValueError) as exc:
            raise VlmrobustError(
                f"{CLASSES_TSV}: row {lineno} invalid ({exc}); fix: run scripts/gen_class_table.py"
            ) from exc
    if [c.index for c in out] != list(range(N_CLASSES)):
        raise VlmrobustError(f"{CLASSES_TSV}: expected indices 0..999 in order; fix: run scripts/gen_class_table.py")
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _by_wnid() -> dict[str, ImageNetClass]:
    return {c.wnid: c for c in load_imagenet_classes()}


def class_by_wnid(wnid: str) -> ImageNetClass:
    """The class with this wnid; VlmrobustError if it is not an ImageNet-1k class.

    >>> class_by_wnid("n01443537").name
    'goldfish'
    """
    try:
        return _by_wnid()[wnid]
    except KeyError:
        raise VlmrobustError(f"{wnid!r} is not an ImageNet-1k wnid; fix: use one of vlmrobust/core/data/imagenet_classes.tsv") from None


def class_names() -> tuple[str, ...]:
    """Unique display names in index order."""
    return tuple(c.name for c in load_imagenet_classes())


def label_space(variant: str, objectnet_mapping: Path | str | None = None) -> tuple[int, ...]:
    """Sorted IN-1k indices a variant's images can be labelled with.

    ObjectNet's space depends on its mapping file (``mappings/objectnet_to_imagenet_1k.json``),
    which ships with the dataset, not with this package: pass it as ``objectnet_mapping``.

    >>> len(label_space("imagenet-val")), len(label_space("imagenet-r")), len(label_space("imagenet-a"))
    (1000, 200, 200)
    """
    classes = load_imagenet_classes()
    if variant in FULL_SPACE_VARIANTS:
        return tuple(range(N_CLASSES))
    if variant == "imagenet-r":
        return tuple(c.index for c in classes if c.in_r)
    if variant == "imagenet-a":
        return tuple(c.index for c in classes if c.in_a)
    if variant == "objectnet":
        if objectnet_mapping is None:
            raise VlmrobustError(
                "label_space('objectnet') needs ObjectNet's mapping; fix: pass "
                "objectnet_mapping=<objectnet root>/mappings/objectnet_to_imagenet_1k.json"
            )
        mapping = load_objectnet_mapping(objectnet_mapping)
        return tuple(sorted({i for ids in mapping.values() for i in ids}))
    raise VlmrobustError(f"unknown variant {variant!r}; fix: use one of {', '.join(VARIANTS)}")


def _read_gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="ascii") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != N_VAL:
        raise VlmrobustError(f"{path}: {len(lines)} lines, expected {N_VAL}; fix: run scripts/gen_class_table.py")
    return lines


def val_filename(number: int) -> str:
    """ILSVRC-2012 val file name of the 1-based image number.

    >>> val_filename(1)
    'ILSVRC2012_val_00000001.JPEG'
    """
    return f"ILSVRC2012_val_{number:08d}.JPEG"


@functools.lru_cache(maxsize=1)
def real_labels() -> Mapping[str, tuple[int, ...]]:
    """ReaL multi-labels (Beyer et al. 2020) of the 50,000 val images, by file name.

    An empty tuple means the raters found no valid ImageNet label (3,163 images).

    >>> real = real_labels()
    >>> len(real), real["ILSVRC2012_val_00000002.JPEG"]
    (50000, (970, 795))
    """
    lines = _read_gz_lines(REAL_LABELS)
    return {val_filename(i + 1): tuple(int(x) for x in ln.split()) for i, ln in enumerate(lines)}


@functools.lru_cache(maxsize=1)
def val_labels() -> Mapping[str, int]:
    """The original single ILSVRC-2012 val label of each val image, by file name.

    >>> val_labels()["ILSVRC2012_val_00000001.JPEG"]
    65
    """
    return {val_filename(i + 1): int(ln) for i, ln in enumerate(_read_gz_lines(VAL_LABELS))}


# Source metadata files are a few MB at most (real.json is ~1 MB); the cap keeps a
# wrong path (an image archive, /dev/zero) from being read into memory.
MAX_SOURCE_JSON_BYTES = 64 * 1024 * 1024
_OBJECTNET_FIX = "use the mappings/ folder shipped with ObjectNet"


def _read_source_json(path: Path, what: str, fix: str) -> object:
    """A user-given metadata JSON file, size-bounded; SourceError naming the fix."""
    try:
        return read_json_bounded(path, MAX_SOURCE_JSON_BYTES, what, SourceError)
    except SourceError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        if reason.endswith("not found"):
            raise SourceError(f"{path}: {reason}; fix: {fix}") from None
        raise SourceError(f"{path}: not a readable JSON file ({reason}); fix: {fix}") from None


def load_real_json(path: Path | str) -> dict[str, tuple[int, ...]]:
    """Read the official ``real.json`` (a list of 50,000 label lists in val file order)."""
    path = Path(path)
    data = _read_source_json(path, "ReaL label file",
                             "point to real.json from google-research/reassessed-imagenet")
    if not isinstance(data, list) or len(data) != N_VAL:
        raise SourceError(f"{path}: expected a JSON list of {N_VAL} label lists; fix: use the official real.json")
    out = {}
    for i, labels in enumerate(data):
        if not isinstance(labels, list) or not all(isinstance(x, int) and 0 <= x < N_CLASSES for x in labels):
            raise SourceError(f"{path}: entry {i} is not a list of class indices 0..999; fix: use the official real.json")
        out[val_filename(i + 1)] = tuple(labels)
    return out


# ---------------------------------------------------------------- ObjectNet


def _name_lookup() -> dict[str, set[int]]:
    """Every way an ObjectNet mapping may spell an IN-1k class -> candidate indices."""
    lookup: dict[str, set[int]] = {}
    for c in load_imagenet_classes():
        for spelling in (c.label, c.name, c.clean_name, c.clip_name, *c.lemmas):
            lookup.setdefault(spelling.lower(), set()).add(c.index)
    return lookup


def _resolve_imagenet_name(name: str, path: Path, key: str) -> int:
    classes = load_imagenet_classes()
    exact = [c.index for c in classes if c.label == name]
    if len(exact) == 1:
        return exact[0]
    candidates = _name_lookup().get(name.lower(), set()) if not exact else set(exact)
    if len(candidates) != 1:
        why = "ambiguous" if candidates else "unknown"
        raise SourceError(
            f"{path}: entry {key!r} names {why} ImageNet class {name!r}; fix: use the ILSVRC-2012 "
            "label string (e.g. 'analog clock') of exactly one class"
        )
    return next(iter(candidates))


_OBJECTNET_MAPPING_PLACES = (
    ".",
    "mappings",
    "objectnet-1.0/mappings",
    "objectnet/mappings",
    "objectnet/objectnet-1.0/mappings",
)


def _objectnet_mapping_file(path: Path) -> Path:
    if not path.is_dir():
        return path
    for place in _OBJECTNET_MAPPING_PLACES:
        cand = path / place / "objectnet_to_imagenet_1k.json"
        if cand.is_file():
            return cand
    return path / "objectnet_to_imagenet_1k.json"


def load_objectnet_mapping(path: Path | str) -> dict[str, tuple[int, ...]]:
    """ObjectNet class name -> IN-1k indices, from ``objectnet_to_imagenet_1k.json``.

    The file maps each ObjectNet class to ``"imagenet label; imagenet label"``,
    where each label is an ILSVRC-2012 label string (``"analog clock"`` or
    ``"backpack, back pack, knapsack, packsack, rucksack, haversack"``). ``path``
    may also be the ``mappings/`` folder, the ObjectNet folder that holds it, or a
    source root with ``objectnet/`` (see :data:`_OBJECTNET_MAPPING_PLACES`).
    """
    path = _objectnet_mapping_file(Path(path))
    data = _read_source_json(path, "ObjectNet mapping", _OBJECTNET_FIX)
    if not isinstance(data, dict) or not data:
        raise SourceError(f"{path}: expected a JSON object {{objectnet name: 'imagenet label; ...'}}; fix: restore it from the ObjectNet release")
    out: dict[str, tuple[int, ...]] = {}
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise SourceError(f"{path}: entry {key!r} is not a non-empty string of '; '-separated ImageNet labels; fix: restore it")
        ids = [_resolve_imagenet_name(part.strip(), path, key) for part in value.split(";") if part.strip()]
        out[key] = tuple(dict.fromkeys(ids))
    return out


def load_objectnet_folders(mappings_dir: Path | str) -> dict[str, tuple[int, ...]]:
    """ObjectNet image folder name -> IN-1k indices, for the classes that overlap IN-1k.

    Joins ``folder_to_objectnet_label.json`` (folder -> ObjectNet name) with
    ``objectnet_to_imagenet_1k.json``; folders of non-overlapping classes map to nothing
    and are absent.
    """
    mappings_dir = Path(mappings_dir)
    mapping = load_objectnet_mapping(mappings_dir / "objectnet_to_imagenet_1k.json")
    folder_file = mappings_dir / "folder_to_objectnet_label.json"
    folders = _read_source_json(folder_file, "ObjectNet folder mapping", _OBJECTNET_FIX)
    if not isinstance(folders, dict) or not all(isinstance(v, str) for v in folders.values()):
        raise SourceError(f"{folder_file}: expected a JSON object {{folder: objectnet name}}; fix: restore it")
    unknown = sorted(set(mapping) - set(folders.values()))
    if unknown:
        raise SourceError(
            f"{mappings_dir}: ObjectNet class {unknown[0]!r} of objectnet_to_imagenet_1k.json has no folder in "
            "folder_to_objectnet_label.json; fix: use the two files from the same ObjectNet release"
        )
    return {folder: mapping[name] for folder, name in sorted(folders.items()) if name in mapping}
