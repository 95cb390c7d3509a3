"""imagenet-mcq builds on synthetic class sets: real JPEG/PNG files in tmp_path,
real label spaces and WordNet, an injected deterministic embedder."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.imagenet_mcq import FakeEmbedder
from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.build import VariantInput, build_dataset, wordnet_similarity
from vlmrobust.builders.imagenet_mcq.items import Item
from vlmrobust.builders.imagenet_mcq.seeding import key_hash
from vlmrobust.builders.imagenet_mcq.spec import McqSpec, parse_spec
from vlmrobust.core.classes import label_space
from vlmrobust.core.datadir import read_manifest, read_table
from vlmrobust.core.errors import SourceError

R_SPACE = label_space("imagenet-r")
FULL = tuple(range(1000))
def _write_image(path: Path, seed: int, fmt: str) -> None:
    rng = np.random.default_rng(seed)
    arr = (rng.random((20, 24, 3)) * 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, format=fmt)


def make_variant(root: Path, name: str, space: tuple[int, ...], n: int, seed: int,
                 extra_valid: bool = False) -> VariantInput:
    rng = np.random.default_rng(seed)
    classes = rng.choice(space, size=6, replace=False).tolist()
    items = []
    for i in range(n):
        label = int(classes[i % len(classes)])
        fmt = "JPEG" if i % 2 else "PNG"
        path = root / name / f"{label:04d}_{i:03d}.{fmt.lower()}"
        _write_image(path, seed * 1000 + i, fmt)
        valid = {label}
        if extra_valid and i % 3 == 0:
            # ReaL-style second label: one of the other classes
            valid.add(int(classes[(i + 1) % len(classes)]))
        items.append(Item(name, path.relative_to(root).as_posix(), path, label, frozenset(valid)))
    return VariantInput(name, space, tuple(items), dropped=1,
                        licences={it.key: ("synthetic", "CC0") for it in items})


@pytest.fixture(scope="module")
def spec() -> McqSpec:
    raw = load_spec_yaml(resolve_spec("imagenet-mcq"))
    # FakeEmbedder stands in for a classifier: its weight rows are the prototypes
    return parse_spec({**raw, "questions_per_variant": 23, "visual": raw["sample"]["visual"]},
                      Path("imagenet-mcq.yaml"))


@pytest.fixture(scope="module")
def similarity() -> dict:
    return {R_SPACE: wordnet_similarity(R_SPACE), FULL: wordnet_similarity(FULL)}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[VariantInput]:
    root = tmp_path_factory.mktemp("sources")
    return [make_variant(root, "imagenet-val", FULL, 30, 1, extra_valid=True),
            make_variant(root, "imagenet-r", R_SPACE, 26, 2)]


def run_build(spec: McqSpec, inputs: list[VariantInput], out: Path, similarity: dict,
              embedder: FakeEmbedder | None = None) -> dict:
    return build_dataset(spec, inputs, BuildOptions(out, progress=False),
                         reference="imagenet-val", embedder=embedder or FakeEmbedder(),
                         similarity=similarity)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, spec: McqSpec, inputs: list[VariantInput],
          similarity: dict) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("ds") / "imagenet-mcq"
    return out, run_build(spec, inputs, out, similarity)


def rows_of(out: Path, config: str) -> list[dict]:
    return read_table(out, config).to_pylist()


def test_configs_counts_and_manifest(built: tuple[Path, dict]) -> None:
    out, manifest = built
    assert list(manifest["configs"]) == [f"{v}-{s}" for v in ("imagenet-val", "imagenet-r")
                                         for s in ("random", "wordnet", "visual")]
    assert set(manifest["configs"].values()) == {23}
    assert manifest["reference_variant"] == "imagenet-val"
    assert read_manifest(out)["fingerprint"] == manifest["fingerprint"]
    assert set(manifest["source_fingerprints"]) == {"imagenet-val", "imagenet-r"}


def test_every_question_is_clean_and_balanced(built: tuple[Path, dict],
                                              inputs: list[VariantInput]) -> None:
    out, manifest = built
    from vlmrobust.core.classes import load_imagenet_classes

    names = {c.index: c.name for c in load_imagenet_classes()}
    valid = {(v.name, key_hash(it.key)): it.valid for v in inputs for it in v.items}
    ids: set[str] = set()
    for config in manifest["configs"]:
        variant, strategy = config.rsplit("-", 1)
        space = set(R_SPACE if variant == "imagenet-r" else FULL)
        rows = rows_of(out, config)
        counts = np.bincount([r["answer"] for r in rows], minlength=5)
        assert counts.max() - counts.min() <= 1
        for r in rows:
            assert r["variant"] == variant and r["distractors"] == strategy
            cls = r["option_class_ids"]
            assert len(cls) == 5 and len(set(r["options"])) == 5
            assert r["options"] == [names[c] for c in cls]
            assert set(cls) <= space
            assert cls[r["answer"]] == r["label"]
            ids.add(r["id"])
        # exactly one option is a valid label of its image (ReaL-style multi-labels included)
        for r in rows:
            truth = valid[(variant, r["id"].rsplit("-", 1)[1])]
            ok = [c in truth for c in r["option_class_ids"]]
            assert ok.count(True) == 1 and ok[r["answer"]]
    assert len(ids) == manifest["num_rows"]  # unique across the whole directory


def test_strategies_share_images_and_answer_positions(built: tuple[Path, dict]) -> None:
    out, _ = built
    by = {s: rows_of(out, f"imagenet-r-{s}") for s in ("random", "wordnet", "visual")}
    for a, b in zip(by["random"], by["visual"], strict=True):
        assert a["answer"] == b["answer"] and a["label"] == b["label"]
        assert a["image"]["bytes"] == b["image"]["bytes"]
        assert a["id"].split("-")[-1] == b["id"].split("-")[-1]


def test_source_bytes_are_kept(built: tuple[Path, dict], inputs: list[VariantInput]) -> None:
    out, _ = built
    by_bytes = {it.path.read_bytes() for v in inputs for it in v.items}
    rows = rows_of(out, "imagenet-val-random")
    assert all(r["image"]["bytes"] in by_bytes for r in rows)
    assert {r["image"]["bytes"][:2] for r in rows} == {b"\xff\xd8", b"\x89P"}


def test_wordnet_distractors_more_similar_than_random(built: tuple[Path, dict],
                                                      similarity: dict) -> None:
    out, _ = built
    for variant, space in (("imagenet-val", FULL), ("imagenet-r", R_SPACE)):
        sim = similarity[space]

        def mean_sim(strategy: str, variant: str = variant, sim: Any = sim) -> float:
            rows = rows_of(out, f"{variant}-{strategy}")
            return float(np.mean([sim.similarity(r["label"], c) for r in rows
                                  for i, c in enumerate(r["option_class_ids"]) if i != r["answer"]]))

        assert mean_sim("wordnet") > mean_sim("random") + 0.1


def test_visual_distractors_nearer_than_random(built: tuple[Path, dict]) -> None:
    out, _ = built
    emb = FakeEmbedder()
    for variant in ("imagenet-val", "imagenet-r"):
        def mean_cos(strategy: str, variant: str = variant) -> float:
            rows = rows_of(out, f"{variant}-{strategy}")
            q = emb.embed_images([Image.open(io.BytesIO(r["image"]["bytes"])) for r in rows])
            return float(np.mean([q[i] @ emb.protos[c] for i, r in enumerate(rows)
                                  for j, c in enumerate(r["option_class_ids"]) if j != r["answer"]]))

        assert mean_cos("visual") > mean_cos("random") + 0.1


def test_same_seed_same_fingerprint_other_seed_other_questions(
    tmp_path: Path, spec: McqSpec, inputs: list[VariantInput], similarity: dict,
    built: tuple[Path, dict],
) -> None:
    out, manifest = built
    again = run_build(spec, inputs, tmp_path / "again", similarity)
    assert again["fingerprint"] == manifest["fingerprint"]
    assert (tmp_path / "again" / "README.md").read_text() == (out / "README.md").read_text()
    other = run_build(McqSpec(**{**spec.__dict__, "seed": spec.seed + 1}), inputs,
                      tmp_path / "other", similarity)
    assert other["fingerprint"] != manifest["fingerprint"]
    a = rows_of(out, "imagenet-val-random")
    b = rows_of(tmp_path / "other", "imagenet-val-random")
    assert [r["option_class_ids"] for r in a] != [r["option_class_ids"] for r in b]


def test_one_variant_does_not_change_another(tmp_path: Path, spec: McqSpec,
                                             inputs: list[VariantInput], similarity: dict,
                                             built: tuple[Path, dict]) -> None:
    out, _ = built
    run_build(spec, inputs[1:], tmp_path / "only-r", similarity)
    for s in ("random", "wordnet", "visual"):
        a = rows_of(out, f"imagenet-r-{s}")
        b = rows_of(tmp_path / "only-r", f"imagenet-r-{s}")
        assert a == b


def test_undecodable_image_names_file_and_writes_nothing(
    tmp_path: Path, spec: McqSpec, similarity: dict,
) -> None:
    variant = make_variant(tmp_path / "src", "imagenet-r", R_SPACE, 8, 5)
    broken = variant.items[3].path
    broken.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    out = tmp_path / "out"
    embedder = FakeEmbedder()
    with pytest.raises(SourceError, match="cannot decode") as err:
        run_build(spec, [variant], out, similarity, embedder)
    assert str(broken) in str(err.value)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "src"]
    assert embedder.calls == 0


def test_loads_with_datasets(built: tuple[Path, dict]) -> None:
    import datasets

    out, manifest = built
    ds = datasets.load_dataset(str(out), "imagenet-r-wordnet", split="test")
    assert len(ds) == manifest["configs"]["imagenet-r-wordnet"]
    first = ds[0]
    assert isinstance(first["image"], Image.Image) and first["image"].size == (24, 20)
    assert len(first["options"]) == 5
    card = (out / "README.md").read_text()
    for needle in ("Label cleaning", "wordnet", "Wu-Palmer", "IndexFlatIP", "CC0",
                   "Counts per class", "imagenet-r-wordnet"):
        assert needle in card
    # issue 33/34 Done-when: the card says what differs from seed 000 and why,
    # quoting the rule it departs from, and flags a non-seed size
    dev = card.split("## Deviations from the seed", 1)[1].split("\n## ", 1)[0]
    assert "remaining 999 classes" in dev and "Wu-Palmer" in dev and "DINOv3" in dev
    assert "questions per variant: 23 (**the seed uses 5,000**)" in dev  # the fixture's 23


def test_embedding_cache_resumes_without_reembedding(tmp_path: Path, spec: McqSpec,
                                                     inputs: list[VariantInput],
                                                     similarity: dict,
                                                     built: tuple[Path, dict]) -> None:
    cache = tmp_path / "cache"
    first = FakeEmbedder()
    m1 = build_dataset(spec, inputs, BuildOptions(tmp_path / "a", progress=False),
                       reference="imagenet-val", embedder=first, similarity=similarity,
                       cache_dir=cache)
    assert first.calls > 0 and list(cache.glob("*.npy"))
    second = FakeEmbedder()
    m2 = build_dataset(spec, inputs, BuildOptions(tmp_path / "b", progress=False),
                       reference="imagenet-val", embedder=second, similarity=similarity,
                       cache_dir=cache)
    assert second.calls == 0
    assert m1["fingerprint"] == m2["fingerprint"] == built[1]["fingerprint"]
