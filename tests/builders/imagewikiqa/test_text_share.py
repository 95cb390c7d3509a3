"""imagewikiqa: one question text, over every class and option set, fills at most
``max_text_share`` of the rows (issue 34.4; default the authors' release's
0.75%), never fewer than the repeat cap's rows; checked on hand-made questions
where one generic text is asked of every class."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from tests.fixtures.imagewikiqa import cand
from vlmrobust.builders.imagewikiqa.caps import assign_capped
from vlmrobust.builders.imagewikiqa.images import ClassImage, largest_text_share, text_row_cap
from vlmrobust.builders.imagewikiqa.question import Candidate
from vlmrobust.builders.imagewikiqa.spec import ImageWikiQASpec

GENERIC = "Which of these is a part of this object?"


def _inputs(n_classes: int) -> tuple[dict[str, list[Candidate]], dict[int, list[ClassImage]]]:
    chosen, images = {}, {}
    for i in range(1, n_classes + 1):
        wnid = f"n{i:08d}"
        # the generic text with the class's own options: a different question each time
        chosen[wnid] = [cand(wnid, i, q=GENERIC, choices=(f"p{i}", f"q{i}", f"r{i}", f"s{i}"),
                             kind="wordnet-part"),
                        *(cand(wnid, i, q=f"Where is this object {i}-{j} from?",
                               kind="cloze-region") for j in range(2))]
        images[i] = [ClassImage(f"img-{i}-{k}", Path(f"/x/{i}-{k}.png"), i) for k in range(9)]
    return chosen, images


def _texts(rows: list) -> Counter[str]:
    return Counter(a.question.question for a in rows)


def test_generic_text_is_bounded_by_its_share_of_the_rows_written() -> None:
    chosen, images = _inputs(20)
    spec = ImageWikiQASpec(name="t", version="1", max_text_share=0.10)
    rows = assign_capped(spec, chosen, images, num_rows=1000)
    texts = _texts(rows)
    # without the bound: 20 classes x 3 images = 60 of 180 rows (33%)
    assert len(rows) - texts[GENERIC] == 20 * 2 * 3  # every other question keeps its rows
    assert texts[GENERIC] == text_row_cap(len(rows), 0.10, 3) == 13
    text, count, share = largest_text_share(rows)
    assert (text, count) == (GENERIC, 13) and share == pytest.approx(13 / 133) and share <= 0.10


def test_default_bound_is_the_release_level_and_small_builds_keep_the_repeat_cap() -> None:
    chosen, images = _inputs(20)
    spec = ImageWikiQASpec(name="t", version="1")
    assert spec.max_text_share == 0.0075
    rows = assign_capped(spec, chosen, images, num_rows=1000)
    assert _texts(rows)[GENERIC] == 3  # 0.75% of 123 rows is under one row: the floor
    wide = assign_capped(replace(spec, max_text_share=1.0), chosen, images, num_rows=1000)
    assert _texts(wide)[GENERIC] == 60  # share 1: only the per-question caps


def test_naming_rows_count_against_the_same_text() -> None:
    """Definition questions are assigned after the rest: earlier rows of the same
    text count against its bound."""
    chosen, images = _inputs(10)
    for i, wnid in enumerate(sorted(chosen), start=1):
        chosen[wnid].append(cand(wnid, i, q="Which definition describes this object?",
                                 choices=(f"d{i}", f"e{i}", f"f{i}", f"g{i}"),
                                 kind="wordnet-gloss"))
    spec = ImageWikiQASpec(name="t", version="1", max_text_share=0.05, max_naming_share=0.5)
    rows = assign_capped(spec, chosen, images, num_rows=1000)
    cap = text_row_cap(len(rows), 0.05, 3)
    assert max(_texts(rows).values()) <= cap
    assert _texts(rows)["Which definition describes this object?"] == cap


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.1])
def test_share_out_of_range_is_refused_naming_it(bad: float) -> None:
    with pytest.raises(ValueError, match=f"max_text_share must be in \\(0, 1\\], got {bad}"):
        ImageWikiQASpec(name="t", version="1", max_text_share=bad)
