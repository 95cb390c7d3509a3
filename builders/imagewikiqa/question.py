"""One candidate knowledge question about a class, before image assignment."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from vlmrobust.models.encoders.minilm import (
    BLANK as BLANK,  # the gap of a cloze question; re-exported
)

N_CHOICES = 4
SUBJECT = "this object"


def normalise_text(text: str) -> str:
    """Lower-case, collapse whitespace: the key under which question texts are
    counted against the repeat cap and checked for duplicate choices.

    >>> normalise_text("  What  kind of THING? ")
    'what kind of thing?'
    """
    return re.sub(r"\s+", " ", text).strip().lower()


@dataclass(frozen=True)
class Candidate:
    """A 4-choice question about class ``wnid``; ``answer`` indexes ``choices``."""

    wnid: str
    label: int
    question: str
    choices: tuple[str, ...]
    answer: int
    reference: str
    kind: str  # which generator rule made it (hypernym, cloze-region, llm, ...)
    article: str = ""    # Wikipedia article title the question came from ("" offline)
    revision: str = ""   # that article's revision id or snapshot name

    def __post_init__(self) -> None:
        if len(self.choices) != N_CHOICES:
            raise ValueError(f"{self.wnid}: a question needs {N_CHOICES} choices, "
                             f"got {len(self.choices)}")
        keys = [normalise_text(c) for c in self.choices]
        if any(not k for k in keys):
            raise ValueError(f"{self.wnid}: empty choice in {self.choices!r}")
        if len(set(keys)) != N_CHOICES:
            raise ValueError(f"{self.wnid}: choices are not distinct: {self.choices!r}")
        if not 0 <= self.answer < N_CHOICES:
            raise ValueError(f"{self.wnid}: answer {self.answer} out of range 0..{N_CHOICES - 1}")
        if not self.question.strip():
            raise ValueError(f"{self.wnid}: empty question")
        if not 0 <= self.label < 1000:
            raise ValueError(f"{self.wnid}: label {self.label} is not an ImageNet-1k index")

    @property
    def qtype(self) -> str:
        """What the question asks about (qtypes.QUESTION_TYPES)."""
        from vlmrobust.builders.imagewikiqa.qtypes import question_type

        return question_type(self.kind, self.question)

    @property
    def answer_text(self) -> str:
        return self.choices[self.answer]

    @property
    def cap_key(self) -> str:
        """What the repeat cap counts: the question text with its set of options.
        A generic text ("Which category does this object belong to?") asked of
        different classes, with different options, is a different question."""
        return "\x1f".join([normalise_text(self.question),
                            *sorted(normalise_text(c) for c in self.choices)])

    @property
    def text_key(self) -> str:
        """What the text-share bound counts: the question text alone, whatever the
        class and options ("Which of these is a part of this object?")."""
        return normalise_text(self.question)

    @property
    def key(self) -> str:
        """Stable short id of the question content (order of choices ignored)."""
        body = "\x1f".join([self.wnid, normalise_text(self.question),
                            normalise_text(self.answer_text),
                            *sorted(normalise_text(c) for c in self.choices)])
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]
