"""Offline question generator (the embedded default; no LLM).

From each class's facts (knowledge.py) it writes:

- cloze questions: a descriptive sentence about the class, rewritten with "this
  object" as subject, with one typed slot blanked (region, habitat, material,
  colour from vocab.py; family names and uses, whose distractors are the same
  kind of fact of the nearest *other* classes in WordNet). A value must be
  stated by several sentences (CuPL is noisy) and a distractor must never be
  mentioned anywhere in the class's text;
- WordNet questions: the category (direct hypernym), a part (meronym), the
  group it is a member of (member holonym), and its definition (gloss), with
  distractors from the nearest other classes that are not true of this one.

The rewritten sentences come from sentences.py, the blankable facts and their
support from slots.py; this module picks facts, distractors and option order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from vlmrobust.builders.imagewikiqa.leak import LeakChecker
from vlmrobust.builders.imagewikiqa.question import N_CHOICES, Candidate, normalise_text
from vlmrobust.builders.imagewikiqa.seeds import rng_for
from vlmrobust.builders.imagewikiqa.slots import (
    STOP,
    best_slot,
    closed_slots,
    cloze_text,
    mention_res,
    open_slots,
    reference_text,
    supported_facts,
)
from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge
from vlmrobust.builders.imagewikiqa.sources.sentences import ObjectSentence, object_sentences
from vlmrobust.builders.imagewikiqa.vocab import SLOT_TYPES

PER_TYPE = 2          # cloze questions per slot type per class
NEIGHBOURS = 60       # nearest classes searched for open-type distractors


@dataclass(frozen=True)
class OfflineGenerator:
    """Candidate questions for classes of ``knowledge`` (all 1000 classes: other
    classes supply distractors)."""

    knowledge: tuple[ClassKnowledge, ...]
    seed: int = 0
    min_support: int = 2

    @functools.cached_property
    def _open_facts(self) -> dict[int, dict[str, list[str]]]:
        """index -> kind -> supported open-type values (family, sci-family, purpose)."""
        out: dict[int, dict[str, list[str]]] = {}
        for k in self.knowledge:
            # Values only (no blanking), so raw sentences do: no subject rewriting
            # and no per-class leak regex for all 1000 classes.
            raw = [ObjectSentence("This object " + k.gloss, k.gloss, "wordnet")]
            raw += [ObjectSentence("This object " + t, t, "gpt") for t in k.description]
            raw += [ObjectSentence("This object " + t, t, "cupl") for t in k.cupl
                    if "used" in t or "family" in t or "idae" in t]
            facts = supported_facts(open_slots(raw), self.min_support)
            kinds: dict[str, list[str]] = {}
            for (kind, _), group in sorted(facts.items()):
                kinds.setdefault(kind, []).append(group[0].value)
            out[k.index] = kinds
        return out

    def neighbours(self, k: ClassKnowledge) -> list[ClassKnowledge]:
        """Other classes, nearest first: longest shared WordNet hypernym path, then
        a seeded tie-break (so distractors vary between equally near classes)."""
        def shared(o: ClassKnowledge) -> int:
            n = 0
            for a, b in zip(k.path, o.path, strict=False):
                if a != b:
                    break
                n += 1
            return n

        rng = rng_for(self.seed, k.wnid, "neighbours")
        ties = rng.permutation(len(self.knowledge))
        others = [(-shared(o), int(ties[i]), o) for i, o in enumerate(self.knowledge)
                  if o.index != k.index]
        others.sort(key=lambda t: (t[0], t[1]))
        return [o for _, _, o in others]

    def generate(self, k: ClassKnowledge) -> list[Candidate]:
        checker = LeakChecker(k.names)
        sentences = object_sentences(k, checker)
        near = self.neighbours(k)
        used: set[str] = set()  # one cloze per sentence: a second would give the first away
        out = self._cloze_closed(k, sentences, checker, used)
        out += self._cloze_open(k, sentences, checker, near, used)
        out += self._wordnet(k, checker, near)
        unique: dict[str, Candidate] = {}
        for c in out:
            unique.setdefault(normalise_text(c.question) + "|" + normalise_text(c.answer_text), c)
        return list(unique.values())

    def _make(self, k: ClassKnowledge, question: str, answer: str, distractors: Sequence[str],
              reference: str, kind: str, checker: LeakChecker) -> Candidate | None:
        choices = [answer, *distractors]
        if len({normalise_text(c) for c in choices}) != N_CHOICES:
            return None
        if checker.leaks([question, *choices]) is not None:
            return None
        rng = rng_for(self.seed, k.wnid, kind, question, "order")
        order = [int(i) for i in rng.permutation(N_CHOICES)]
        shuffled = tuple(choices[i] for i in order)
        return Candidate(wnid=k.wnid, label=k.index, question=question, choices=shuffled,
                         answer=order.index(0), reference=reference, kind=kind)

    def _cloze_closed(self, k: ClassKnowledge, sentences: Sequence[ObjectSentence],
                      checker: LeakChecker, used: set[str]) -> list[Candidate]:
        facts = supported_facts(closed_slots(sentences), self.min_support)
        text = k.text
        # "white" for the great white shark: the answer would be half the name.
        name_words = {w for n in k.names for w in re.findall(r"[a-z]+", n.lower())}
        out: list[Candidate] = []
        for st in SLOT_TYPES:
            free = [g for g, rx in zip(st.groups, mention_res(st), strict=True)
                    if not rx.search(text)]
            mine = sorted((f for f in facts if f[0] == st.name), key=lambda f: -len(facts[f]))
            mine = [f for f in mine if f[1].lower() not in name_words
                    and not any(s.value.lower() in name_words for s in facts[f])]
            for fact in mine[:PER_TYPE]:
                group = facts[fact]
                slot = best_slot(group, used)
                if slot is None:
                    continue
                if len(free) < N_CHOICES - 1:
                    break
                rng = rng_for(self.seed, k.wnid, st.name, fact[1])
                picks = [free[int(i)] for i in rng.choice(len(free), N_CHOICES - 1,
                                                          replace=False)]
                plural = slot.value.lower().endswith("s") and st.name == "habitat"
                dis = [g.rep[1] if plural else g.rep[0] for g in picks]
                if slot.value[:1].islower():
                    dis = [d if st.proper else d.lower() for d in dis]
                c = self._make(k, cloze_text(slot), slot.value, dis, reference_text(group),
                               f"cloze-{st.name}", checker)
                if c is not None:
                    out.append(c)
                    used.add(slot.sentence.text)
        return out

    def _cloze_open(self, k: ClassKnowledge, sentences: Sequence[ObjectSentence],
                    checker: LeakChecker, near: Sequence[ClassKnowledge],
                    used: set[str]) -> list[Candidate]:
        facts = supported_facts(open_slots(sentences), self.min_support)
        text = k.text
        mine_words = {w for f in facts for w in f[1].split() if w not in STOP}
        out: list[Candidate] = []
        for kind in ("family", "sci-family", "purpose"):
            mine = sorted((f for f in facts if f[0] == kind), key=lambda f: (-len(facts[f]), f))
            for fact in mine[:PER_TYPE]:
                group = facts[fact]
                slot = best_slot(group, used)
                if slot is None:
                    continue
                dis: list[str] = []
                for o in near[:NEIGHBOURS]:
                    for v in self._open_facts.get(o.index, {}).get(kind, []):
                        words = {w for w in v.lower().split() if w not in STOP}
                        if (re.search(rf"(?<!\w){re.escape(v.lower())}(?!\w)", text)
                                or words & mine_words
                                or normalise_text(v) in {normalise_text(d) for d in dis}):
                            continue
                        dis.append(v)
                        break
                    if len(dis) == N_CHOICES - 1:
                        break
                if len(dis) < N_CHOICES - 1:
                    continue
                c = self._make(k, cloze_text(slot), slot.value, dis, reference_text(group),
                               f"cloze-{kind}", checker)
                if c is not None:
                    out.append(c)
                    used.add(slot.sentence.text)
        return out

    def _wordnet(self, k: ClassKnowledge, checker: LeakChecker,
                 near: Sequence[ClassKnowledge]) -> list[Candidate]:
        out: list[Candidate] = []
        ref = f"{k.name}: {k.gloss}."
        ancestors_text = {a.split(".")[0].replace("_", " ").lower() for a in k.ancestors}

        def pick(values: Sequence[str], bad: set[str]) -> list[str]:
            chosen: list[str] = []
            for v in values:
                key = v.lower()
                if key in bad or key in {c.lower() for c in chosen} or not v:
                    continue
                chosen.append(v)
                if len(chosen) == N_CHOICES - 1:
                    break
            return chosen

        if k.hypernym:
            bad = ancestors_text | {k.hypernym.lower()}
            dis = pick([o.hypernym for o in near], bad)
            if len(dis) == N_CHOICES - 1:
                c = self._make(k, "Which category does this object belong to?", k.hypernym,
                               dis, f"{ref} It is a kind of {k.hypernym}.", "wordnet-hypernym",
                               checker)
                if c:
                    out.append(c)
        if k.parts:
            rng = rng_for(self.seed, k.wnid, "part")
            part = k.parts[int(rng.integers(len(k.parts)))]
            bad = {p.lower() for p in k.all_parts}
            pool = [p for o in near[:NEIGHBOURS] for p in o.parts
                    if not re.search(rf"(?<!\w){re.escape(p.lower())}(?!\w)", k.text)]
            dis = pick(pool, bad)
            if len(dis) == N_CHOICES - 1:
                c = self._make(k, "Which of these is a part of this object?", part, dis,
                               f"{ref} It has a {part}.", "wordnet-part", checker)
                if c:
                    out.append(c)
        if k.member_of:
            bad = {m.lower() for m in k.member_of}
            dis = pick([m for o in near for m in o.member_of], bad)
            if len(dis) == N_CHOICES - 1:
                c = self._make(k, "Which group is this object a member of?", k.member_of[0],
                               dis, f"{ref} It is a member of {k.member_of[0]}.",
                               "wordnet-member", checker)
                if c:
                    out.append(c)
        if k.gloss:
            glosses = [o.gloss for o in near[:NEIGHBOURS]
                       if o.gloss and checker.find(o.gloss) is None]
            dis = pick([_cap(g) for g in glosses], {k.gloss.lower()})
            if len(dis) == N_CHOICES - 1:
                c = self._make(k, "Which definition describes this object?", _cap(k.gloss),
                               dis, ref, "wordnet-gloss", checker)
                if c:
                    out.append(c)
        return out


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def generate_all(generator: OfflineGenerator,
                 classes: Sequence[ClassKnowledge]) -> dict[str, list[Candidate]]:
    return {k.wnid: generator.generate(k) for k in classes}
