"""One image of an ImageNet variant's download with its valid labels, and the
listing of a folder's images and sub-folders: shared by the variant readers
(:mod:`vlmrobust.builders.sources`) and ObjectNet's layout
(:mod:`vlmrobust.builders.objectnet_layout`), below both (issue 38.4: no import
circles)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vlmrobust.core.classes import N_CLASSES

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp"})


@dataclass(frozen=True)
class SourceImage:
    """One source image: ``key`` (posix path relative to the variant folder; stable
    id material), its ``path`` and its valid IN-1k ``labels`` (first = the
    dataset's own label when valid; empty = no valid label)."""

    key: str
    path: Path
    labels: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.key or self.key.startswith("/"):
            raise ValueError(f"source key must be a relative path, got {self.key!r}")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"{self.key}: duplicate labels {self.labels}")
        if not all(0 <= x < N_CLASSES for x in self.labels):
            raise ValueError(f"{self.key}: labels {self.labels} outside 0..{N_CLASSES - 1}")


def _is_image(p: Path) -> bool:
    return p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")


def _subdirs(d: Path) -> list[Path]:
    return sorted((p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)


def _images_in(d: Path) -> list[Path]:
    return sorted((p for p in d.iterdir() if p.is_file() and _is_image(p)), key=lambda p: p.name)
