"""imagewikiqa rows on small hand-made inputs: answer-position rebalancing,
assigning images to questions, and the cap on naming questions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fixtures.imagewikiqa import cand
from vlmrobust.builders.imagewikiqa.images import ClassImage, assign_images, pick_questions
from vlmrobust.builders.imagewikiqa.rebalance import balanced_positions, place_answer

# --- rebalance --------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 500), k=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_balanced_positions_within_one_of_n_over_k(n: int, k: int, seed: int) -> None:
    pos = balanced_positions(n, k, np.random.default_rng(seed))
    counts = np.bincount(pos, minlength=k)
    assert len(pos) == n and counts.sum() == n
    assert np.all(np.abs(counts - n / k) < 1)


@settings(max_examples=60, deadline=None)
@given(answer=st.integers(0, 3), target=st.integers(0, 3), seed=st.integers(0, 1000))
def test_place_answer_moves_only_the_order(answer: int, target: int, seed: int) -> None:
    choices = ["w", "x", "y", "z"]
    out, new = place_answer(choices, answer, target, np.random.default_rng(seed))
    assert new == target and out[target] == choices[answer]
    assert sorted(out) == sorted(choices)


# --- image assignment -------------------------------------------------------------------

def _images(label: int, n: int) -> list[ClassImage]:
    return [ClassImage(f"img-{label}-{i}", Path(f"/x/{label}-{i}.png"), label) for i in range(n)]


def test_assign_images_caps_images_per_question_and_repeats() -> None:
    # Three classes share one generic question text with identical options (the
    # same question): it may appear in at most 3 rows over the whole dataset.
    shared = ("Which category does this object belong to?", ("a", "b", "c", "d"))
    qs = {}
    for label in range(3):
        wnid = f"n0000000{label}"
        qs[wnid] = [cand(wnid, label, q=shared[0], choices=shared[1]),
                    cand(wnid, label, q=f"Unique question {label} about this object?")]
    images = {label: _images(label, 10) for label in range(3)}
    rows = assign_images(qs, images, images_per_question=3, repeat_cap=3, num_rows=1000, seed=0)
    per_question = Counter(a.question.cap_key for a in rows)
    assert per_question[cand(q=shared[0], choices=shared[1]).cap_key] == 3
    assert max(per_question.values()) <= 3
    for key in per_question:
        imgs = [a.image.key for a in rows if a.question.cap_key == key]
        assert len(imgs) == len(set(imgs))  # distinct images per question
    assert all(a.image.label == a.question.label for a in rows)
    assert len(rows) == 3 + 3 * 3


def test_assign_images_row_limit_spreads_over_classes_first() -> None:
    qs = {f"n0000000{label}": [cand(f"n0000000{label}", label, q=f"Q{label}{j} this object?")
                               for j in range(2)] for label in range(4)}
    images = {label: _images(label, 5) for label in range(4)}
    rows = assign_images(qs, images, images_per_question=3, repeat_cap=3, num_rows=8, seed=1)
    assert len(rows) == 8
    # 4 classes x 2 questions: every question gets its first image before any second.
    assert len({a.question.key for a in rows}) == 8


def test_assign_images_is_deterministic_and_seeded() -> None:
    qs = {"n00000001": [cand("n00000001", 1, q=f"Q{j} this object?") for j in range(3)]}
    images = {1: _images(1, 9)}
    a = assign_images(qs, images, images_per_question=3, repeat_cap=3, num_rows=100, seed=5)
    b = assign_images(qs, images, images_per_question=3, repeat_cap=3, num_rows=100, seed=5)
    c = assign_images(qs, images, images_per_question=3, repeat_cap=3, num_rows=100, seed=6)
    assert a == b
    assert [r.image.key for r in a] != [r.image.key for r in c]


def test_pick_questions_spreads_kinds() -> None:
    cs = [cand(q=f"colour {i} this object?", kind="colour") for i in range(5)]
    cs += [cand(q="region this object?", kind="region")]
    picked = pick_questions(cs, 2, seed=0)
    assert {c.kind for c in picked} == {"colour", "region"}


# --- the naming cap -------------------------------------------------------------------

@given(st.integers(0, 500), st.floats(0.0, 0.99), st.integers(0, 500))
def test_naming_budget_is_the_largest_share_within_the_cap(n: int, share: float,
                                                           room: int) -> None:
    from vlmrobust.builders.imagewikiqa.qtypes import naming_budget

    m = naming_budget(n, share, room)
    assert 0 <= m <= room
    if m:
        assert m / (n + m) <= share + 1e-9
    if m < room and n:
        assert (m + 1) / (n + m + 1) > share - 1e-9


def test_pick_questions_takes_knowledge_before_naming() -> None:
    naming = [cand(q="Which definition describes this object?", kind="wordnet-gloss"),
              cand(q="Which category does this object belong to?", kind="wordnet-hypernym")]
    knowledge = [cand(q="Where is this object native to?", kind="cloze-region"),
                 cand(q="What is this object made of?", kind="cloze-material")]
    picked = pick_questions(naming + knowledge, 3, seed=1)
    assert set(picked[:2]) == set(knowledge) and picked[2] in naming


def test_build_caps_naming_rows() -> None:
    from vlmrobust.builders.imagewikiqa.caps import assign_capped
    from vlmrobust.builders.imagewikiqa.spec import ImageWikiQASpec

    spec = ImageWikiQASpec(name="t", version="1", images_per_question=3)
    chosen = {
        f"n0000000{i}": [cand(wnid=f"n0000000{i}", label=i, q=f"Where is this object {i} from?",
                              kind="cloze-region"),
                         cand(wnid=f"n0000000{i}", label=i, kind="wordnet-gloss",
                              q=f"Which definition describes this object {i}?")]
        for i in range(1, 7)
    }
    images = {i: _images(i, 3) for i in range(1, 7)}
    rows = assign_capped(spec, chosen, images, num_rows=1000)
    naming = [r for r in rows if r.question.kind == "wordnet-gloss"]
    assert len(rows) - len(naming) == 18  # 6 knowledge questions x 3 images
    assert len(naming) == 2 and len(naming) / len(rows) <= 0.10


