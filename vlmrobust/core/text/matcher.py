"""The project's answer matcher: free text -> the option it answers, or None.

One deterministic function for every place that turns generated text into an
answer (the ``generate`` reader, the scorer re-deriving ``prediction`` from a
predictions file's ``text``, imported harness outputs), so that a submitter's
own extraction is never what is scored.

Preparation (both functions)
    Anything up to the last ``</think>`` is dropped (a reasoning model's
    thoughts are not its answer); the rest is NFKC-normalised. Names are then
    compared on a *folded* form: case-folded, accents removed, every run of
    characters other than a-z and 0-9 one space (so names are compared in Latin
    script only). A name matches on whole words only
    ("cat" is not in "category") and its last word may carry a plural ending:
    ``s``, ``es``, or ``y`` -> ``ies`` ("goldfishes", "daisies").

:func:`match_option` tries, in order, and the first stage that decides wins:

1. **Option letter** (A, B, ... for the row's K options; a letter outside
   them is ignored):
   a. the whole output is a letter: ``B``, ``(B)``, ``B.``, ``**B**``;
   b. the last *answer cue* followed by a letter: ``Answer: B``, ``The answer
      is (B).``, ``correct option: b``, ``Final answer - C``, and ``B is
      correct`` / ``B is the answer``. After a cue, ``A`` followed by a word
      that begins an option's name is the article ("The answer is a
      goldfish"), not option A; a lower-case ``a`` counts only when
      parenthesised or followed by punctuation or the end;
   c. the output ends with a lone capital letter: ``I would say B.``,
      ``I think it is (C)``;
   d. the output starts with a letter and ``.``, ``)``, ``:`` or ``]``:
      ``B. goldfish``, ``(B) goldfish``;
   e. exactly one distinct parenthesised letter anywhere: ``(C) seems right``.
   Forms c to e are skipped when the output lists several distinct letters
   as ``(X)`` or at line starts as ``X.`` / ``X)`` (a restated option list).
2. **Option text**: first the clause after the last answer cue (up to the
   next ``.``, ``!``, ``?``, ``;`` or line break), where the option named
   first wins ("The answer is goldfish, not tench"); else the whole output,
   where exactly one option must be named. **An output that names several
   options outside an answer cue answers none of them** (a hedge such as "a
   tench or a goldfish", or a distractor also named, is not an answer), so
   listing every option never scores. Where one option's name contains
   another's ("great white shark" / "white shark"), the longer claims its
   words first.
3. **Synonyms** (where given, e.g. WordNet lemmas of each option's class):
   as stage 2 with each option's synonyms. A synonym shared by two options,
   or equal to another option's name, is ignored: it cannot decide.

Nothing decided: None, which scoring counts as wrong and as "no answer".
Negation is not parsed ("not a tench" names a tench).

:func:`names_in_text` (seed 002's open world) is True when any of the names
(the ground-truth class name and its synonyms) occurs in the output under the
same folding, word-boundary and plural rules.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

LETTERS = string.ascii_uppercase
_THINK_END = "</think>"
_CUE = (r"(?:\b(?:the\s+)?(?:(?:correct|final|best|right)\s+)?(?:answer|option|choice)\b"
        r"(?:\s+(?:is|would\s+be|will\s+be|should\s+be))?\s*(?:[:：\-–—=]\s*)?)")
_CUE_RE = re.compile(_CUE, re.IGNORECASE)
_CUE_LETTER_RE = re.compile(
    _CUE + r"(?:\*\*)?(?P<paren>[(\[])?\s*(?P<letter>[A-Za-z])\s*(?P<close>[)\]])?(?:\*\*)?"
    r"(?=$|[\s.,;:!?*'\"])", re.IGNORECASE)
_LETTER_IS_RE = re.compile(
    r"(?:^|[\s(\[*])(?P<letter>[A-Z])[)\]]?(?:\*\*)?\s+is\s+(?:the\s+)?(?:correct|right|answer)\b")
_TRAILING_RE = re.compile(r"(?:^|\s)(?:\*\*)?[(\[]?(?P<letter>[A-Z])[)\]]?(?:\*\*)?[.!]?\s*$")
_LEADING_RE = re.compile(r"^\s*(?:\*\*)?[(\[]?(?P<letter>[A-Z])(?:[).:\]])")
_PAREN_RE = re.compile(r"\((?P<letter>[A-Za-z])\)")
_LISTED_RE = re.compile(r"\((?P<p>[A-Za-z])\)|^\s*(?P<l>[A-Z])[.)]", re.MULTILINE)
_CLAUSE_END_RE = re.compile(r"[.!?;\n]")
_STRIP_WHOLE = " \t\r\n*\"'`.:()[]"
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def _prepare(text: str) -> str:
    cut = text.rfind(_THINK_END)
    if cut >= 0:
        text = text[cut + len(_THINK_END):]
    return unicodedata.normalize("NFKC", text)


def fold(text: str) -> str:
    """Case-folded, accent-free, punctuation as single spaces.

    >>> fold("  Great-White SHARK! (Carcharodon)")
    'great white shark carcharodon'
    """
    if text.isascii():
        bare = text.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", text.casefold())
        bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _NON_ALNUM.sub(" ", bare).strip()


# option names and synonyms repeat across rows: fold each once
_fold_name = functools.lru_cache(maxsize=1 << 16)(fold)


@functools.lru_cache(maxsize=1 << 16)
def _compiled(folded_name: str) -> tuple[str, re.Pattern[str]]:
    """(a substring every match contains, the compiled name pattern): the
    substring test skips the regex for the names a text cannot contain."""
    key = folded_name[:-1] if folded_name.endswith("y") and len(folded_name) > 1 else folded_name
    return key, re.compile(_name_pattern(folded_name))


def _name_pattern(folded_name: str) -> str:
    """Regex (on folded text) for a folded name with the plural rule."""
    words = folded_name.split(" ")
    last = words[-1]
    if last.endswith("y") and len(last) > 1:
        tail = re.escape(last[:-1]) + "(?:y|ies)"
    else:
        tail = re.escape(last) + "(?:s|es)?"
    return r"(?<![0-9a-z])" + r" ".join([*(re.escape(w) for w in words[:-1]), tail]) + r"(?![0-9a-z])"


def _mentions(folded: str, names: Sequence[tuple[str, int]]) -> list[tuple[int, int]]:
    """(start, owner) of every mention in ``folded`` of the (folded name, owner)
    pairs; longer names claim their characters first, so a shorter name inside
    a longer one's mention does not count."""
    taken = bytearray(len(folded))
    found: list[tuple[int, int]] = []
    for name, owner in sorted(names, key=lambda p: (-len(p[0]), p[0], p[1])):
        key, pattern = _compiled(name)
        if key not in folded:
            continue
        for m in pattern.finditer(folded):
            if any(taken[m.start():m.end()]):
                continue
            taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
            found.append((m.start(), owner))
    return sorted(found)


def _letter_index(letter: str, k: int) -> int | None:
    i = LETTERS.find(letter.upper())
    return i if 0 <= i < k else None


def _starts_option(rest: str, folded_options: Sequence[str]) -> bool:
    """Whether ``rest`` (the text after an "A ") begins with an option's name."""
    head = fold(rest[:200])
    return any(o and _compiled(o)[1].match(head) for o in folded_options)


def _by_letter(text: str, k: int, folded_options: Sequence[str]) -> int | None:
    whole = text.strip(_STRIP_WHOLE)
    if len(whole) == 1 and whole.isalpha():
        return _letter_index(whole, k)
    for m in reversed(list(_CUE_LETTER_RE.finditer(text))):
        letter = m.group("letter")
        bracketed = m.group("paren") is not None and m.group("close") is not None
        after = text[m.end():]
        if letter == "a" and not bracketed and not re.match(r"^\s*(?:$|[.,;:!?)\]])", after):
            continue
        if letter in "Aa" and not bracketed and re.match(r"^\s+[A-Za-z]", after) \
                and _starts_option(after, folded_options):
            continue
        idx = _letter_index(letter, k)
        if idx is not None:
            return idx
    for m in reversed(list(_LETTER_IS_RE.finditer(text))):
        idx = _letter_index(m.group("letter"), k)
        if idx is not None:
            return idx
    listed = {_letter_index(m.group("p") or m.group("l"), k) for m in _LISTED_RE.finditer(text)}
    if len(listed - {None}) > 1:
        return None
    trail = _TRAILING_RE.search(text)
    if trail is not None:
        idx = _letter_index(trail.group("letter"), k)
        if idx is not None:
            return idx
    lead = _LEADING_RE.match(text)
    if lead is not None:
        idx = _letter_index(lead.group("letter"), k)
        if idx is not None:
            return idx
    parens = {i for m in _PAREN_RE.finditer(text)
              if (i := _letter_index(m.group("letter"), k)) is not None}
    return parens.pop() if len(parens) == 1 else None


def _by_names(text: str, names: Sequence[tuple[str, int]]) -> int | None:
    if not names:
        return None
    cues = list(_CUE_RE.finditer(text))
    if cues:
        tail = text[cues[-1].end():]
        end = _CLAUSE_END_RE.search(tail)
        clause = fold(tail[:end.start()] if end is not None else tail)
        found = _mentions(clause, names)
        if found:
            return found[0][1]
    owners = {owner for _, owner in _mentions(fold(text), names)}
    return owners.pop() if len(owners) == 1 else None


def match_option(text: str, options: Sequence[str],
                 synonyms: Sequence[Sequence[str]] | None = None) -> int | None:
    """The index of the option ``text`` answers, or None (no answer); the rules
    are the module docstring's.

    >>> opts = ["tench", "goldfish", "great white shark"]
    >>> match_option("The answer is (B).", opts), match_option("It is a goldfish.", opts)
    (1, 1)
    >>> match_option("A tench or a goldfish?", opts) is None
    True
    >>> match_option("a white shark", opts, [[], [], ["white shark", "man-eater"]])
    2
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    k = len(options)
    if synonyms is not None and len(synonyms) != k:
        raise ValueError(f"synonyms has {len(synonyms)} entries for {k} options")
    if k == 0:
        return None
    body = _prepare(text)
    folded_options = [_fold_name(o) for o in options]
    found = _by_letter(body, k, folded_options)
    if found is not None:
        return found
    named = [(o, i) for i, o in enumerate(folded_options) if o]
    found = _by_names(body, _unambiguous(named))
    if found is not None or synonyms is None:
        return found
    extra = [(_fold_name(s), i) for i, group in enumerate(synonyms) for s in group]
    pairs = list(dict.fromkeys([*named, *((s, i) for s, i in extra if s)]))
    return _by_names(body, _unambiguous(pairs))


def _unambiguous(pairs: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Drop every name that belongs to more than one option."""
    owners: dict[str, set[int]] = {}
    for name, owner in pairs:
        owners.setdefault(name, set()).add(owner)
    return [(n, o) for n, o in pairs if len(owners[n]) == 1]


def names_in_text(text: str, names: Sequence[str]) -> bool:
    """Whether any of ``names`` occurs in ``text`` (whole words, case- and
    accent-insensitive, plural endings allowed; thoughts before ``</think>``
    ignored).

    >>> names_in_text("I see two Goldfishes in a bowl.", ["goldfish", "Carassius auratus"])
    True
    >>> names_in_text("A catalogue page.", ["cat"])
    False
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    folded = fold(_prepare(text))
    return any(_compiled(n)[0] in folded and _compiled(n)[1].search(folded)
               for n in map(_fold_name, names) if n)


def class_synonyms(class_id: int) -> tuple[str, ...]:
    """The names of ImageNet-1k class ``class_id``: display, clean and CLIP
    names and its WordNet lemmas, without repeats.

    >>> class_synonyms(2)[:3]
    ('great white shark', 'white shark', 'man-eater')
    """
    from vlmrobust.core.classes import N_CLASSES, load_imagenet_classes

    if isinstance(class_id, bool) or not 0 <= int(class_id) < N_CLASSES:
        raise ValueError(f"class id {class_id!r} outside 0..{N_CLASSES - 1}")
    c = load_imagenet_classes()[int(class_id)]
    return tuple(dict.fromkeys(n for n in (c.name, c.clean_name, c.clip_name, *c.lemmas) if n.strip()))


def row_synonyms(row: Mapping[str, Any]) -> tuple[tuple[str, ...], ...] | None:
    """Per-option synonyms of a dataset row whose ``option_class_ids`` are
    ImageNet-1k indices (imagenet-mcq, Bench-C built from class sources); None
    for a row without them (or whose ids do not line up with its options)."""
    ids = row.get("option_class_ids")
    options = row.get("options")
    if not isinstance(ids, Sequence) or isinstance(ids, str) or not isinstance(options, Sequence):
        return None
    if len(ids) != len(options) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return None
    return tuple(class_synonyms(i) for i in ids)
