"""The class's sentences as the offline generator uses them: each rewritten to
start with "This object" (the subject replaced), dropped where it still names
the class or is too long to read as a question."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vlmrobust.builders.imagewikiqa.leak import LeakChecker
from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge

VERBS = {"is": "is", "are": "is", "has": "has", "have": "has", "can": "can", "lives": "lives",
         "live": "lives", "grows": "grows", "grow": "grows", "was": "was", "were": "was"}
MAX_WORDS = 30


@dataclass(frozen=True)
class ObjectSentence:
    """A sentence about the class, rewritten to start with "This object"."""

    text: str
    original: str
    source: str  # wordnet | gpt | wikipedia | cupl

    def __post_init__(self) -> None:
        if not self.text.startswith("This object"):
            raise ValueError(f"not an object sentence: {self.text!r}")


def _article(phrase: str) -> str:
    return "an" if phrase[:1].lower() in "aeiou" else "a"


def object_sentences(k: ClassKnowledge, checker: LeakChecker) -> list[ObjectSentence]:
    """The class's sentences with the subject replaced by "This object"; sentences
    that still name the class elsewhere are dropped."""
    out: list[ObjectSentence] = []
    gloss = k.gloss.strip().rstrip(".")
    if gloss:
        lead = "" if re.match(r"(?:a|an|the)\s", gloss, re.I) else _article(gloss) + " "
        out.append(ObjectSentence(f"This object is {lead}{gloss}.", k.gloss, "wordnet"))
    for i, s in enumerate(k.description):
        if i == 0 and re.match(r"(?:A|An)\s", s):
            out.append(ObjectSentence("This object is " + s[0].lower() + s[1:], s, "gpt"))
        elif s.startswith("It "):
            out.append(ObjectSentence("This object " + s[3:], s, "gpt"))
    for s, source in [*((w, "wikipedia") for w in k.wikipedia), *((c, "cupl") for c in k.cupl)]:
        if s.startswith("It ") and len(s) > 3:
            out.append(ObjectSentence("This object " + s[3:], s, source))
            continue
        end = checker.match_start(s)
        if end is None:
            continue
        # "The tench (Tinca tinca) is ...": the parenthesis is more of the name.
        rest = re.sub(r"^\s*\([^)]*\),?", "", s[end:])
        verb, _, tail = rest.strip().partition(" ")
        if verb.lower() in VERBS and tail:
            out.append(ObjectSentence(f"This object {VERBS[verb.lower()]} {tail}", s, source))
    return [
        o for o in out
        if checker.find(o.text) is None and 4 <= len(o.text.split()) <= MAX_WORDS
    ]
