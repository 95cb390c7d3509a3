"""Slots of object sentences: the typed fact a cloze question blanks out.

Closed types (region, habitat, material, colour: vocab.py) are matched against
their word groups; open types (family names, scientific families, uses) by
pattern. A fact counts when enough (source-weighted) sentences state it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from vlmrobust.builders.imagewikiqa.question import BLANK
from vlmrobust.builders.imagewikiqa.sources.sentences import ObjectSentence
from vlmrobust.builders.imagewikiqa.vocab import SLOT_TYPES, SlotType

STOP = frozenset(["a", "an", "the", "of", "to", "for", "and", "or", "in", "on", "with", "by", "as", "at", "from", "its", "it", "is", "are", "be"])
SOURCE_WEIGHT = {"wordnet": 2, "gpt": 2, "wikipedia": 2, "cupl": 1}

FAMILY = re.compile(r"\b(?:of|in|to|from) the ([a-z]+) family\b")
SCI_FAMILY = re.compile(r"\b([A-Z][a-z]{3,}idae)\b")
PURPOSE = re.compile(
    r"\bused (?:for|to) ([a-z][a-z'\-]*(?: [a-z][a-z'\-]*){0,4}?)"
    r"(?=[.,;:!]|\s(?:and|or|in|by|on|at|with|when|because|that|which)\b|$)")
VAGUE = re.compile(r"\b(?:purpose|purposes|thing|things|variety|many|various|different|"
                   r"character|it|them|this|that)\b")
GENERIC_FAMILY = frozenset({"same", "genus", "species", "plant", "animal", "bird", "fish",
                            "dog", "cat", "a", "its", "their", "whole"})


@dataclass(frozen=True)
class Slot:
    kind: str
    value: str       # the blanked text, as written in the sentence
    key: str         # what counts as "the same fact" (group rep or lower-case value)
    sentence: ObjectSentence
    start: int
    end: int


def _word_re(words: Sequence[str], compounds: bool) -> re.Pattern[str]:
    """Whole words; ``compounds=False`` also refuses parts of hyphenated words
    (blanking "brown" in "olive-brown" reads badly), while a mention check must
    see them (``compounds=True``)."""
    alts = "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))
    edge = r"\w" if compounds else r"\w-"
    return re.compile(rf"(?<![{edge}])(?:{alts})(?![{edge}])", re.IGNORECASE)


@functools.cache
def _answer_re(slot_type: SlotType) -> re.Pattern[str]:
    return _word_re([w for g in slot_type.groups for w in g.answers], compounds=False)


@functools.cache
def mention_res(slot_type: SlotType) -> tuple[re.Pattern[str], ...]:
    return tuple(_word_re(g.mentions, compounds=True) for g in slot_type.groups)


def closed_slots(sentences: Sequence[ObjectSentence]) -> list[Slot]:
    slots: list[Slot] = []
    for o in sentences:
        for st in SLOT_TYPES:
            start = 0
            if st.trigger is not None:
                t = re.search(st.trigger, o.text, re.IGNORECASE)
                if t is None:
                    continue
                start = t.end()
            for m in _answer_re(st).finditer(o.text, start):
                group = st.group_of(m.group(0))
                if group is not None:
                    slots.append(Slot(st.name, m.group(0), group.rep[0], o, m.start(), m.end()))
    return slots


def open_slots(sentences: Sequence[ObjectSentence]) -> list[Slot]:
    slots: list[Slot] = []
    for o in sentences:
        for m in FAMILY.finditer(o.text):
            if m.group(1) not in GENERIC_FAMILY:
                slots.append(Slot("family", m.group(1), m.group(1), o, m.start(1), m.end(1)))
        for m in SCI_FAMILY.finditer(o.text):
            slots.append(Slot("sci-family", m.group(1), m.group(1).lower(), o,
                              m.start(1), m.end(1)))
        for m in PURPOSE.finditer(o.text):
            value = m.group(1).strip()
            first, last = value.split()[0], value.split()[-1]
            if last not in STOP and first not in STOP and not VAGUE.search(value):
                slots.append(Slot("purpose", value, value.lower(), o, m.start(1), m.end(1)))
    return slots


def supported_facts(slots: Sequence[Slot], min_support: int) -> dict[tuple[str, str], list[Slot]]:
    """(kind, key) -> its slots, for facts stated by enough (weighted) sentences."""
    by_fact: dict[tuple[str, str], list[Slot]] = {}
    for s in slots:
        by_fact.setdefault((s.kind, s.key), []).append(s)
    out = {}
    for fact, group in by_fact.items():
        support = sum(SOURCE_WEIGHT[s.sentence.source]
                      for s in {id(x.sentence): x for x in group}.values())
        need = next((st.min_support for st in SLOT_TYPES if st.name == fact[0]), min_support)
        if support >= need:
            out[fact] = group
    return out


def best_slot(group: Sequence[Slot], used: set[str]) -> Slot | None:
    """The slot to blank for a fact: from a curated source first (WordNet, GPT
    description), then the shortest sentence; never a sentence already used."""
    free = [s for s in group if s.sentence.text not in used]
    if not free:
        return None
    return min(free, key=lambda s: (-SOURCE_WEIGHT[s.sentence.source], len(s.sentence.text),
                                    s.sentence.text))


def cloze_text(slot: Slot) -> str:
    before = slot.sentence.text[: slot.start]
    after = slot.sentence.text[slot.end:]
    before = re.sub(r"\b([Aa])n? $", r"\1(n) ", before)
    return f'Complete the sentence: "{before}{BLANK}{after}"'


def reference_text(group: Sequence[Slot]) -> str:
    seen = list(dict.fromkeys(s.sentence.original for s in group))
    return " ".join(seen[:3])
