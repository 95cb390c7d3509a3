"""Answerers for the filter: given questions and (optionally) the class name,
pick an option. The offline one is the MiniLM text-similarity guesser of
``vlmrobust.models.encoders.minilm``; the LLM one (generate_llm.LLMAnswerer) asks the
same chat backend as the generator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from vlmrobust.builders.imagewikiqa.question import Candidate
from vlmrobust.models.encoders.minilm import (
    BLANK,
    TextEmbedder,
    cloze_stem,
    cosine_choice,
    load_minilm,
    with_subject,
)
from vlmrobust.models.encoders.minilm import MiniLMGuesser as _MiniLMTextGuesser

__all__ = ["BLANK", "Answerer", "MiniLMGuesser", "TextEmbedder", "cloze_stem",
           "cosine_choice", "load_minilm", "with_subject"]


class Answerer(Protocol):
    @property
    def name(self) -> str: ...

    def answer(self, questions: Sequence[Candidate],
               class_names: Sequence[str | None]) -> list[int]:
        """The chosen option index per question; ``None`` hides the class name."""
        ...


class MiniLMGuesser(_MiniLMTextGuesser):
    """The MiniLM guesser as a filter answerer (takes Candidate questions)."""

    def answer(self, questions: Sequence[Candidate],
               class_names: Sequence[str | None]) -> list[int]:
        scores = self.option_scores([(q.question, q.choices) for q in questions], class_names)
        return [int(np.argmax(s)) for s in scores]

    def plain_blind(self, questions: Sequence[Candidate]) -> list[int]:
        """Blind, with the whole question as the query and the bare options (no
        cloze filling): a second blind guesser for measuring the kept set."""
        texts = [t for q in questions for t in (q.question, *q.choices)]
        self.embed(texts)
        return [cosine_choice(self.embed([q.question])[0], self.embed(list(q.choices)))
                for q in questions]
