"""imagewikiqa question texts on small hand-made inputs: the leak check, the
candidate record and its keys, and question types of free-text questions."""

from __future__ import annotations

import pytest

from tests.fixtures.imagewikiqa import cand
from vlmrobust.builders.imagewikiqa.leak import LeakChecker

# --- leak check -------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "leak"), [
    ("Where do tenches live?", "tenches"), ("Is this a TENCH?", "TENCH"),
    ("tench-like fish", "tench"), ("the Tinca tinca", "Tinca tinca"),
    ("genus Tinca", "Tinca"), ("What do Tench eat?", "Tench"),
])
def test_leak_checker_finds_names_plurals_and_genus(text: str, leak: str) -> None:
    # the span found is the name as written: its plural, its case, the genus alone
    assert LeakChecker(("tench", "Tinca tinca")).find(text) == leak


@pytest.mark.parametrize("text", ["a stench", "tenchant", "Where does this object live?"])
def test_leak_checker_respects_word_boundaries(text: str) -> None:
    assert LeakChecker(("tench", "Tinca tinca")).find(text) is None


def test_leak_checker_multiword_and_irregular_plurals() -> None:
    c = LeakChecker(("hot dog", "frankfurter", "butterfly", "goose"))
    assert c.find("two hot dogs") == "hot dogs"
    assert c.find("a hotdog stand") == "hotdog"
    assert c.find("Butterflies are insects") == "Butterflies"
    assert c.find("a flock of geese") == "geese"
    assert c.find("a dog") is None  # "dog" alone is not the name "hot dog"


def test_match_start_after_article() -> None:
    c = LeakChecker(("Golden Retriever",))
    text = "The golden retrievers are dogs."
    end = c.match_start(text)
    assert end is not None and text[end:] == " are dogs."
    assert c.match_start("My golden retriever") is None


# --- question records -------------------------------------------------------------------

def test_candidate_rejects_bad_choices() -> None:
    with pytest.raises(ValueError, match="4 choices"):
        cand(choices=("a", "b", "c"))
    with pytest.raises(ValueError, match="not distinct"):
        cand(choices=("a", "B", "b", "c"))
    with pytest.raises(ValueError, match="out of range"):
        cand(answer=4)


def test_cap_key_ignores_option_order_but_not_options() -> None:
    a = cand(choices=("Europe", "Asia", "Africa", "Peru"), answer=0)
    b = cand(choices=("Asia", "Europe", "Peru", "Africa"), answer=1)
    c = cand(choices=("Europe", "Asia", "Africa", "Chile"), answer=0)
    assert a.cap_key == b.cap_key and a.key == b.key
    assert a.cap_key != c.cap_key


# --- question types -------------------------------------------------------------------

@pytest.mark.parametrize("question, qtype", [
    ("Which definition describes this object?", "definition"),
    ("What kind of animal is this object?", "taxonomy"),
    ("In which country was this object first bred?", "origin"),
    ("What kind of water does this object live in?", "habitat"),
    ("What is this object usually made of?", "material"),
    ("What does this object eat?", "behaviour"),
    ("What is this object used for?", "use"),
    ("Which of these is a part of this object?", "parts"),
    ("In which century was this object invented?", "history"),
])
def test_question_types_of_free_text_questions(question: str, qtype: str) -> None:
    from vlmrobust.builders.imagewikiqa.qtypes import question_type

    assert question_type("llm", question) == qtype


