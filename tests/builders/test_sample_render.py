"""The sample's rendering helpers: canvas fitting, SVG and font rasterising,
photo downscaling, and the emoji and photo table records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlmrobust.builders.sample.emoji_table import EmojiClass
from vlmrobust.builders.sample.packages import module_root
from vlmrobust.builders.sample.photo_sources import PhotoSource
from vlmrobust.builders.sample.render import (
    CANVAS,
    downscale_photo,
    encode_png,
    fit_on_canvas,
    font_has_glyph,
    render_font_glyph,
    render_svg,
)
from vlmrobust.core.errors import SourceError

DEJAVU = module_root("matplotlib") / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"


def test_fit_on_canvas_centres_and_scales_the_drawing() -> None:
    im = Image.new("RGBA", (300, 100), (0, 0, 0, 0))
    im.paste((0, 0, 255, 255), (100, 40, 160, 70))  # a 60 x 30 box
    out = np.asarray(fit_on_canvas(im, canvas=100, artwork=80))
    blue = np.argwhere((out[:, :, 2] > 200) & (out[:, :, 0] < 50))
    (top, left), (bottom, right) = blue.min(axis=0), blue.max(axis=0)
    # 60x30 scaled by 80/60 -> 80x40, centred in 100x100: columns 10..89, rows 30..69
    assert (left, right) == (10, 89)
    assert (top, bottom) == (30, 69)
    with pytest.raises(SourceError, match="fully transparent"):
        fit_on_canvas(Image.new("RGBA", (10, 10), (0, 0, 0, 0)))


def test_render_svg_draws_the_shape_and_is_deterministic(tmp_path: Path) -> None:
    svg = tmp_path / "dot.svg"
    svg.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">'
        '<rect x="2" y="2" width="6" height="3" fill="#ff0000"/></svg>',
        encoding="utf-8",
    )
    a, b = render_svg(svg), render_svg(svg)
    assert encode_png(a) == encode_png(b)
    arr = np.asarray(a)
    inked = np.argwhere(arr.min(axis=2) < 250)
    width = inked[:, 1].max() - inked[:, 1].min() + 1
    height = inked[:, 0].max() - inked[:, 0].min() + 1
    assert abs(width - 192) <= 2 and abs(height - 96) <= 2  # 2:1 box fitted to 192 px
    assert tuple(arr[112, 112]) == (255, 0, 0)
    broken = tmp_path / "broken.svg"
    broken.write_text("<svg", encoding="utf-8")
    with pytest.raises(SourceError, match="cannot rasterise SVG"):
        render_svg(broken)


def test_font_glyphs_render_and_missing_glyphs_are_detected() -> None:
    assert font_has_glyph(DEJAVU, "A")
    assert not font_has_glyph(DEJAVU, EmojiClass("1F9A9", "flamingo", 130, "flamingo").text)
    arr = np.asarray(render_font_glyph(DEJAVU, "I", 120, color=False))
    dark = np.argwhere(arr.min(axis=2) < 100)
    # an "I" is a tall bar: scaled to 192 px high, centred horizontally
    assert dark[:, 0].max() - dark[:, 0].min() + 1 >= 190
    assert abs((dark[:, 1].min() + dark[:, 1].max()) / 2 - CANVAS / 2) <= 2


def test_downscale_photo_keeps_aspect_and_never_upscales() -> None:
    assert downscale_photo(Image.new("RGB", (2000, 1000))).size == (512, 256)
    assert downscale_photo(Image.new("L", (100, 50))).mode == "RGB"
    assert downscale_photo(Image.new("RGB", (100, 50))).size == (100, 50)


def test_emoji_class_validation() -> None:
    assert EmojiClass("2708-FE0F", "airplane", 404, "airliner").base == "2708"
    assert EmojiClass("2708-FE0F", "airplane", 404, "airliner").text == "\u2708\ufe0f"
    with pytest.raises(ValueError, match="bad codepoints"):
        EmojiClass("1f9a9", "flamingo", 130, "flamingo")
    with pytest.raises(ValueError, match="unknown styles"):
        EmojiClass("1F9A9", "flamingo", 130, "flamingo", skip_styles=("crayon",))
    with pytest.raises(ValueError, match="outside"):
        PhotoSource("x", "scikit-image", "data/x.png", -1, "x", "CC0")
