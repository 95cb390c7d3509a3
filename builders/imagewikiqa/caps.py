"""The row caps of an imagewikiqa build beyond one question's (images.py):
definition and taxonomy questions fill at most ``max_naming_share`` of the rows,
and one question text -- over every class and option set -- at most
``max_text_share`` of them (at least the repeat cap)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vlmrobust.builders.imagewikiqa.images import (
    Assignment,
    ClassImage,
    assign_images,
    text_row_cap,
)
from vlmrobust.builders.imagewikiqa.qtypes import is_naming, naming_budget
from vlmrobust.builders.imagewikiqa.question import Candidate
from vlmrobust.builders.imagewikiqa.spec import ImageWikiQASpec


def assign_capped(spec: ImageWikiQASpec, chosen: Mapping[str, Sequence[Candidate]],
                   images: Mapping[int, Sequence[ClassImage]], num_rows: int) -> list[Assignment]:
    """Rows for the knowledge (and appearance) questions first; definition and
    taxonomy questions only fill up to ``max_naming_share`` of the rows. No
    question text fills more than ``max_text_share`` of the rows written
    (:func:`text_row_cap`, at least the repeat cap): the bound shrinks with the
    rows it removes, so it is applied until it no longer changes."""
    kw = {"images_per_question": spec.images_per_question,
          "repeat_cap": spec.question_repeat_cap, "seed": spec.seed}
    other = {w: [c for c in cs if not is_naming(c.qtype)] for w, cs in chosen.items()}
    naming = {w: [c for c in cs if is_naming(c.qtype)] for w, cs in chosen.items()}

    def assign(text_cap: int) -> list[Assignment]:
        rows = assign_images(other, images, num_rows=num_rows, text_cap=text_cap, **kw)
        budget = naming_budget(len(rows), spec.max_naming_share, num_rows - len(rows))
        return rows + (assign_images(naming, images, num_rows=budget, text_cap=text_cap,
                                     prior=rows, **kw) if budget else [])

    cap = text_row_cap(num_rows, spec.max_text_share, spec.question_repeat_cap)
    while True:  # the cap only falls, and not below the repeat cap: this ends
        rows = assign(cap)
        tighter = text_row_cap(len(rows), spec.max_text_share, spec.question_repeat_cap)
        if tighter >= cap:
            return rows
        cap = tighter
