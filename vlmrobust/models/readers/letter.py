"""``letter``: the option letters' next-token log-probs at the answer position
(the question and lettered options in the user turn, LLaVA's MCQ wording)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import NEXT_TOKEN, Backend, Prompt
from vlmrobust.models.readers.base import (
    LETTERS,
    READERS,
    Reader,
    ReaderKind,
    Reading,
    ReadOptions,
    format_question,
    options_of,
    row_where,
)


def lettered_prompt(row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
    """The row's lettered question, with its image."""
    return Prompt(format_question(str(row.get("question") or ""), options_of(row, where),
                                  prompt_id), image=row.get("image"))


def lettered_prompts(rows: Sequence[Mapping[str, Any]], prompt_id: str,
                     ) -> tuple[list[Prompt], list[int]]:
    """Each row's lettered question (with its image) and its number of options."""
    prompts = [lettered_prompt(row, prompt_id, row_where(row, i)) for i, row in enumerate(rows)]
    return prompts, [len(row["options"]) for row in rows]


def letter_logits(backend: Backend, prompts: Sequence[Prompt], ks: Sequence[int]
                  ) -> list[tuple[np.ndarray, int]]:
    """Per prompt, the first ``k`` letters' next-token log-probs and how many of
    them the backend did not observe (a server's top-20 listing without them:
    :func:`placeholders`)."""
    if max(ks, default=0) > len(LETTERS):
        raise VlmrobustError(f"{max(ks)} options: at most {len(LETTERS)} can be lettered")
    table = backend.next_token_logprobs(prompts, list(LETTERS[: max(ks, default=1)]))
    return [placeholders(table[i, :k]) for i, k in enumerate(ks)]


def placeholders(logprobs: np.ndarray) -> tuple[np.ndarray, int]:
    """``(values, unobserved)``: a letter the server did not list (-inf) gets a
    placeholder, the row's lowest listed letter log-prob less ln 2 (all
    ``-ln K`` when none is listed), and is counted. Predictions hold finite
    logits, so the placeholder only keeps the row's argmax where it is
    determined: a listed token outranks every unlisted one. It is never a
    probability: the row's ``truncated`` count makes RAS and calibration leave
    the row out, and accuracy too when no letter was listed
    (evaluation/predictions/truncation.py).

    >>> v, n = placeholders(np.array([-0.5, -np.inf, -2.0]))
    >>> [round(float(x), 4) for x in v], n
    ([-0.5, -2.6931, -2.0], 1)
    """
    out = np.asarray(logprobs, dtype=np.float32).copy()
    listed = np.isfinite(out)
    unobserved = int((~listed).sum())
    if not listed.any():
        return np.full(out.shape, -np.log(max(1, out.size)), dtype=np.float32), unobserved
    out[~listed] = out[listed].min() - np.float32(np.log(2.0))
    return out, unobserved


class LetterReader:
    mode = "letter"
    needs = frozenset({NEXT_TOKEN})
    decides = False
    has_logits = True
    max_options: int | None = len(LETTERS)

    def prompt(self, row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
        return lettered_prompt(row, prompt_id, where)

    def read(self, backend: Backend, rows: Sequence[Mapping[str, Any]],
             prompt_id: str) -> list[Reading]:
        prompts, ks = lettered_prompts(rows, prompt_id)
        read = letter_logits(backend, prompts, ks)
        return [Reading(prompt_text=backend.render(p), logits=v, truncated=n or None)
                for p, (v, n) in zip(prompts, read, strict=True)]


def _build(arg: str | None, options: ReadOptions) -> Reader:
    if arg is not None:
        raise VlmrobustError(f"--mode letter:{arg}: letter takes no argument")
    return LetterReader()


READERS.add("letter", ReaderKind(
    "letter", _build, "next-token log-probs of the option letters at the answer position"))
