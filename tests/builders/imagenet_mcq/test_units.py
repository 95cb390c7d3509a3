"""Unit tests of the imagenet-mcq parts: spec validation, Wu-Palmer against
nltk, distractor strategies, FAISS search against brute force, positions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.imagenet_mcq.distractors import (
    random_distractors,
    visual_distractors,
    wordnet_distractors,
)
from vlmrobust.builders.imagenet_mcq.items import Item
from vlmrobust.builders.imagenet_mcq.mining import (
    image_prototypes,
    l2_normalise,
    nearest_prototypes,
)
from vlmrobust.builders.imagenet_mcq.prompts import PROMPTS, get_prompt, render
from vlmrobust.builders.imagenet_mcq.questions import balanced_positions, make_row, question_id
from vlmrobust.builders.imagenet_mcq.seeding import derive_seed, item_rng
from vlmrobust.builders.imagenet_mcq.similarity import WupTable
from vlmrobust.builders.imagenet_mcq.spec import parse_spec
from vlmrobust.core.errors import SpecError, VlmrobustError


@pytest.fixture(scope="module")
def raw_spec() -> dict:
    return load_spec_yaml(resolve_spec("imagenet-mcq"))


def test_spec_yaml_parses_with_defaults(raw_spec: dict) -> None:
    spec = parse_spec(raw_spec, Path("imagenet-mcq.yaml"))
    assert spec.options == 5
    assert spec.questions_per_variant == 5000
    assert spec.strategies == ("random", "wordnet", "visual")
    assert [v.name for v in spec.variants] == [
        "imagenet-val", "imagenet-v2", "imagenet-r", "imagenet-sketch", "objectnet", "imagenet-a"]
    assert spec.reference_variant == "imagenet-val"
    assert all(v.licence for v in spec.variants)


@pytest.mark.parametrize("patch, word", [
    ({"options": 1}, "options"),
    ({"strategies": ["random", "nearest"]}, "nearest"),
    ({"question_prompt": "photo-of"}, "question template"),
    ({"reference_variant": "imagenet-x"}, "reference_variant"),
    ({"seed": "abc"}, "seed"),
    ({"visual": {"prototypes": "centroids"}}, "prototypes"),
    ({"wordnet": {"top_k": 0}}, "top_k"),
])
def test_bad_spec_names_file_and_key(raw_spec: dict, patch: dict, word: str) -> None:
    with pytest.raises(SpecError, match=word) as err:
        parse_spec({**raw_spec, **patch}, Path("/x/my-spec.yaml"))
    assert "/x/my-spec.yaml" in str(err.value)
    assert "\n" not in str(err.value)


def test_prompts_are_the_seed_templates() -> None:
    assert set(PROMPTS.values()) == {
        "A photo of a {class}", "{class}", "What type of object is in this photo?",
        "Select the most appropriate label for the object shown in the image.",
        "Identify the object in this image.",
    }
    assert render("class-name", "tench") == "tench"
    with pytest.raises(SpecError, match="unknown prompt"):
        get_prompt("nope")


def test_item_seeds_depend_only_on_their_parts() -> None:
    assert derive_seed(1, "a", "b") == derive_seed(1, "a", "b")
    assert derive_seed(1, "ab", "") != derive_seed(1, "a", "b")
    assert derive_seed(1, "a", "b") != derive_seed(2, "a", "b")
    x = item_rng(3, "v", "k").random(4)
    np.testing.assert_array_equal(x, item_rng(3, "v", "k").random(4))


# ---- WordNet: our table vs nltk ------------------------------------------------

@pytest.fixture(scope="module")
def synsets() -> list:
    from vlmrobust.builders.wordnet import synset_for_wnid
    from vlmrobust.core.classes import load_imagenet_classes

    classes = load_imagenet_classes()
    rng = np.random.default_rng(0)
    picks = [*sorted(rng.choice(1000, size=60, replace=False).tolist()), 207, 205, 208, 276]
    return [synset_for_wnid(classes[i].wnid) for i in picks]


def _nltk_wup_max_depth(a, b) -> float:
    # the textbook formula composed from nltk primitives, LCS by maximum depth
    subs = a.lowest_common_hypernyms(b, use_min_depth=False)
    sub = a if a in subs else subs[0]
    depth = sub.max_depth() + 1
    return 2.0 * depth / (a.shortest_path_distance(sub) + b.shortest_path_distance(sub) + 2 * depth)


def test_wup_min_depth_mode_equals_nltk_wup_similarity(synsets: list) -> None:
    table = WupTable(synsets, use_min_depth=True)
    for i in range(0, len(synsets), 3):
        for j in range(len(synsets)):
            assert table.wup(i, j) == pytest.approx(synsets[i].wup_similarity(synsets[j]), abs=1e-12)


def test_wup_default_mode_equals_max_depth_formula(synsets: list) -> None:
    table = WupTable(synsets)
    for i in range(0, len(synsets), 3):
        row = table.row(i, range(len(synsets)))
        expected = [_nltk_wup_max_depth(synsets[i], s) for s in synsets]
        np.testing.assert_allclose(row, expected, atol=1e-12)
        assert row[i] == pytest.approx(1.0)
        assert ((row > 0) & (row <= 1)).all()


def test_wup_ranks_sibling_breeds_above_hyena(synsets: list) -> None:
    # golden retriever (207) vs flat-coated retriever (205) and hyena (276)
    table = WupTable(synsets)
    gr, fc, hy = len(synsets) - 4, len(synsets) - 3, len(synsets) - 1
    assert table.wup(gr, fc) > table.wup(gr, hy)


# ---- distractors -----------------------------------------------------------------

def test_random_distractors_are_uniform_over_non_valid() -> None:
    space, valid = list(range(20)), frozenset({0, 5})
    rng = np.random.default_rng(1)
    counts = np.zeros(20)
    for _ in range(3000):
        d = random_distractors(space, valid, 4, rng)
        assert len(set(d)) == 4 and not set(d) & valid
        counts[list(d)] += 1
    assert counts[[0, 5]].sum() == 0
    expected = 3000 * 4 / 18
    assert np.abs(counts[counts > 0] - expected).max() < 0.15 * expected


def test_grouped_distractors_one_per_group_and_uniform_over_groups() -> None:
    # group "a" has 5 classes, the others one each: groups, not classes, are uniform
    groups = {0: "t", 1: "a", 2: "a", 3: "a", 4: "a", 5: "a", 6: "b", 7: "c", 8: "d"}
    valid = frozenset({0})
    rng = np.random.default_rng(4)
    hits = {g: 0 for g in "abcd"}
    for _ in range(2000):
        d = random_distractors(range(9), valid, 2, rng, groups)
        assert len({groups[c] for c in d}) == 2 and 0 not in d
        for c in d:
            hits[groups[c]] += 1
    assert max(hits.values()) - min(hits.values()) < 0.12 * 1000
    ranking = [2, 3, 6, 1, 7, 8]
    assert visual_distractors(ranking, valid, 3, groups) == (2, 6, 7)
    assert set(wordnet_distractors(ranking, valid, 3, 3, rng, groups)) == {2, 6, 7}
    with pytest.raises(VlmrobustError, match="only 4"):
        random_distractors(range(9), valid, 5, rng, groups)
    # a valid label's group is closed to every strategy: an ObjectNet "chair" image
    # never gets another chair class as a distractor
    shared = frozenset({1})  # group "a" holds 1..5
    drawn = {c for _ in range(300) for c in random_distractors(range(9), shared, 3, rng, groups)}
    assert drawn == {0, 6, 7, 8}
    assert visual_distractors(ranking, shared, 3, groups) == (6, 7, 8)
    assert set(wordnet_distractors(ranking, shared, 3, 3, rng, groups)) == {6, 7, 8}


def test_wordnet_distractors_come_from_top_k_and_vary() -> None:
    ranking = [9, 3, 7, 1, 8, 2, 6, 4, 5]
    valid = frozenset({0, 3})
    seen = set()
    for s in range(50):
        d = wordnet_distractors(ranking, valid, 2, 4, np.random.default_rng(s))
        assert set(d) <= {9, 7, 1, 8}
        seen.add(d)
    assert len(seen) > 1


def test_visual_distractors_skip_valid_in_order() -> None:
    assert visual_distractors([3, 0, 2, 9, 4], frozenset({0, 9}), 3) == (3, 2, 4)
    with pytest.raises(VlmrobustError, match="only 2 non-valid"):
        visual_distractors([3, 0, 2], frozenset({0}), 3)


# ---- FAISS mining ---------------------------------------------------------------------

def test_nearest_prototypes_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    q = l2_normalise(rng.normal(size=(200, 48)))
    p = l2_normalise(rng.normal(size=(150, 48)))
    scores, idx = nearest_prototypes(q, p, 7, use_gpu=False)
    sims = q @ p.T
    expected = np.argsort(-sims, axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(idx, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(sims, expected, axis=1), atol=1e-5)


def test_nearest_prototypes_rejects_shape_mismatch() -> None:
    with pytest.raises(ValueError, match="must be"):
        nearest_prototypes(np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32), 1)


def test_image_prototypes_are_normalised_class_means() -> None:
    rng = np.random.default_rng(2)
    emb = rng.normal(size=(30, 8))
    labels = rng.integers(0, 4, size=30).tolist()
    protos, has = image_prototypes(emb, labels, [0, 1, 2, 3, 4])
    assert has.tolist() == [True] * 4 + [False]
    for c in range(4):
        m = l2_normalise(emb)[np.array(labels) == c].mean(axis=0)
        np.testing.assert_allclose(protos[c], m / np.linalg.norm(m), atol=1e-6)
    assert not protos[4].any()


# ---- positions and rows ---------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 4, 5, 23, 101, 5000])
def test_balanced_positions_within_one(n: int) -> None:
    pos = balanced_positions(n, 5, np.random.default_rng(n))
    counts = np.bincount(pos, minlength=5)
    assert counts.sum() == n
    assert counts.max() - counts.min() <= 1
    assert abs(counts - n / 5).max() <= 1


def test_make_row_puts_truth_at_answer() -> None:
    item = Item("imagenet-r", "n01443537/a.jpg", Path("a.jpg"), 1, frozenset({1}))
    names = {i: f"c{i}" for i in range(10)}
    for answer in range(5):
        row = make_row(item, "random", (2, 3, 4, 5), answer, names, "Q?", 0, b"x")
        assert row["option_class_ids"][answer] == 1
        assert row["options"][answer] == "c1"
        assert sorted(row["option_class_ids"]) == [1, 2, 3, 4, 5]
        assert row["id"] == question_id("imagenet-r", "random", "n01443537/a.jpg")


def test_stored_bytes_keeps_jpeg_and_png_without_decoding(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of every strategy take the checked file's bytes; only formats that
    need converting go through the decoding path."""
    import io as _io

    from PIL import Image as _Image

    from vlmrobust.builders.imagenet_mcq import items as items_mod

    png = tmp_path / "a.png"
    _Image.new("RGB", (6, 5), (1, 2, 3)).save(png)
    bmp = tmp_path / "b.bmp"
    _Image.new("RGB", (6, 5), (4, 5, 6)).save(bmp)
    calls: list[object] = []
    real = items_mod.image_bytes
    monkeypatch.setattr(items_mod, "image_bytes", lambda p: calls.append(p) or real(p))
    assert items_mod.stored_bytes(png) == png.read_bytes()
    assert calls == []
    converted = items_mod.stored_bytes(bmp)
    assert calls == [bmp]
    assert converted == real(bmp)
    with _Image.open(_io.BytesIO(converted)) as im:
        assert im.format == "PNG" and im.getpixel((0, 0)) == (4, 5, 6)
