"""imagenet-mcq on the embedded sample through the CLI, with the real
EfficientNet-Lite0 embedder and WordNet (a few images per variant via --limit;
the demo builds the whole sample)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.build import build, wordnet_similarity
from vlmrobust.builders.sample import load_sample
from vlmrobust.cli import main
from vlmrobust.core.datadir import read_manifest, read_table

LIMIT = 6
CONFIGS = [f"sample-{g}-{s}" for g in ("photo", "rendition")
           for s in ("random", "wordnet", "visual")]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "imagenet-mcq"
    rc = main(["build", "imagenet-mcq", "--sample", "--out", str(out),
               "--limit", str(LIMIT), "--no-progress"])
    assert rc == 0
    return out


def test_manifest_and_configs(built: Path) -> None:
    m = read_manifest(built)
    assert m["sample"] is True
    assert m["spec"]["name"] == "imagenet-mcq"
    assert m["reference_variant"] == "sample-photo"
    assert list(m["configs"]) == CONFIGS
    assert set(m["configs"].values()) == {LIMIT}
    assert m["prompts"]["photo-of"] == "A photo of a {class}"


def test_questions_clean_balanced_and_licensed(built: Path) -> None:
    sample = {im.key: im for im in load_sample()}
    card = (built / "README.md").read_text()
    for config in CONFIGS:
        rows = read_table(built, config).to_pylist()
        counts = np.bincount([r["answer"] for r in rows], minlength=5)
        assert counts.max() - counts.min() <= 1
        for r in rows:
            assert len(set(r["options"])) == 5 == len(set(r["option_class_ids"]))
            assert r["option_class_ids"][r["answer"]] == r["label"]
            assert r["option_class_ids"].count(r["label"]) == 1
    photo_rows = read_table(built, "sample-photo-random").to_pylist()
    images = {im.path.read_bytes(): im for im in sample.values()}
    for r in photo_rows:
        im = images[r["image"]["bytes"]]  # bytes kept as checked in
        assert im.group == "photo" and im.class_index == r["label"]
        assert im.licence in card


def test_wordnet_and_visual_are_harder_than_random(built: Path) -> None:
    from vlmrobust.models import load_adapter

    sim = wordnet_similarity(tuple(range(1000)))
    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    protos = adapter.class_prototypes()

    def distractor_stat(config: str, visual: bool) -> float:
        rows = read_table(built, config).to_pylist()
        if visual:
            q = adapter.embed_images([Image.open(io.BytesIO(r["image"]["bytes"])) for r in rows])
        vals = []
        for i, r in enumerate(rows):
            for j, c in enumerate(r["option_class_ids"]):
                if j != r["answer"]:
                    vals.append(float(q[i] @ protos[c]) if visual
                                else sim.similarity(r["label"], c))
        return float(np.mean(vals))

    for g in ("photo", "rendition"):
        assert distractor_stat(f"sample-{g}-wordnet", False) > \
            distractor_stat(f"sample-{g}-random", False) + 0.1
        assert distractor_stat(f"sample-{g}-visual", True) > \
            distractor_stat(f"sample-{g}-random", True) + 0.02


def test_same_seed_same_fingerprint_other_seed_other_questions(built: Path,
                                                               tmp_path: Path) -> None:
    raw = load_spec_yaml(resolve_spec("imagenet-mcq"))
    again = build(raw, Path("imagenet-mcq.yaml"),
                  BuildOptions(out=tmp_path / "a", sample=True, progress=False, limit=LIMIT))
    assert again["fingerprint"] == read_manifest(built)["fingerprint"]
    other = build({**raw, "seed": raw["seed"] + 1, "strategies": ["random"]},
                  Path("imagenet-mcq.yaml"),
                  BuildOptions(out=tmp_path / "b", sample=True, progress=False, limit=LIMIT))
    assert other["fingerprint"] != again["fingerprint"]
    a = read_table(built, "sample-rendition-random").to_pylist()
    b = read_table(tmp_path / "b", "sample-rendition-random").to_pylist()
    assert [r["option_class_ids"] for r in a] != [r["option_class_ids"] for r in b]


def test_loads_with_datasets(built: Path) -> None:
    from vlmrobust.builders.card_meta import validate_card

    meta = validate_card((built / "README.md").read_text(encoding="utf-8"))
    assert meta["pretty_name"].endswith("(embedded sample)")
    import datasets

    ds = datasets.load_dataset(str(built), "sample-rendition-visual", split="test")
    assert len(ds) == LIMIT
    row = ds[0]
    assert isinstance(row["image"], Image.Image)
    assert row["variant"] == "sample-rendition" and row["distractors"] == "visual"
