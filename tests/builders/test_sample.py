"""The embedded sample as checked in: its table and files, and how they follow
the photo and emoji tables they come from."""

from __future__ import annotations

import hashlib
import io
from collections import defaultdict

import numpy as np
from PIL import Image

from tests.fixtures.sample import OPENMOJI_SVG, PHOTO_ROWS, RENDITION_ROWS, SAMPLE
from vlmrobust.builders.sample import SAMPLE_CSV
from vlmrobust.builders.sample.emoji_table import EMOJI, STYLES
from vlmrobust.builders.sample.packages import module_root
from vlmrobust.builders.sample.photo_sources import PHOTOS
from vlmrobust.builders.sample.photos import PHOTO_KEEP_MAX_SIDE
from vlmrobust.builders.sample.render import CANVAS, render_svg
from vlmrobust.core.classes import load_imagenet_classes


def test_sample_size_and_unique_keys() -> None:
    keys = [s.key for s in SAMPLE]
    assert len(keys) == len(set(keys))
    assert len([s for s in PHOTO_ROWS if s.style == "photo"]) >= 15
    assert len([s for s in PHOTO_ROWS if s.style == "cutout"]) >= 80
    assert len(RENDITION_ROWS) >= 500
    assert len({s.class_index for s in SAMPLE}) >= 150
    assert {s.style for s in RENDITION_ROWS} == set(STYLES)
    # the two groups share classes, so photo vs rendition accuracy compares like with like
    shared = {s.class_index for s in PHOTO_ROWS} & {s.class_index for s in RENDITION_ROWS}
    assert len(shared) >= 40


def test_every_file_exists_matches_its_sha256_and_decodes() -> None:
    total = 0
    for s in SAMPLE:
        data = s.read_bytes()  # raises on a sha256 mismatch
        assert hashlib.sha256(data).hexdigest() == s.sha256
        total += len(data)
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            if s.group == "rendition":
                assert (im.format, im.mode, im.size) == ("PNG", "RGB", (CANVAS, CANVAS))
                # white margin: the drawing sits inside the canvas
                assert im.getpixel((0, 0)) == (255, 255, 255)
            else:
                assert im.format in ("JPEG", "PNG")
                if s.style == "cutout":  # flattened on white with a margin
                    assert (im.format, im.mode) == ("PNG", "RGB")
                    assert (
                        im.getpixel((0, 0))
                        == im.getpixel((im.width - 1, im.height - 1))
                        == (
                            255,
                            255,
                            255,
                        )
                    )
                assert max(im.size) <= PHOTO_KEEP_MAX_SIDE
    assert total < 15_000_000


def test_no_unlisted_files_in_images() -> None:
    on_disk = {
        p.relative_to(SAMPLE_CSV.parent)
        for p in (SAMPLE_CSV.parent / "images").rglob("*")
        if p.is_file()
    }
    listed = {s.path.relative_to(SAMPLE_CSV.parent) for s in SAMPLE}
    assert on_disk == listed


def test_class_columns_agree_with_the_class_table() -> None:
    classes = load_imagenet_classes()
    for s in SAMPLE:
        assert 0 <= s.class_index < 1000
        assert s.wnid == classes[s.class_index].wnid, s.key
        assert s.class_name == classes[s.class_index].name, s.key


def test_every_rendition_class_has_at_least_two_styles() -> None:
    styles: dict[int, set[str]] = defaultdict(set)
    for s in RENDITION_ROWS:
        styles[s.class_index].add(s.style)
    thin = {c: st for c, st in styles.items() if len(st) < 2}
    assert not thin
    # most classes come in four or more styles: a genuine rendition shift
    assert np.mean([len(st) for st in styles.values()]) >= 4.5


def test_table_rows_follow_the_source_tables() -> None:
    by_codepoints = {e.codepoints: e for e in EMOJI}
    for s in RENDITION_ROWS:
        style, codepoints = next(
            (st, s.key.removeprefix(f"rendition-{st}-"))
            for st in STYLES
            if s.key.startswith(f"rendition-{st}-")
        )
        emoji = by_codepoints[codepoints]
        assert s.style == style
        assert s.class_index == emoji.class_index
        assert style not in emoji.skip_styles
    photos = {p.key: p for p in PHOTOS}
    assert {s.key for s in PHOTO_ROWS} == set(photos)
    for s in PHOTO_ROWS:
        assert s.class_index == photos[s.key].class_index
        assert s.origin_path.endswith(photos[s.key].path) or "#crop=" in s.origin_path


def test_kept_photos_are_the_package_bytes() -> None:
    chelsea = next(s for s in PHOTO_ROWS if s.key == "photo-skimage-chelsea")
    original = module_root("scikit-image") / "data" / "chelsea.png"
    assert chelsea.read_bytes() == original.read_bytes()


def test_checked_in_openmoji_renditions_match_a_fresh_render() -> None:
    for slug in ("flamingo", "banana", "violin"):
        emoji = next(e for e in EMOJI if e.slug == slug)
        row = next(s for s in RENDITION_ROWS if s.key == f"rendition-openmoji-{emoji.codepoints}")
        fresh = np.asarray(render_svg(OPENMOJI_SVG / f"{emoji.codepoints}.svg"), dtype=np.float64)
        with Image.open(row.path) as im:
            stored = np.asarray(im.convert("RGB"), dtype=np.float64)
        # a rasteriser update may move anti-aliasing by a level; a wrong emoji moves far more
        assert np.abs(fresh - stored).mean() < 2.0
