"""What every classification layout reader returns, and the helpers they share.

A reader turns one published on-disk layout into :class:`VariantSource` s
(one per config it yields): the config's label space (built once) and its
images, each with its ``label`` (an index into that label space), any other
valid labels, and the family columns of its layout (corruption / severity for
3DCC, the perturbation set for ImageNet-Vid-Robust). Wrong layouts are refused
in one line naming the layout expected (:func:`layout_error`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import read_bytes_bounded
from vlmrobust.core.label_space import LabelSpace

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp"})
MAX_META_BYTES = 256 * 2**20  # the largest metadata file (Vid-Robust's labels.json) is ~10 MB
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class SourceItem:
    """One image: ``key`` (posix path relative to the variant folder; id
    material), ``label`` (index into the config's label space), ``valid``
    (every valid label, ``label`` first) and ``columns`` (family columns)."""

    key: str
    path: Path
    label: int
    valid: tuple[int, ...] = ()
    columns: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.key or self.key.startswith("/") or _CONTROL.search(self.key):
            raise ValueError(f"source key must be a relative path, got {self.key!r}")
        if self.valid and self.valid[0] != self.label:
            raise ValueError(f"{self.key}: valid labels must start with the label")


@dataclass(frozen=True)
class VariantSource:
    """One config's images over its label space, and where they were read."""

    config: str
    variant: str
    space: LabelSpace
    items: tuple[SourceItem, ...]
    folder: str  # the folder read, relative to --source-root
    notes: Mapping[str, Any] = field(default_factory=dict)  # recorded in the manifest

    def __post_init__(self) -> None:
        n = len(self.space)
        bad = next((it for it in self.items if not all(0 <= v < n for v in (it.label, *it.valid))), None)
        if bad is not None:
            raise ValueError(f"{self.config}: {bad.key} has a label outside 0..{n - 1}")


def layout_error(folder: Path, what: str, expected: str) -> SourceError:
    """The one-line refusal of a wrong layout: what is wrong and the layout expected."""
    return SourceError(f"{folder}: {what}; expected layout: {expected} (builders/classification/)")


def images_in(d: Path) -> list[Path]:
    return sorted((p for p in d.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
                   and not p.name.startswith(".")), key=lambda p: p.name)


def subdirs(d: Path) -> list[Path]:
    return sorted((p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")),
                  key=lambda p: p.name)


def find_dir(root: Path, names: tuple[str, ...], expected: str) -> Path:
    """The first of ``root/<name>`` that is a folder, refusing a root without one."""
    if not root.is_dir():
        raise layout_error(root, "source folder not found", expected)
    for name in names:
        if (root / name).is_dir():
            return root / name
    raise layout_error(root, f"no {' or '.join(names)} folder", expected)


def read_json(path: Path, expected: str) -> Any:
    if not path.is_file():
        raise layout_error(path.parent, f"{path.name} is missing", expected)
    data = read_bytes_bounded(path, MAX_META_BYTES, path.name)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"{path}: not valid JSON ({exc}); fix: restore it from the release") from None


def read_mat(path: Path, expected: str) -> Any:
    """A MATLAB file (scipy.io.loadmat, squeezed)."""
    if not path.is_file():
        raise layout_error(path.parent, f"{path.name} is missing", expected)
    import scipy.io

    read_bytes_bounded(path, MAX_META_BYTES, path.name)  # size bound before parsing
    from scipy.io.matlab import MatReadError

    try:
        return scipy.io.loadmat(str(path), squeeze_me=True)
    # a truncated or foreign file: MatReadError, or IndexError/KeyError from the header reader
    except (ValueError, TypeError, OSError, NotImplementedError, IndexError, KeyError,
            MatReadError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise SourceError(f"{path}: not a readable .mat file ({first}); fix: restore it from the "
                          "release") from None


def relative_folder(d: Path, root: Path) -> str:
    d, root = d.resolve(), root.resolve()
    return d.relative_to(root).as_posix() if d.is_relative_to(root) else d.name
