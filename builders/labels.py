"""Labels as users write them: a class index or wnid in a label file, and clean
(multi-)label sets in any of the accepted forms, normalised to
``{file stem: IN-1k labels}`` (see builders/sources.py for the forms).

Kisel et al.'s clean validation set ("Flaws of ImageNet", ICLR 2025 blog track,
``clean_validation.csv``) is read in its published CSV format: header
``id,original_label,proposed_labels,validation``; ``id`` the val file name
(``ILSVRC2012_val_00021106.JPEG``), ``original_label`` the ILSVRC-2012 index,
``proposed_labels`` one index or a quoted comma-separated list (``"689, 601"``),
``validation`` the authors' marker (``*`` / ``+``; kept, not interpreted). Only
listed images are in the clean set, and every proposed label is a valid label.
Order is kept: the answer rule (builders/sources.py) is "the original label when
it is proposed, else the first proposed label"."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.core.classes import N_CLASSES, class_by_wnid, load_real_json, real_labels
from vlmrobust.core.errors import SourceError, VlmrobustError

_WNID = re.compile(r"^n\d{8}$")

CleanLabels = str | Path | Mapping[str, Sequence[int | str]] | None
KISEL_HEADER = ("id", "original_label", "proposed_labels", "validation")
KISEL_FILE = "clean_validation.csv"
# The published file is ~1.5 MB (36,415 rows); anything far larger is not it.
_MAX_CLEAN_BYTES = 64 << 20


@dataclass(frozen=True)
class CleanLabelSet:
    """Normalised clean labels plus what the card says about them. ``subset``:
    images absent from ``labels`` are not in the clean set (Kisel CSV, a JSON
    object); otherwise (ReaL) every val image is listed and absence is an error."""

    labels: Mapping[str, tuple[int, ...]]
    source: str
    rows: int
    subset: bool
    kind: str


def _read_bounded(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_CLEAN_BYTES + 1)
    except FileNotFoundError:
        raise SourceError(f"{path}: clean-label file not found; fix: give its path or 'real'") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read ({exc}); fix: restore the file") from None
    if len(data) > _MAX_CLEAN_BYTES:
        raise SourceError(f"{path}: larger than {_MAX_CLEAN_BYTES >> 20} MiB; fix: pass the clean-label file itself")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not UTF-8 text; fix: pass the clean-label CSV/JSON file") from None


def read_kisel_csv(path: Path) -> dict[str, tuple[int, ...]]:
    """{file stem: proposed labels in file order} from Kisel et al.'s clean_validation.csv."""
    rows = csv.reader(io.StringIO(_read_bounded(path)))
    header = next(rows, None)
    if header is None or tuple(h.strip() for h in header) != KISEL_HEADER:
        raise SourceError(f"{path}: row 1 must be the header '{','.join(KISEL_HEADER)}'; "
                          "fix: use Kisel et al.'s clean_validation.csv as published")
    out: dict[str, tuple[int, ...]] = {}
    for n, row in enumerate(rows, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 4:
            raise SourceError(f"{path}: row {n} has {len(row)} fields, expected 4 "
                              f"({','.join(KISEL_HEADER)}); fix: quote comma-separated proposed_labels")
        file_id, original, proposed = row[0].strip(), row[1].strip(), row[2]
        if not file_id:
            raise SourceError(f"{path}: row {n} has an empty id; fix: restore the file")
        parse_label(original, f"{path}: row {n} original_label")
        labels = tuple(dict.fromkeys(parse_label(x, f"{path}: row {n} proposed_labels")
                                     for x in proposed.split(",") if x.strip()))
        if not labels:
            raise SourceError(f"{path}: row {n} ({file_id}) has no proposed label; fix: an image "
                              "without a valid label is simply not listed")
        stem = file_stem(file_id)
        if stem in out and out[stem] != labels:
            raise SourceError(f"{path}: row {n}: {file_id} listed twice with different labels; fix: keep one row")
        out[stem] = labels
    if not out:
        raise SourceError(f"{path}: no rows after the header; fix: use the full clean_validation.csv")
    return out


def load_clean_label_set(clean_labels: CleanLabels) -> CleanLabelSet | None:
    """Any accepted clean-label form with its provenance (see :class:`CleanLabelSet`)."""
    if clean_labels is None:
        return None
    if isinstance(clean_labels, str) and clean_labels == "real":
        labels = _real_byfile_stem()
        return CleanLabelSet(labels, "ImageNet ReaL (Beyer et al. 2020), shipped with vlmrobust",
                             len(labels), subset=False, kind="real")
    if isinstance(clean_labels, (str, Path)) and Path(clean_labels).suffix.lower() == ".csv":
        path = Path(clean_labels)
        labels = read_kisel_csv(path)
        return CleanLabelSet(labels, f"{path.name} (Kisel et al., Flaws of ImageNet)",
                             len(labels), subset=True, kind="kisel-csv")
    labels = load_clean_labels(clean_labels) or {}
    is_list = False
    if isinstance(clean_labels, (str, Path)):
        is_list = _read_bounded(Path(clean_labels)).lstrip().startswith("[")
        source = Path(clean_labels).name
    else:
        source = "clean labels given as a mapping"
    return CleanLabelSet(labels, source, len(labels), subset=not is_list,
                         kind="real-json" if is_list else "json")


def parse_label(value: str, where: str) -> int:
    """A class index ("0".."999") or wnid as an IN-1k index.

    >>> parse_label("n01440764", "x"), parse_label(" 7 ", "x")
    (0, 7)
    """
    value = value.strip()
    if _WNID.match(value):
        try:
            return class_by_wnid(value).index
        except VlmrobustError:
            raise SourceError(f"{where}: {value} is not an ImageNet-1k wnid; fix: correct the label") from None
    if value.isdigit() and int(value) < N_CLASSES:
        return int(value)
    raise SourceError(f"{where}: label {value!r} is neither a class index 0..999 nor a wnid; fix: correct the label")


def file_stem(name: str) -> str:
    """File name without directories and extension (``a/b/x.JPEG`` -> ``x``).

    >>> file_stem("a/b/ILSVRC2012_val_00000001.JPEG"), file_stem("ILSVRC2012_val_00000001")
    ('ILSVRC2012_val_00000001', 'ILSVRC2012_val_00000001')
    """
    base = name.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base[1:] else base


def _label_list(labels: object, where: str, key: str) -> tuple[int, ...]:
    if not isinstance(labels, (list, tuple)):
        raise SourceError(f"{where}: entry {key!r} is not a list of labels; fix: use [] for no valid label")
    if all(type(x) is int and 0 <= x < N_CLASSES for x in labels):
        return tuple(dict.fromkeys(labels))  # the common case, without string parsing
    return tuple(dict.fromkeys(parse_label(str(x), f"{where}: entry {key!r}") for x in labels))


@functools.lru_cache(maxsize=1)
def _real_byfile_stem() -> dict[str, tuple[int, ...]]:
    return {file_stem(k): v for k, v in real_labels().items()}


def load_clean_labels(clean_labels: CleanLabels) -> dict[str, tuple[int, ...]] | None:
    """Normalise any accepted clean-label form to {file stem: labels}."""
    if clean_labels is None:
        return None
    if isinstance(clean_labels, str) and clean_labels == "real":
        return _real_byfile_stem()
    raw: Mapping[str, Sequence[int | str]]
    if isinstance(clean_labels, (str, Path)) and Path(clean_labels).suffix.lower() == ".csv":
        return read_kisel_csv(Path(clean_labels))
    if isinstance(clean_labels, (str, Path)):
        path = Path(clean_labels)
        try:
            data = json.loads(_read_bounded(path))
        except ValueError as exc:
            raise SourceError(f"{path}: not a readable JSON file ({exc}); fix: use a {{file: [labels]}} JSON object") from exc
        if isinstance(data, list):
            raw = load_real_json(path)
        elif isinstance(data, dict):
            raw = data
        else:
            raise SourceError(f"{path}: expected a JSON object {{file: [labels]}} or real.json's list; fix: convert it")
        where = str(path)
    else:
        raw, where = clean_labels, "clean labels"
    out: dict[str, tuple[int, ...]] = {}
    for key, labels in raw.items():
        parsed = _label_list(labels, where, key)
        stem = file_stem(str(key))
        if stem in out and out[stem] != parsed:
            raise SourceError(f"{where}: file {stem} listed twice with different labels; fix: keep one entry")
        out[stem] = parsed
    return out


#: Where ``clean_labels: auto`` looks for Kisel et al.'s CSV, under a source root.
KISEL_PLACES = ("clean_validation.csv", "imagenet-val/clean_validation.csv")


def clean_labels_for(setting: str | None, root: Path) -> str | Path | None:
    """A spec's ``clean_labels`` for ImageNet val resolved against a source root:
    ``auto`` is Kisel et al.'s clean_validation.csv when it is in ``root`` (or
    its imagenet-val folder), else ReaL; ``real`` and None stay; any other value
    is a file under ``root`` that must exist."""
    if setting in (None, "real"):
        return setting
    if setting == "auto":
        found = [root / p for p in KISEL_PLACES if (root / p).is_file()]
        return found[0] if found else "real"
    path = root / setting
    if not path.is_file():
        raise SourceError(f"{path}: clean-label file named in the spec (clean_labels) not found; "
                          "put it there, or set clean_labels: real (or null)")
    return path
