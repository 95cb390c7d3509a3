"""Done-when: the 16-class mapping's class lists equal model-vs-human's, as
published (tests/data/model_vs_human_16_classes.json, transcribed from
modelvshuman/helper/human_categories.py)."""

from __future__ import annotations

import json
from pathlib import Path

from vlmrobust.builders.cue_conflict.categories import CATEGORIES, CATEGORY_CLASSES, label_space
from vlmrobust.core.classes import load_imagenet_classes

PUBLISHED = json.loads((Path(__file__).parents[2] / "data" / "model_vs_human_16_classes.json")
                       .read_text(encoding="utf-8"))


def test_class_lists_equal_model_vs_human() -> None:
    theirs = PUBLISHED["indices"]
    assert list(CATEGORIES) == sorted(theirs)  # model-vs-human sorts its 16 names
    for c in CATEGORIES:
        assert list(CATEGORY_CLASSES[c]) == theirs[c], c
    ls = label_space()
    assert ls.group_rule == "mean-prob"
    assert {e.name: list(e.imagenet_ids) for e in ls.classes} == theirs


def test_class_lists_agree_with_their_wnid_lists() -> None:
    """An independent check of the transcription: each listed index is an
    ILSVRC class whose wnid is in the category's WNID list, and each listed
    WNID that is an ILSVRC class is among the indices (their other WNIDs are
    not ILSVRC-2012 classes, as their comment says)."""
    classes = load_imagenet_classes()
    by_wnid = {c.wnid: c.index for c in classes}
    for c, wnids in PUBLISHED["wnids"].items():
        assert {classes[i].wnid for i in CATEGORY_CLASSES[c]} <= set(wnids), c
        assert {by_wnid[w] for w in wnids if w in by_wnid} == set(CATEGORY_CLASSES[c]), c


def test_no_imagenet_class_is_in_two_categories() -> None:
    seen: dict[int, str] = {}
    for c, ids in CATEGORY_CLASSES.items():
        for i in ids:
            assert i not in seen, (i, c, seen.get(i))
            seen[i] = c
    assert len(seen) == sum(len(v) for v in PUBLISHED["indices"].values())
