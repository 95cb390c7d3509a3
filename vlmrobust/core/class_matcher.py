"""Free text -> the class of a label space it names (kind classification):
stages 2 and 3 of :func:`vlmrobust.core.matcher.match_option` over every class
name and synonym, through a word index so that a 1,000-class space costs a few
look-ups per text."""

from __future__ import annotations

from collections.abc import Sequence

from vlmrobust.core.matcher import _CUE_RE, _by_names, _fold_name, _prepare, _unambiguous, fold


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

    def match(self, text: str, candidates: Sequence[int] | None = None) -> int | None:
        """The index (into the label space) of the class ``text`` answers, or
        None; with ``candidates`` only those classes are answerable (and only
        a name shared among them is ambiguous)."""
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
        for stage in (0, 1):
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

    def names_of(self, i: int) -> tuple[str, ...]:
        """Class ``i``'s name and synonyms (seed 002's open-world test)."""
        return (self.names[i], *self.synonyms[i])
