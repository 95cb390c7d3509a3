"""Readers for the published on-disk layouts of the OOD sets seed 001 evaluates
against ImageNet-1k (the ID set, ImageNet val, is read by builders/sources.py).

Under a source root (``--source-root``), each set lives in its release's folder
(image files: .jpg .jpeg .png .bmp .webp, any case; dot-files ignored):

- ``inaturalist``, ``sun``, ``places``: the MOS subsets (Huang & Li 2021, the
  10,000-image curated iNaturalist / SUN / Places sets with no ImageNet-1k
  concept), flat: ``iNaturalist/images/*.jpg``, ``SUN/images/*.jpg``,
  ``Places/images/*.jpg``;
- ``textures``: the Describable Textures Dataset as MOS uses it (all 5,640
  images), ``dtd/images/<texture>/*.jpg`` (47 texture folders); a folder is
  the image's texture category, its ``ood_class``;
- ``imagenet-o`` (Hendrycks et al. 2021): ``imagenet-o/<wnid>/*.jpg`` (200 wnid
  folders; a README beside them is ignored). A wnid folder names the ImageNet
  class a ResNet-50 confidently (and wrongly) gave the image when the set was
  adversarially filtered, not what the image shows, so it is not an
  ``ood_class``: a "class-mean AUROC" over it would average over one model's
  mistakes;
- ``ninco`` (Bitterwolf et al. 2023): ``NINCO_OOD_classes/<class>/*.jpg`` (64
  classes, 5,879 images in the release), found as ``NINCO/NINCO_OOD_classes``,
  ``NINCO_all/NINCO/NINCO_OOD_classes`` or ``NINCO_OOD_classes`` under the root.
  Its class folders are its class list: NINCO's class-mean AUROC averages the
  AUROC of each class (row column ``ood_class``).

A folder that is there in another shape (images where class folders belong, a
class folder without images, an unexpected sub-folder) is refused in one line
naming the layout expected; a set whose folder is absent is not built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.builders.sources import IMAGE_SUFFIXES
from vlmrobust.core.errors import SourceError

_WNID = re.compile(r"^n\d{8}$")


@dataclass(frozen=True)
class OodLayout:
    """Where a set lives and its shape: ``flat`` (images in ``inner``), ``classes``
    (class folders in ``inner``) or ``wnid`` (wnid folders in ``inner``)."""

    name: str
    folders: tuple[str, ...]  # tried under the source root, in order
    inner: str  # the folder holding images / class folders, below the set's folder
    shape: str
    example: str
    # rows carry ood_class (NINCO's class-mean AUROC; per-class breakdowns of DTD)
    classes_are_ood_classes: bool = False


LAYOUTS: dict[str, OodLayout] = {
    "inaturalist": OodLayout("inaturalist", ("iNaturalist",), "images", "flat",
                             "iNaturalist/images/*.jpg"),
    "sun": OodLayout("sun", ("SUN",), "images", "flat", "SUN/images/*.jpg"),
    "places": OodLayout("places", ("Places",), "images", "flat", "Places/images/*.jpg"),
    "textures": OodLayout("textures", ("dtd",), "images", "classes", "dtd/images/<texture>/*.jpg",
                          classes_are_ood_classes=True),
    "imagenet-o": OodLayout("imagenet-o", ("imagenet-o",), "", "wnid", "imagenet-o/<wnid>/*.jpg"),
    "ninco": OodLayout("ninco", ("NINCO", "NINCO_all/NINCO", "."), "NINCO_OOD_classes", "classes",
                       "NINCO/NINCO_OOD_classes/<class>/*.jpg", classes_are_ood_classes=True),
}


@dataclass(frozen=True)
class OodImage:
    """One OOD image: ``key`` (posix path below the set's image folder; id
    material and ``source_file``), its ``path`` and its class folder ("" when flat)."""

    key: str
    path: Path
    folder: str


@dataclass(frozen=True)
class OodSet:
    name: str
    folder: Path  # the set's folder under the source root
    images: tuple[OodImage, ...]

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(im.folder for im in self.images if im.folder))


def _is_image(p: Path) -> bool:
    return p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")


def _children(d: Path) -> tuple[list[Path], list[Path]]:
    """(sub-folders, image files) of ``d``, sorted by name; dot-entries ignored."""
    entries = sorted((p for p in d.iterdir() if not p.name.startswith(".")), key=lambda p: p.name)
    return [p for p in entries if p.is_dir()], [p for p in entries if _is_image(p)]


def set_folder(name: str, root: Path) -> Path | None:
    """The folder of set ``name`` under ``root`` (None: absent)."""
    lay = LAYOUTS[name]
    for f in lay.folders:
        cand = root / f
        if (cand / lay.inner if lay.inner else cand).is_dir():
            return cand
    # the set's own folder without its inner folder: there, but in another shape
    return next((root / f for f in lay.folders if f != "." and (root / f).is_dir()), None)


def read_ood_set(name: str, root: Path | str, limit: int | None = None) -> OodSet | None:
    """The images of OOD set ``name`` under ``root`` sorted by key (the first
    ``limit`` only, when given), or None when its folder is absent."""
    if name not in LAYOUTS:
        raise SourceError(f"unknown OOD set {name!r}; fix: use one of {', '.join(LAYOUTS)}")
    lay = LAYOUTS[name]
    root = Path(root)
    d = set_folder(name, root)
    if d is None:
        return None
    inner = d / lay.inner if lay.inner else d
    expect = f"expected {lay.example} (builders/ood/layouts.py)"
    if not inner.is_dir():
        raise SourceError(f"{d}: no {lay.inner}/ folder; {expect}; fix: extract {name} as released")
    subdirs, files = _children(inner)
    images: list[OodImage] = []
    if lay.shape == "flat":
        if subdirs:
            raise SourceError(f"{subdirs[0]}: unexpected folder in {name}; {expect}; fix: move "
                              "its images up or remove it")
        images = [OodImage(p.name, p, "") for p in files]
    else:
        if files and lay.shape == "classes":
            raise SourceError(f"{files[0]}: image outside a class folder in {name}; {expect}; "
                              "fix: extract the release's class folders here")
        if not subdirs:
            raise SourceError(f"{inner}: no class folders; {expect}")
        for sub in subdirs:
            if lay.shape == "wnid" and not _WNID.match(sub.name):
                raise SourceError(f"{sub}: unexpected folder in {name} (not a wnid like "
                                  f"n01443537); {expect}; fix: move or remove it")
            nested, own = _children(sub)
            if nested:
                raise SourceError(f"{nested[0]}: unexpected folder in {name}; {expect}")
            if not own:
                raise SourceError(f"{sub}: class folder without images; {expect}; fix: restore "
                                  "its images or remove it")
            images += [OodImage(f"{sub.name}/{p.name}", p, sub.name) for p in own]
    if not images:
        raise SourceError(f"{inner}: no images; {expect}")
    images.sort(key=lambda im: im.key)
    return OodSet(name, d, tuple(images[:limit] if limit is not None else images))
