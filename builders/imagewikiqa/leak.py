"""Does a text name the class? Case-insensitive, on word boundaries, with plural
forms and hyphen/space variants of every name (class name, WordNet lemmas,
alternative names). The genus word of a Latin binomial lemma ("Tinca" of
"Tinca tinca") counts as a name on its own."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


def plural_forms(word: str) -> set[str]:
    """Singular and plural spellings of one (lower-case) word; over-generating
    is harmless (a leak check that is too strict only drops a question).

    >>> sorted(plural_forms("butterfly"))
    ['butterflies', 'butterfly', 'butterflyes', 'butterflys']
    >>> sorted(plural_forms("box"))
    ['box', 'boxes', 'boxs']
    >>> sorted(plural_forms("goose"))
    ['geese', 'goose', 'goosees', 'gooses']
    """
    forms = {word, word + "s", word + "es"}
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        forms.add(word[:-1] + "ies")
    if word.endswith(("f", "fe")):
        forms.add(re.sub(r"fe?$", "ves", word))
    if word.endswith("man"):
        forms.add(word[:-3] + "men")
    irregular = {"goose": "geese", "mouse": "mice", "louse": "lice", "foot": "feet",
                 "tooth": "teeth", "ox": "oxen", "child": "children"}
    if word in irregular:
        forms.add(irregular[word])
    if word.endswith("s") and len(word) > 3:
        forms.add(word[:-1])
    return forms


def _name_pattern(name: str) -> str | None:
    words = re.findall(r"[a-z0-9']+", name.lower())
    if not words:
        return None
    last = "(?:" + "|".join(sorted(map(re.escape, plural_forms(words[-1])), key=len,
                                   reverse=True)) + ")"
    head = [re.escape(w) for w in words[:-1]]
    # "hot dog", "hot-dog" and "hotdog" are the same name.
    return r"[\s\-]?".join([*head, last])


@dataclass(frozen=True)
class LeakChecker:
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("LeakChecker needs at least one name")
        # The genus of a Latin binomial names the class as surely as the binomial.
        tokens = {
            m.group(1) for n in self.names
            if (m := re.fullmatch(r"([A-Z][a-z]{2,}) [a-z]+", n.strip()))
        }
        pats = {p for n in (*self.names, *tokens) if (p := _name_pattern(n))}
        object.__setattr__(
            self, "_regex",
            re.compile(r"(?<![a-z0-9])(?:" + "|".join(sorted(pats, key=len, reverse=True))
                       + r")(?![a-z0-9])", re.IGNORECASE),
        )

    def find(self, text: str) -> str | None:
        """The first name found in ``text``, or None.

        >>> LeakChecker(("tench", "Tinca tinca")).find("Where do Tenches live?")
        'Tenches'
        >>> LeakChecker(("tench", "Tinca tinca")).find("genus Tinca")
        'Tinca'
        >>> LeakChecker(("hot dog",)).find("a hot-dog stand") is None
        False
        >>> LeakChecker(("cat",)).find("a catalogue") is None
        True
        """
        m = self._regex.search(text)  # type: ignore[attr-defined]
        return m.group(0) if m else None

    def leaks(self, texts: Iterable[str]) -> str | None:
        for t in texts:
            hit = self.find(t)
            if hit is not None:
                return hit
        return None

    def match_start(self, text: str) -> int | None:
        """Length of a name at the very start of ``text`` (after an article), or None.

        >>> LeakChecker(("tench",)).match_start("The tench is a fish.")
        9
        """
        m = re.match(r"(?:(?:a|an|the)\s+)?", text, re.IGNORECASE)
        start = m.end() if m else 0
        hit = self._regex.match(text, start)  # type: ignore[attr-defined]
        return hit.end() if hit else None
