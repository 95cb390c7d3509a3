"""ImageNet-V2: the spec names the release (matched-frequency by default); the
build reads exactly that release's folder and the manifest and card name it.
Another release's folder is never used in its place (issue 22.11)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.build import build
from vlmrobust.builders.imagenet_mcq.spec import parse_spec
from vlmrobust.builders.sources import read_variant, variant_dir
from vlmrobust.core.errors import SourceError, SpecError

MF = "imagenetv2-matched-frequency-format-val"
TH = "imagenetv2-threshold0.7-format-val"


def _release(root: Path, folder: str, classes: tuple[int, ...] = (0, 1, 2, 3, 4, 5),
             seed: int = 0) -> Path:
    for c in classes:
        d = root / folder / str(c)
        d.mkdir(parents=True, exist_ok=True)
        arr = (np.random.default_rng(seed + c).random((16, 16, 3)) * 255).astype(np.uint8)
        Image.fromarray(arr).save(d / f"{c}.jpeg")
    return root / folder


def test_the_named_release_is_read_never_another(tmp_path: Path) -> None:
    _release(tmp_path, TH)
    with pytest.raises(SourceError, match=rf"no {MF} folder, but .*{TH}.*'threshold0.7'.*"
                                          "release: threshold0.7"):
        read_variant("imagenet-v2", tmp_path)
    assert variant_dir("imagenet-v2", tmp_path, "threshold0.7") == tmp_path / TH
    _release(tmp_path, MF, classes=(7, 8))
    assert variant_dir("imagenet-v2", tmp_path) == tmp_path / MF
    assert [s.labels for s in read_variant("imagenet-v2", tmp_path)] == [(7,), (8,)]
    # passing a release's own folder as the root: it must be the one asked for
    with pytest.raises(SourceError, match=r"holds ImageNet-V2's 'threshold0\.7' release"):
        variant_dir("imagenet-v2", tmp_path / TH)
    assert variant_dir("imagenet-v2", tmp_path / MF) == tmp_path / MF


def test_releases_nested_under_imagenet_v2(tmp_path: Path) -> None:
    _release(tmp_path / "imagenet-v2", TH)
    _release(tmp_path / "imagenet-v2", MF)
    assert variant_dir("imagenet-v2", tmp_path) == tmp_path / "imagenet-v2" / MF
    assert variant_dir("imagenet-v2", tmp_path, "threshold0.7") == tmp_path / "imagenet-v2" / TH


def _spec(release: str | None) -> dict:
    raw = load_spec_yaml(resolve_spec("imagenet-mcq"))
    v2 = next(v for v in raw["variants"] if v["name"] == "imagenet-v2")
    if release is None:
        v2 = {k: v for k, v in v2.items() if k != "release"}
    else:
        v2 = {**v2, "release": release}
    return {**raw, "strategies": ["random"], "questions_per_variant": 4, "variants": [v2],
            "reference_variant": "imagenet-v2", "clean_labels": None,
            "visual": raw["sample"]["visual"]}


@pytest.mark.parametrize("release, folder", [(None, MF), ("threshold0.7", TH)])
def test_manifest_and_card_name_the_release(tmp_path: Path, release: str | None,
                                            folder: str) -> None:
    root = tmp_path / "src"
    _release(root, MF)
    _release(root, TH, seed=50)
    out = tmp_path / "ds"
    m = build(_spec(release), Path("s.yaml"), BuildOptions(out=out, source_root=root,
                                                           progress=False))
    want = release or "matched-frequency"
    assert m["imagenet_v2_release"] == want
    assert m["source_folders"] == {"imagenet-v2": folder}
    card = (out / "README.md").read_text()
    assert f"`imagenet-v2`: `{folder}` under `--source-root` (ImageNet-V2 release `{want}`" in card
    assert ("**not** matched-frequency" in card) == (release is not None)


def test_shipped_spec_names_matched_frequency() -> None:
    path = resolve_spec("imagenet-mcq")
    spec = parse_spec(load_spec_yaml(path), path)
    assert next(v for v in spec.variants if v.name == "imagenet-v2").release == \
        "matched-frequency"


@pytest.mark.parametrize("variant, needle", [
    ({"name": "imagenet-v2", "licence": "MIT", "release": "matched"}, "not one of"),
    ({"name": "imagenet-r", "licence": "MIT", "release": "top-images"}, "imagenet-v2 only"),
])
def test_bad_release_names_the_spec(variant: dict, needle: str) -> None:
    raw = {**_spec(None), "variants": [variant], "reference_variant": variant["name"]}
    with pytest.raises(SpecError, match=needle):
        parse_spec(raw, Path("s.yaml"))
