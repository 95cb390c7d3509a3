"""The retrieval family's embedded sample (issue 24 item 7): 31 sample photos
with the captions written for them (builders/sample/data/captions.yaml), built
by `vlmrobust build retrieval --sample`; bad caption files are refused in one
line."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlmrobust.builders.retrieval.sample import CONFIG, read_captions, sample_rows
from vlmrobust.core.errors import SourceError


def test_every_caption_belongs_to_a_photo_of_the_sample() -> None:
    from vlmrobust.builders.sample import load_sample

    caps = read_captions()
    photos = {im.key for im in load_sample() if im.group == "photo"}
    assert len(caps) == 31 and set(caps) <= photos
    assert all(len(c) == 2 and len(set(c)) == 2 for c in caps.values())
    # sentences, not class names: several words and a full stop
    assert all(len(t.split()) >= 5 and t.endswith(".") for c in caps.values() for t in c)


def test_sample_builds_and_loads(tmp_path: Path) -> None:
    import datasets

    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.builders.families import BuildOptions, get_builder
    from vlmrobust.builders.sample import load_sample

    spec = resolve_spec("retrieval")
    out = tmp_path / "ret"
    manifest = get_builder("retrieval")(load_spec_yaml(spec), spec,
                                        BuildOptions(out=out, sample=True, progress=False))
    assert manifest["configs"] == {CONFIG: 31} and manifest["sample"] is True
    assert manifest["kind"] == "retrieval"
    ds = datasets.load_dataset(str(out), CONFIG, split="test")
    caps = read_captions()
    assert ds["id"] == [f"sample-{k}" for k in caps]
    assert ds["captions"] == [list(c) for c in caps.values()]
    files = {im.key: im.path for im in load_sample()}
    first = ds.cast_column("image", datasets.Image(decode=False))[0]
    assert first["image"]["bytes"] == Path(files[next(iter(caps))]).read_bytes()
    card = (out / "README.md").read_text()
    assert "stand-in" in card and "captions.yaml" in card
    deviations = card.split("## Deviations from the seed", 1)[1].split("\n## ", 1)[0]
    assert "K = 5" in deviations and "**Embedded sample**" in deviations


@pytest.mark.parametrize("text, fix", [
    ("- just a list\n", "mapping"),
    ("photo-skimage-chelsea: []\n", "non-empty caption"),
    ("photo-skimage-chelsea: ['a cat', '  ']\n", "non-empty caption"),
])
def test_bad_caption_file_is_refused(tmp_path: Path, text: str, fix: str) -> None:
    path = tmp_path / "captions.yaml"
    path.write_text(text)
    with pytest.raises(SourceError, match=fix) as info:
        read_captions(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_caption_of_an_unknown_photo_is_refused() -> None:
    with pytest.raises(SourceError, match="photo-nope is not a photo"):
        sample_rows({"photo-nope": ("A photo of nothing at all.",)})
