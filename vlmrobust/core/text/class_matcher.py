"""Free text -> the class of a label space it names (kind classification):
stages 2 and 3 of :func:`vlmrobust.core.text.matcher.match_option` over every class
name and synonym, through a word index so that a 1,000-class space costs a few
look-ups per text; and the text rules a generated answer is read by
(:class:`TextRule`, :meth:`ClassMatcher.answer`).

Seed 002 §2.3: "We define success on a single example as whether the ground-truth
label is included in the VLM generation" — the ``inclusion`` rule, the default
in the open and the closed world. Its Table 1 is scored with the class name
alone and its Table 8 "with label synonyms" (App. A.3: "We treat the
classification as correct if any textual label is included"): ``synonyms``
adds each class's synonyms (the WordNet lemmas of an ImageNet class). The
``strict`` rule is the project's matcher: the one class the text answers, so
a text naming two classes answers neither."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vlmrobust.core.label_space import LabelSpace
from vlmrobust.core.text.matcher import (
    _CUE_RE,
    _by_names,
    _fold_name,
    _prepare,
    _unambiguous,
    fold,
    names_in_text,
)

RULES = ("inclusion", "strict")


@dataclass(frozen=True)
class TextRule:
    """How a generated text over a label space is read: ``rule`` inclusion
    (right when the true class is named anywhere) or strict (the one class the
    text answers), over the class names alone or with their ``synonyms``.

    >>> [r.id for r in TEXT_RULES]
    ['inclusion', 'inclusion+synonyms', 'strict', 'strict+synonyms']
    >>> TextRule.parse("strict+synonyms") == TextRule("strict", True)
    True
    """

    rule: str = "inclusion"
    synonyms: bool = False

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"text rule {self.rule!r} is not one of {', '.join(RULES)}")

    @property
    def id(self) -> str:
        return self.rule + ("+synonyms" if self.synonyms else "")

    @classmethod
    def parse(cls, text: str) -> TextRule:
        found = next((r for r in TEXT_RULES if r.id == text), None)
        if found is None:
            raise ValueError(f"text rule {text!r}: use one of {', '.join(r.id for r in TEXT_RULES)}")
        return found


TEXT_RULES = tuple(TextRule(rule, syn) for rule in RULES for syn in (False, True))
#: seed 002's Table 1 (and the headline): inclusion of the class name
DEFAULT_TEXT_RULE = TextRule()
#: seed 002's Table 8: inclusion of the class name or a synonym
SYNONYMS_RULE = TextRule("inclusion", True)


def _word_keys(folded: str) -> set[str]:
    """Every word of a folded text and what it is the plural of (the plural rule
    of :func:`_name_pattern`), so that a name can only match a text holding one
    of its keys (:meth:`ClassMatcher._key`)."""
    keys = set()
    for w in folded.split():
        keys.add(w)
        if w.endswith("s"):
            keys.add(w[:-1])
        if w.endswith("es"):
            keys.add(w[:-2])
        if w.endswith("ies"):
            keys.add(w[:-3] + "y")
    return keys


class ClassMatcher:
    """Free text -> the class of a label space it names (classification kind).

    The option-text and synonym stages of :func:`match_option` (stages 2 and 3,
    same folding, word-boundary, plural, answer-cue and several-names rules)
    over every class name of a label space, or over the ``candidates`` of a
    K-config row; **no letter stage** (a label space is not shown as lettered
    options). Names are folded and indexed once per label space: a text is
    only compared with the names whose first word (or singular) it contains,
    so a 1,000-class space costs a few dictionary look-ups per text.

    >>> m = ClassMatcher(["tench", "goldfish", "great white shark"], [[], [], ["man-eater"]])
    >>> m.match("It is a goldfish."), m.match("The answer is a man-eater"), m.match("a tench or a goldfish")
    (1, 2, None)
    >>> m.match("a tench or a goldfish", candidates=[1, 2])
    1
    """

    def __init__(self, names: Sequence[str], synonyms: Sequence[Sequence[str]]) -> None:
        if len(synonyms) != len(names):
            raise ValueError(f"synonyms has {len(synonyms)} entries for {len(names)} classes")
        self.names = tuple(names)
        self.synonyms = tuple(tuple(s) for s in synonyms)
        self._own = [[(f, i)] if (f := _fold_name(n)) else [] for i, n in enumerate(names)]
        self._syn = [[(f, i) for s in group if (f := _fold_name(s))]
                     for i, group in enumerate(synonyms)]
        self._full: tuple[dict[str, list[tuple[str, int]]], dict[str, list[tuple[str, int]]]] | None = None
        self._any: tuple[dict[str, list[tuple[str, int]]], ...] = ()
        self._owners: tuple[dict[str, frozenset[int]], ...] = ()

    @classmethod
    def for_space(cls, space: LabelSpace) -> ClassMatcher:
        """A label space's matcher: each class by its label text (what prompts
        write, OpenAI CLIP's name in an ImageNet build: seed 002's class name)
        with its synonyms (an ImageNet class's WordNet lemmas)."""
        return cls(space.texts, [c.synonyms for c in space.classes])

    @staticmethod
    def _key(folded_name: str) -> str:
        return folded_name.split(" ", 1)[0]

    def _indexed(self, pairs: list[tuple[str, int]]) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for pair in _unambiguous(pairs):
            out.setdefault(self._key(pair[0]), []).append(pair)
        return out

    def _tables(self) -> tuple[dict[str, list[tuple[str, int]]], dict[str, list[tuple[str, int]]]]:
        if self._full is None:
            named = [p for ps in self._own for p in ps]
            both = list(dict.fromkeys([*named, *(p for ps in self._syn for p in ps)]))
            self._full = (self._indexed(named), self._indexed(both))
            # every pair (ambiguous ones too) and each name's owners, for candidate rows
            self._any = (self._indexed_all(named), self._indexed_all(both))
            self._owners = (self._owner_sets(named), self._owner_sets(both))
        return self._full

    def _indexed_all(self, pairs: list[tuple[str, int]]) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for pair in pairs:
            out.setdefault(self._key(pair[0]), []).append(pair)
        return out

    @staticmethod
    def _owner_sets(pairs: list[tuple[str, int]]) -> dict[str, frozenset[int]]:
        owners: dict[str, set[int]] = {}
        for name, owner in pairs:
            owners.setdefault(name, set()).add(owner)
        return {n: frozenset(o) for n, o in owners.items()}

    def match(self, text: str, candidates: Sequence[int] | None = None,
              synonyms: bool = True) -> int | None:
        """The index (into the label space) of the class ``text`` answers, or
        None; with ``candidates`` only those classes are answerable (and only
        a name shared among them is ambiguous); ``synonyms`` False reads the
        class names alone."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if candidates is not None and any(not 0 <= c < len(self.names) for c in candidates):
            raise ValueError(f"a candidate is outside 0..{len(self.names) - 1}")
        body = _prepare(text)
        keys = _word_keys(fold(body))
        cues = list(_CUE_RE.finditer(body))
        if cues:  # a cue may end inside a word ("answer isespresso"): _by_names reads after it
            keys |= _word_keys(fold(body[cues[-1].end():]))
        full = self._tables()
        for stage in (0, 1) if synonyms else (0,):
            if candidates is None:
                pairs = [p for k in keys for p in full[stage].get(k, ())]
            else:
                # a name answers only when exactly one candidate owns it
                shown, owners = set(candidates), self._owners[stage]
                pairs = list(dict.fromkeys(p for k in keys for p in self._any[stage].get(k, ())
                                           if p[1] in shown and len(owners[p[0]] & shown) == 1))
            found = _by_names(body, pairs)
            if found is not None:
                return found
        return None

    def names_of(self, i: int, synonyms: bool = True) -> tuple[str, ...]:
        """Class ``i``'s name and (with ``synonyms``) its synonyms."""
        return (self.names[i], *self.synonyms[i]) if synonyms else (self.names[i],)

    def answer(self, text: str, label: int, candidates: Sequence[int] | None = None,
               rule: TextRule = DEFAULT_TEXT_RULE) -> int | None:
        """The class (label-space index) ``text`` counts as under ``rule``:
        ``label`` when it names the true class (inclusion), else the class the
        strict reading finds (wrong either way), else None (no answer).

        >>> m = ClassMatcher(["goldfish", "tank", "tench"], [["Carassius auratus"], [], []])
        >>> m.answer("A goldfish swimming in a fish tank", 0)
        0
        >>> m.answer("A goldfish swimming in a fish tank", 0, rule=TextRule("strict")) is None
        True
        >>> m.answer("Carassius auratus", 0), m.answer("Carassius auratus", 0, rule=SYNONYMS_RULE)
        (None, 0)
        >>> m.answer("a tench", 0)
        2
        """
        if not 0 <= label < len(self.names):
            raise ValueError(f"label {label} is outside 0..{len(self.names) - 1}")
        if rule.rule == "inclusion" and names_in_text(text, self.names_of(label, rule.synonyms)):
            return label
        return self.match(text, candidates, synonyms=rule.synonyms)
