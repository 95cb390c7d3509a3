"""Readers for the on-disk layouts in which users download the ImageNet variants.

``read_variant(variant, root, clean_labels=None)`` returns the variant's images
in a deterministic (sorted by key) order, each with its valid IN-1k labels.
``root`` is a source root that holds the variant under one of the names in
:data:`VARIANT_DIRS` (first match wins; so one ``--source-root`` serves every
variant), or else the variant's own folder.

Layouts (image files: .jpg .jpeg .png .bmp .webp, any case; dot-files ignored):

- ``imagenet-val``: class folders ``nXXXXXXXX/*.JPEG``; or flat
  ``ILSVRC2012_val_XXXXXXXX.JPEG`` files with a label file beside them
  (``LOC_val_solution.csv`` from Kaggle, or a ``val.txt``-style list of
  ``<file> <class index>`` lines), else the original val labels shipped with this package.
- ``imagenet-v2``: folders ``0``..``999`` named by class index (the official tarballs),
  in ``imagenetv2-<release>-format-val/`` (directly or under ``imagenet-v2/``) for the
  release asked for (default matched-frequency; another release is refused), or in a
  plain ``imagenet-v2/``, taken to hold that release.
- ``imagenet-r`` / ``imagenet-a``: wnid folders, 200 classes each.
- ``imagenet-sketch``: wnid folders, directly or under ``sketch/``.
- ``objectnet``: ``images/<folder>/*.png`` and ``mappings/`` (``objectnet_to_imagenet_1k.json``,
  ``folder_to_objectnet_label.json``), directly or under ``objectnet-1.0/``; only the
  folders whose class maps to IN-1k are read, labelled with every IN-1k class they map to.

Clean labels (``imagenet-val`` only; the released relabelings cover ImageNet val, so
the same argument may be passed for every variant and is not used by the others):

- ``"real"``: the ReaL labels shipped with this package (Beyer et al. 2020);
- a path to the official ``real.json`` (a JSON list of 50,000 label lists in val order);
- a path to Kisel et al.'s ``clean_validation.csv`` ("Flaws of ImageNet"), in its
  published format ``id,original_label,proposed_labels,validation`` (builders/labels.py);
- a path to a JSON object ``{file: [label, ...]}`` (e.g. a conversion of the same):
  ``file`` is a val file name (directory and extension optional), each label an IN-1k
  index or wnid; an empty list means the image has no valid label;
- a mapping of the same shape.

With clean labels, an image's valid labels are its clean labels. Answer rule: the
image's own (folder / original) label when it is among them, else the first listed
one; all the others are valid too and never distractors. Images with no valid label
are dropped. With the Kisel CSV or a JSON object, only listed images are in the clean
set (an absent image is left out); with ReaL every val image must be listed.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from vlmrobust.builders.labels import (
    CleanLabels,
    CleanLabelSet,
    file_stem,
    load_clean_label_set,
    load_clean_labels,
    parse_label,
)
from vlmrobust.builders.source_image import (  # noqa: F401  (IMAGE_SUFFIXES: re-exported)
    IMAGE_SUFFIXES,
    SourceImage,
    _images_in,
    _subdirs,
)

__all__ = ["SourceImage", "load_clean_labels", "read_val_label_file", "read_variant",
           "variant_dir"]

from vlmrobust.core.classes import (
    N_CLASSES,
    VARIANTS,
    class_by_wnid,
    label_space,
    val_labels,
)
from vlmrobust.core.errors import SourceError, VlmrobustError

_WNID = re.compile(r"^n\d{8}$")
_VAL_FILE = re.compile(r"^ILSVRC2012_val_\d{8}$")

#: ImageNet-V2's three releases (the tarballs' folders are
#: ``imagenetv2-<release>-format-val``); the spec names the one to use
#: (``release`` of the imagenet-v2 variant, default matched-frequency).
V2_RELEASES = ("matched-frequency", "threshold0.7", "top-images")
V2_DEFAULT_RELEASE = "matched-frequency"


def v2_folder(release: str) -> str:
    return f"imagenetv2-{release}-format-val"


#: Sub-folder names tried under a source root, per variant, in order (for
#: imagenet-v2: the named release's folder, directly or under imagenet-v2/, then a
#: plain imagenet-v2/ of class folders, taken to hold the release the spec names).
VARIANT_DIRS: dict[str, tuple[str, ...]] = {
    "imagenet-val": ("imagenet-val", "val", "imagenet/val", "ILSVRC/Data/CLS-LOC/val"),
    "imagenet-v2": ("imagenet-v2",),
    "imagenet-r": ("imagenet-r",),
    "imagenet-a": ("imagenet-a",),
    "imagenet-sketch": ("imagenet-sketch", "sketch"),
    "objectnet": ("objectnet", "objectnet-1.0"),
}
VAL_LABEL_FILES = ("LOC_val_solution.csv", "val.txt", "val_labels.txt")


def _looks_like(variant: str, d: Path) -> bool:
    names = {p.name for p in _subdirs(d)}
    if variant == "objectnet":
        return "images" in names or "mappings" in names
    if variant == "imagenet-v2":
        return any(n.isdigit() for n in names)
    if any(_WNID.match(n) for n in names):
        return True
    return variant == "imagenet-val" and any(_VAL_FILE.match(p.stem) for p in _images_in(d))


def _v2_dir(root: Path, release: str | None) -> Path | None:
    """ImageNet-V2's folder for ``release``: never another release's in its place."""
    release = release or V2_DEFAULT_RELEASE
    if release not in V2_RELEASES:
        raise VlmrobustError(f"imagenet-v2 release {release!r} is not one of "
                             f"{', '.join(V2_RELEASES)}; fix the spec's 'release'")
    if root.name == v2_folder(release):
        return root
    other = next((r for r in V2_RELEASES if root.name == v2_folder(r)), None)
    if other is not None:
        raise SourceError(
            f"{root} holds ImageNet-V2's {other!r} release, not {release!r}; fix: pass the "
            f"{release} release, or set 'release: {other}' on the imagenet-v2 variant")
    for cand in (root / v2_folder(release), root / "imagenet-v2" / v2_folder(release)):
        if cand.is_dir():
            return cand
    others = [p for r in V2_RELEASES if r != release
              for p in (root / v2_folder(r), root / "imagenet-v2" / v2_folder(r)) if p.is_dir()]
    if others:
        found = others[0].name.removeprefix("imagenetv2-").removesuffix("-format-val")
        raise SourceError(
            f"{root}: no {v2_folder(release)} folder, but {others[0]} holds ImageNet-V2's "
            f"{found!r} release; fix: add the {release} release, or set 'release: {found}' "
            "on the imagenet-v2 variant of the spec (the card and manifest then name it)")
    plain = root / "imagenet-v2"
    if plain.is_dir() and any(n.name.isdigit() for n in _subdirs(plain)):
        return plain
    return None


def variant_dir(variant: str, root: Path | str, release: str | None = None) -> Path:
    """The folder holding ``variant`` under ``root`` (``root`` itself if it is one).
    ``release`` picks ImageNet-V2's release (default matched-frequency); a folder of
    another release is refused rather than used in its place."""
    if variant not in VARIANTS:
        raise VlmrobustError(f"unknown variant {variant!r}; fix: use one of {', '.join(VARIANTS)}")
    root = Path(root)
    if not root.is_dir():
        raise SourceError(f"{root}: source folder not found; fix: pass the folder that holds {variant}")
    if variant == "imagenet-v2":
        found = _v2_dir(root, release)
        if found is not None:
            return found
    for name in VARIANT_DIRS[variant]:
        cand = root / name
        if cand.is_dir():
            if variant == "imagenet-sketch" and (cand / "sketch").is_dir():
                cand = cand / "sketch"
            return cand
    if _looks_like(variant, root):
        return root
    raise SourceError(
        f"{root}: no {variant} folder found; fix: put it at {root / VARIANT_DIRS[variant][0]} "
        f"(layout: see builders/sources.py)"
    )


def _wnid_folders(d: Path, variant: str, space: set[int]) -> list[tuple[str, Path, int]]:
    """(key, path, label) for every image in wnid class folders of ``d``."""
    out: list[tuple[str, Path, int]] = []
    subdirs = _subdirs(d)
    if not subdirs:
        raise SourceError(f"{d}: no class folders (nXXXXXXXX/) found; fix: extract {variant} here")
    for sub in subdirs:
        if not _WNID.match(sub.name):
            raise SourceError(f"{sub}: unexpected folder in {variant} (not a wnid like n01440764); fix: move or remove it")
        try:
            label = class_by_wnid(sub.name).index
        except VlmrobustError:
            raise SourceError(f"{sub}: {sub.name} is not an ImageNet-1k class; fix: remove this folder") from None
        if label not in space:
            raise SourceError(f"{sub}: class {sub.name} is not in the {variant} label space; fix: remove this folder")
        out.extend((f"{sub.name}/{p.name}", p, label) for p in _images_in(sub))
    return out


def _index_folders(d: Path) -> list[tuple[str, Path, int]]:
    out: list[tuple[str, Path, int]] = []
    for sub in _subdirs(d):
        if not (sub.name.isdigit() and 0 <= int(sub.name) < N_CLASSES and str(int(sub.name)) == sub.name):
            raise SourceError(f"{sub}: imagenet-v2 class folders are named 0..999; fix: move or remove this folder")
        out.extend((f"{sub.name}/{p.name}", p, int(sub.name)) for p in _images_in(sub))
    return out


def read_val_label_file(path: Path) -> dict[str, int]:
    """File stem -> label from ``LOC_val_solution.csv`` (``ImageId,PredictionString``, first
    wnid of the prediction string) or a ``<file> <index or wnid>`` list (``val.txt``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: cannot read label file ({exc}); fix: restore it") from exc
    out: dict[str, int] = {}
    if path.suffix.lower() == ".csv":
        rows = list(csv.reader(text.splitlines()))
        if not rows or [c.strip() for c in rows[0][:2]] != ["ImageId", "PredictionString"]:
            raise SourceError(f"{path}: row 1 must be the header 'ImageId,PredictionString'; fix: use Kaggle's LOC_val_solution.csv")
        for n, row in enumerate(rows[1:], start=2):
            if len(row) < 2 or not row[1].split():
                raise SourceError(f"{path}: row {n} has no PredictionString; fix: restore the file")
            out[file_stem(row[0].strip())] = parse_label(row[1].split()[0], f"{path}: row {n}")
        return out
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise SourceError(f"{path}: line {n} is not '<file> <label>'; fix: one image per line")
        out[file_stem(parts[0])] = parse_label(parts[1], f"{path}: line {n}")
    return out


@functools.lru_cache(maxsize=1)
def _val_byfile_stem() -> dict[str, int]:
    return {file_stem(k): v for k, v in val_labels().items()}


def _flat_val(d: Path, label_file: Path | None, root: Path) -> list[tuple[str, Path, int]]:
    images = _images_in(d)
    if not images:
        raise SourceError(f"{d}: no images and no class folders; fix: extract ImageNet val here")
    if label_file is None:
        # Beside the images, one level up, or at the given root (Kaggle keeps
        # LOC_val_solution.csv at the top, the images in ILSVRC/Data/CLS-LOC/val).
        found = [p / n for p in dict.fromkeys((d, d.parent, root)) for n in VAL_LABEL_FILES if (p / n).is_file()]
        label_file = found[0] if found else None
    if label_file is not None:
        labels = read_val_label_file(label_file)
        where = str(label_file)
    else:
        labels = _val_byfile_stem()
        where = "the ILSVRC-2012 val labels shipped with vlmrobust"
    out = []
    for p in images:
        if p.stem not in labels:
            raise SourceError(
                f"{p}: not listed in {where}; fix: use the label file that belongs to these images "
                f"({' or '.join(VAL_LABEL_FILES)})"
            )
        out.append((p.name, p, labels[p.stem]))
    return out


def _apply_clean(
    items: Iterable[tuple[str, Path, int]], clean: CleanLabelSet | None, where: str
) -> list[SourceImage]:
    out = []
    table: Mapping[str, tuple[int, ...]] = clean.labels if clean is not None else {}
    for key, path, own in items:
        if clean is None:
            labels: tuple[int, ...] = (own,)
        else:
            stem = path.stem
            if stem not in table:
                if clean.subset:
                    continue  # not in the clean set
                raise SourceError(f"{path}: not in the clean labels ({where}); fix: use the clean-label file for these images")
            valid = table[stem]
            labels = (own, *(x for x in valid if x != own)) if own in valid else tuple(valid)
        if labels:
            out.append(SourceImage(key=key, path=path, labels=labels))
    return sorted(out, key=lambda s: s.key)


def read_variant(
    variant: str,
    root: Path | str,
    clean_labels: CleanLabels = None,
    *,
    label_file: Path | str | None = None,
    release: str | None = None,
) -> list[SourceImage]:
    """The images of ``variant`` under ``root`` with their valid labels, sorted by key.

    ``label_file`` overrides the label-file search of the flat ``imagenet-val`` layout;
    ``release`` names ImageNet-V2's release (``variant_dir``).
    Images with no valid label are left out.
    """
    d = variant_dir(variant, root, release)
    items: list[tuple[str, Path, int]]
    if variant == "objectnet":
        from vlmrobust.builders.objectnet_layout import read_objectnet

        result = read_objectnet(d)
    else:
        if variant == "imagenet-val":
            if any(_WNID.match(p.name) for p in _subdirs(d)):
                items = _wnid_folders(d, variant, set(range(N_CLASSES)))
            else:
                items = _flat_val(d, Path(label_file) if label_file is not None else None, Path(root))
        elif variant == "imagenet-v2":
            items = _index_folders(d)
        else:
            items = _wnid_folders(d, variant, set(label_space(variant)))
        clean = load_clean_label_set(clean_labels) if variant == "imagenet-val" else None
        where = str(clean_labels) if isinstance(clean_labels, (str, Path)) else "clean labels"
        result = _apply_clean(items, clean, where)
    if not result:
        raise SourceError(f"{d}: no {variant} images with a valid label found; fix: check the folder and layout")
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m vlmrobust.builders.sources VARIANT ROOT [--clean-labels X]``: check a layout."""
    import argparse
    import sys
    from collections import Counter

    parser = argparse.ArgumentParser(prog="python -m vlmrobust.builders.sources", description="Check an on-disk variant layout.")
    parser.add_argument("variant", choices=VARIANTS)
    parser.add_argument("root", type=Path)
    parser.add_argument("--clean-labels", default=None,
                        help="'real', Kisel et al.'s clean_validation.csv or a clean-label JSON (imagenet-val)")
    parser.add_argument("--label-file", type=Path, default=None, help="label file of the flat imagenet-val layout")
    args = parser.parse_args(argv)
    try:
        images = read_variant(args.variant, args.root, args.clean_labels, label_file=args.label_file)
    except VlmrobustError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    per_class = Counter(s.labels[0] for s in images)
    multi = sum(len(s.labels) > 1 for s in images)
    print(
        f"{args.variant}: {len(images)} images, {len(per_class)} classes, "
        f"{multi} with several valid labels, from {variant_dir(args.variant, args.root)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
