"""The answer matcher (vlmrobust.core.text.matcher): letters, option text, synonyms,
several options named, no answer, and the open-world name test."""

from __future__ import annotations

import pytest

from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.text.matcher import (
    class_synonyms,
    fold,
    match_option,
    names_in_text,
    row_synonyms,
)

OPTS = ["tench", "goldfish", "great white shark", "tiger shark"]


@pytest.mark.parametrize("text, want", [
    ("B", 1), ("(B)", 1), ("B.", 1), ("**C**", 2), ("  d  ", 3), ("[A]", 0),
    ("Answer: B", 1), ("The answer is B.", 1), ("The answer is (C).", 2),
    ("answer: b", 1), ("Final answer - D", 3), ("The correct option is C, because", 2),
    ("B is correct.", 1), ("I think (D) is the answer", 3),
    ("B. goldfish", 1), ("(C) great white shark", 2),
    ("I first thought (A) but ... Answer: C", 2),
    ("Answer: A. The image shows a tench.", 0),
    ("The answer is A because of the fins.", 0),
])
def test_letter_forms(text: str, want: int) -> None:
    assert match_option(text, OPTS) == want


@pytest.mark.parametrize("text, want", [
    ("I would say B.", 1), ("I think it is A.", 0), ("My pick: **(C)**", 2),
    ("It is a tench. D", 3), ("I would say E.", None), ("I would say b.", None),
])
def test_a_lone_capital_letter_at_the_end(text: str, want: int | None) -> None:
    assert match_option(text, OPTS) == want


def test_the_last_answer_cue_wins() -> None:
    assert match_option("The answer is not B. Final answer: D", OPTS) == 3
    assert match_option("Answer: A\nAnswer: B", OPTS) == 1


def test_the_last_letter_is_correct_wins() -> None:
    # "X is correct" / "X is the answer" are answer cues too: the last one decides
    assert match_option("At first A is the answer, but on reflection C is correct.", OPTS) == 2


def test_a_restated_option_list_is_no_letter_answer() -> None:
    # several letters at line starts: the leading "A." is the list, not an answer (1 c-e)
    assert match_option("A. tench\nB. goldfish", OPTS) is None
    assert match_option("A) tench\nB) goldfish\nC) tiger shark", OPTS) is None
    assert match_option("A. tench", OPTS) == 0  # one letter: it is the answer


def test_a_name_two_options_share_decides_nothing() -> None:
    # folded alike ("crane" / "Crane"): naming it answers neither; the other
    # option named alone still answers
    opts = ["crane", "Crane", "tench"]
    assert match_option("It is a crane.", opts) is None
    assert match_option("It is a crane or a tench.", opts) == 2


def test_letter_outside_the_options_is_ignored() -> None:
    assert match_option("E", OPTS) is None
    assert match_option("Answer: E", OPTS) is None
    # the letter stage decides nothing, so the text stage still can
    assert match_option("Answer: E. It is a tench.", OPTS) == 0


def test_letter_beats_option_text() -> None:
    # "letter first": a letter that disagrees with the named option still wins
    assert match_option("B. tench", OPTS) == 1


@pytest.mark.parametrize("text, want", [
    ("It is a goldfish.", 1), ("GOLDFISH", 1), ("Two goldfishes in a bowl", 1),
    ("a great-white shark!", 2), ("The answer is a tiger shark.", 3),
    ("The answer is goldfish, not tench.", 1),
    ("A goldfish", 1), ("The answer is a goldfish", 1),
])
def test_option_text(text: str, want: int) -> None:
    assert match_option(text, OPTS) == want


def test_article_a_is_not_option_a_only_before_an_option_name() -> None:
    assert match_option("Answer: A goldfish", OPTS) == 1
    assert match_option("Answer: A", OPTS) == 0
    assert match_option("the answer: a.", OPTS) == 0
    assert match_option("I can answer a question about it", OPTS) is None


def test_longer_name_claims_its_words() -> None:
    # "white shark" (a synonym of option 2) inside "great white shark", and
    # "shark" naming nothing by itself
    opts = ["shark", "great white shark"]
    assert match_option("a great white shark", opts) == 1
    assert match_option("a shark", opts) == 0


def test_distractor_also_named_is_no_answer() -> None:
    assert match_option("It could be a tench or a goldfish.", OPTS) is None
    assert match_option("Looks like a tench, but it's a goldfish.", OPTS) is None
    # an answer cue settles it: the first option named after the last cue
    assert match_option("Looks like a tench, but the answer is goldfish.", OPTS) == 1
    # listing every option never scores
    assert match_option("tench, goldfish, great white shark, tiger shark", OPTS) is None
    assert match_option("(A) tench (B) goldfish (C) great white shark", OPTS) is None


def test_synonyms_decide_only_after_letters_and_option_text() -> None:
    syn = [["Tinca tinca"], ["Carassius auratus"], ["white shark", "man-eater"], ["Galeocerdo cuvieri"]]
    assert match_option("Surely a man-eater.", OPTS) is None
    assert match_option("Surely a man-eater.", OPTS, syn) == 2
    assert match_option("carassius auratus", OPTS, syn) == 1
    # option text decides before synonyms
    assert match_option("a tench (Carassius auratus?)", OPTS, syn) == 0
    assert match_option("goldfish", OPTS, [["goldfish"], [], [], []]) == 1  # shared: ignored
    # a synonym shared by two options cannot decide
    shared = [["fish"], ["fish"], [], []]
    assert match_option("a fish", OPTS, shared) is None


@pytest.mark.parametrize("text", ["", "   ", "I don't know.", "cat", "Answer:", "</think>"])
def test_no_answer(text: str) -> None:
    assert match_option(text, OPTS) is None


def test_thoughts_are_dropped() -> None:
    text = "<think>Is it (A) tench? Answer: A? No...</think>The answer is B."
    assert match_option(text, OPTS) == 1
    assert match_option("<think>a tench</think> no idea", OPTS) is None


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="synonyms has 1 entries for 4 options"):
        match_option("B", OPTS, [["x"]])
    with pytest.raises(TypeError):
        match_option(None, OPTS)  # type: ignore[arg-type]
    assert match_option("B", []) is None


def test_word_boundaries_and_plurals() -> None:
    assert fold("Façade—ÉCLAIR") == "facade eclair"
    assert names_in_text("two daisies", ["daisy"])
    assert names_in_text("the Tench.", ["tench"])
    assert names_in_text("tenches", ["tench"])
    assert not names_in_text("category", ["cat"])
    assert not names_in_text("bobcat", ["cat"])
    assert not names_in_text("catch", ["cat"])
    assert names_in_text("a great  white\nshark", ["great white shark"])
    assert not names_in_text("a great shark", ["great white shark"])
    assert not names_in_text("anything", ["", "  "])
    assert not names_in_text("<think>goldfish</think>a carp", ["goldfish"])


def test_class_synonyms_are_the_wordnet_lemmas() -> None:
    c = load_imagenet_classes()[2]
    syn = class_synonyms(2)
    assert set(c.lemmas) <= set(syn) and c.name in syn
    assert len(syn) == len(set(syn))
    with pytest.raises(ValueError):
        class_synonyms(1000)
    row = {"options": ["tench", "goldfish", "great white shark"], "option_class_ids": [0, 1, 2]}
    per_option = row_synonyms(row)
    assert per_option is not None and per_option[2] == syn
    assert match_option("A man-eater, clearly", row["options"], per_option) == 2
    assert row_synonyms({"options": ["a", "b"]}) is None
    assert row_synonyms({"options": ["a", "b"], "option_class_ids": [0]}) is None
