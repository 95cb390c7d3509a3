"""The imagewikiqa filter on small hand-made inputs: dedup, the rules, the
seed's two answerer steps with scripted answerers, and the answerers themselves
(MiniLM guesser, blind probes, LLM answerer prompts)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tests.fixtures.imagewikiqa import cand
from vlmrobust.builders.imagewikiqa.filter import dedup_mask, filter_candidates, stage_counts

# --- dedup and filter -------------------------------------------------------------------

def test_dedup_mask_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 8))
    v = np.concatenate([base, base[:15] + rng.normal(scale=0.01, size=(15, 8))])
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    mask = dedup_mask(v, 0.99)
    kept: list[int] = []
    for i in range(len(v)):
        if all(v[i] @ v[j] <= 0.99 for j in kept):
            kept.append(i)
    assert np.flatnonzero(mask).tolist() == kept
    assert mask.sum() == 40


class ScriptedAnswerer:
    """Answers from a table: (question, told the name?) -> option index."""

    name = "scripted"

    def __init__(self, table: dict[tuple[str, bool], int]) -> None:
        self.table = table

    def answer(self, questions, class_names):  # type: ignore[no-untyped-def]
        return [self.table[(q.question, n is not None)] for q, n in zip(questions, class_names,
                                                                         strict=True)]


def test_filter_rules() -> None:
    good = cand(q="Where is this object native to?")
    guessable = cand(q="Which continent is this object, a European fish, from?")
    unknown = cand(q="What does this object eat?")
    leaky = cand(q="Where do tenches live?")
    dup = cand(q="Where is this object native to, exactly?")
    table = {(good.question, True): 0, (good.question, False): 2,
             (guessable.question, True): 0, (guessable.question, False): 0,
             (unknown.question, True): 3, (unknown.question, False): 1,
             (dup.question, True): 0, (dup.question, False): 1}

    def embed(texts):  # type: ignore[no-untyped-def]
        # good and dup are the same question for this embedding.
        vecs = [[1.0, 0.0] if "native to" in t else [0.0, 1.0] for t in texts]
        return np.asarray(vecs, dtype=np.float32)

    result = filter_candidates({"n01440764": [good, guessable, unknown, leaky, dup]},
                               {"n01440764": ("tench", "Tinca tinca")},
                               ScriptedAnswerer(table), embed, 0.9)
    assert result.kept["n01440764"] == [good]
    assert result.dropped == Counter({"leak": 1, "guessed_without_name": 1,
                                      "wrong_with_name": 1, "duplicate": 1})
    assert result.total == 5 and result.survival == pytest.approx(0.2)


# --- the MiniLM guesser ----------------------------------------------------------------

class KeywordModel:
    """A stand-in sentence encoder: one axis per keyword present in the text."""

    KEYWORDS = ("tiger", "black", "blue", "stripes", "___")

    def encode(self, texts, **kwargs):  # type: ignore[no-untyped-def]
        vecs = np.array([[1.0 if k in t.lower() else 0.0 for k in self.KEYWORDS] + [0.1]
                         for t in texts], dtype=np.float32)
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_minilm_guesser_fills_cloze_blanks() -> None:
    from vlmrobust.builders.imagewikiqa.answerers import MiniLMGuesser, TextEmbedder

    q = cand(q='Complete the sentence: "This object has ___ stripes."',
             choices=("blue", "black", "green", "pink"), answer=1)
    calls: list[list[str]] = []

    class Recording(KeywordModel):
        def encode(self, texts, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(list(texts))
            return super().encode(texts)

    guesser = MiniLMGuesser(TextEmbedder(Recording()))
    guesser.answer([q], ["tiger"])
    # The options are scored as completed sentences, against the class name.
    assert "This object has black stripes." in calls[0] and "tiger" in calls[0]
    plain = cand(q="What colour are the stripes of this object?",
                 choices=("blue", "black", "green", "pink"), answer=1)
    # Told, "this object" becomes the name (which says "black"); blind, it does not.
    assert guesser.answer([plain], ["a black tiger"]) == [1]
    assert guesser.answer([plain], [None]) != [1]


# --- the seed's two filter steps with a fake answerer -------------------------------------

class FakeKnower:
    """Knows the right answer for the classes in ``knows`` *when told the name*;
    blind it picks the option that shares a word with the question (a crude
    guesser), else option 3. Records what it was told."""

    name = "fake"

    def __init__(self, knows: set[str]) -> None:
        self.knows = knows
        self.calls: list[list[str | None]] = []

    def answer(self, questions, class_names):  # type: ignore[no-untyped-def]
        self.calls.append(list(class_names))
        out = []
        for q, n in zip(questions, class_names, strict=True):
            if n is not None:
                out.append(q.answer if n in self.knows else (q.answer + 1) % 4)
                continue
            words = set(q.question.lower().replace("?", "").split())
            hit = [i for i, c in enumerate(q.choices) if c.lower() in words]
            out.append(hit[0] if hit else 3)
        return out


def test_step1_drops_what_the_answerer_gets_wrong_with_the_name() -> None:
    tench = cand(q="Where is this object native to?", answer=0)
    koala = cand(wnid="n01882714", label=105, q="Where does this object live?", answer=1)
    knower = FakeKnower({"tench"})
    result = filter_candidates({"n01440764": [tench], "n01882714": [koala]},
                               {"n01440764": ("tench",), "n01882714": ("koala",)},
                               knower, lambda ts: np.eye(len(ts), dtype=np.float32), 0.9)
    assert result.kept == {"n01440764": [tench], "n01882714": []}
    assert result.dropped == Counter({"wrong_with_name": 1})
    # Step 1 is told each question's own class name; step 2 sees only step-1 survivors, blind.
    assert knower.calls == [["tench", "koala"], [None]]


def test_step2_drops_what_the_answerer_guesses_blind() -> None:
    guessable = cand(q="Is this object found in Europe or elsewhere?",
                     choices=("Asia", "Europe", "Africa", "Peru"), answer=1)
    hard = cand(q="Where is this object native to?", choices=("Asia", "Europe", "Africa", "Peru"),
                answer=1)
    lucky_miss = cand(q="Which continent is home to this object?",
                      choices=("Asia", "Europe", "Africa", "Peru"), answer=3)
    knower = FakeKnower({"tench"})
    result = filter_candidates({"n01440764": [guessable, hard, lucky_miss]},
                               {"n01440764": ("tench",)}, knower,
                               lambda ts: np.eye(len(ts), dtype=np.float32), 0.9)
    # Blind: "europe" is in the question -> guessed right -> dropped; the others
    # fall back to option 3, which is right for lucky_miss -> dropped too.
    assert result.kept["n01440764"] == [hard]
    assert result.dropped == Counter({"guessed_without_name": 2})
    assert stage_counts(result) == [("leak", 0, 3), ("no_subject", 0, 3),
                                    ("wrong_with_name", 0, 3), ("guessed_without_name", 2, 1),
                                    ("duplicate", 0, 1)]


def test_questions_without_this_object_cannot_take_the_name() -> None:
    q = cand(q="Where do fish of this kind live?")
    result = filter_candidates({"n01440764": [q]}, {"n01440764": ("tench",)},
                               FakeKnower({"tench"}), lambda ts: np.eye(len(ts)), 0.9)
    assert result.dropped == Counter({"no_subject": 1})


# --- blind probes ------------------------------------------------------------------------------

def test_blind_rates_count_right_answers() -> None:
    from vlmrobust.builders.imagewikiqa.blind import blind_rates, longest_option

    qs = [cand(choices=("a", "bbbb", "cc", "d"), answer=1),
          cand(choices=("aaaa", "b", "cc", "d"), answer=2)]
    (rate,) = blind_rates(qs, {"longest": longest_option})
    assert (rate.correct, rate.n, rate.rate) == (1, 2, 0.5)


def test_llm_answerer_asks_the_seeds_prompts() -> None:
    from vlmrobust.builders.imagewikiqa.generate.llm import LLMAnswerer
    from vlmrobust.builders.imagewikiqa.generate.llm_client import ChatClient

    seen: list[str] = []

    def transport(url, body, headers, timeout):  # type: ignore[no-untyped-def]
        import json

        seen.append(json.loads(body)["messages"][0]["content"])
        reply = {"choices": [{"message": {"role": "assistant", "content": "A"}}]}
        return 200, json.dumps(reply).encode()

    q = cand(q="This object lives where? Is this object shy?")
    answerer = LLMAnswerer(ChatClient(base_url="http://x.invalid/v1", model="m",
                                      transport=transport))
    assert answerer.answer([q, q], ["tench", None]) == [0, 0]
    told, blind = seen
    assert "Tench lives where? Is tench shy?" in told and "guess" not in told
    assert "This object lives where?" in blind
    assert "Try your best to guess the answer without knowing the object." in blind
