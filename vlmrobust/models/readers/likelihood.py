"""``likelihood:sum|avg|cfg=<t>``: seed 002's probabilistic inference. The user
turn is the question alone (no options, no instruction); an option's logit is
the log-probability of its text as the assistant's answer, given the image
and the question: the tokens' log-probs summed (``sum``) or averaged
(``avg``). Under a seed class prompt (``photo-of``...) the answer scored is
the option written through the template ("A photo of a goldfish").

``cfg=<t>`` (classifier-free guidance) ranks by
``t·p(c | image, prompt) + (1 − t)·p(c | prompt)`` in probability space, as
written, with p = exp(summed log-probs); the logit is the log of that
mixture, computed in log space (:func:`cfg_logit`). t lies in [0, 1]: above
1 the mixture can be negative and has no log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import CONTINUATION, Backend, Prompt
from vlmrobust.models.readers.base import (
    READERS,
    Reader,
    ReaderKind,
    Reading,
    ReadOptions,
    options_of,
    question_and_options,
    row_where,
)

AGGREGATES = ("sum", "avg")


def cfg_logit(cond: ArrayLike, uncond: ArrayLike, t: float) -> NDArray[np.float64]:
    """log(t·exp(cond) + (1 − t)·exp(uncond)), with cond = log p(c | image, prompt)
    and uncond = log p(c | prompt), stable for very negative log-probs.

    >>> cfg_logit([-2000.0], [-2001.0], 0.5).round(6).tolist()
    [-2000.379885]
    >>> cfg_logit([-1.0], [-3.0], 1.0).tolist()
    [-1.0]
    """
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"t must lie in [0, 1], got {t}")
    a = np.asarray(cond, dtype=np.float64)
    b = np.asarray(uncond, dtype=np.float64)
    if t == 1.0:
        return a
    if t == 0.0:
        return b
    out: NDArray[np.float64] = np.logaddexp(math.log(t) + a, math.log1p(-t) + b)
    return out


def question_prompt(row: Mapping[str, Any], prompt_id: str, where: str = "row",
                    ) -> tuple[Prompt, list[str]]:
    """The row's question alone (with its image) and its answer texts."""
    question, options = question_and_options(str(row.get("question") or ""),
                                             options_of(row, where), prompt_id)
    return Prompt(question.strip(), image=row.get("image")), options


def question_prompts(rows: Sequence[Mapping[str, Any]], prompt_id: str,
                     ) -> tuple[list[Prompt], list[list[str]]]:
    pairs = [question_prompt(row, prompt_id, row_where(row, i)) for i, row in enumerate(rows)]
    return [p for p, _ in pairs], [a for _, a in pairs]


class LikelihoodReader:
    needs = frozenset({CONTINUATION})
    decides = False
    has_logits = True
    max_options: int | None = None

    def __init__(self, aggregate: str, t: float | None = None) -> None:
        self.aggregate = aggregate
        self.t = t
        self.mode = f"likelihood:{aggregate}" if t is None else f"likelihood:cfg={t:g}"

    def prompt(self, row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
        return question_prompt(row, prompt_id, where)[0]

    def read(self, backend: Backend, rows: Sequence[Mapping[str, Any]],
             prompt_id: str) -> list[Reading]:
        prompts, answers = question_prompts(rows, prompt_id)
        per_token = backend.continuation_logprobs(prompts, answers)
        agg = np.mean if self.aggregate == "avg" else np.sum
        cond = [np.array([agg(v, dtype=np.float64) for v in row]) for row in per_token]
        if self.t is not None:
            blind = backend.continuation_logprobs(
                [Prompt(p.text, image=None) for p in prompts], answers)
            uncond = [np.array([np.sum(v, dtype=np.float64) for v in row]) for row in blind]
            cond = [cfg_logit(c, u, self.t) for c, u in zip(cond, uncond, strict=True)]
        return [Reading(prompt_text=backend.render(p), logits=c.astype(np.float32))
                for p, c in zip(prompts, cond, strict=True)]


def _build(arg: str | None, options: ReadOptions) -> Reader:
    if arg in AGGREGATES:
        return LikelihoodReader(arg)
    if arg is not None and arg.startswith("cfg="):
        raw = arg.removeprefix("cfg=")
        try:
            t = float(raw)
        except ValueError:
            t = math.nan
        if not (math.isfinite(t) and 0.0 <= t <= 1.0):
            raise VlmrobustError(
                f"--mode likelihood:cfg={raw}: t must be a number in [0, 1] (the weight of "
                "p(c | image, prompt) in the mixture; above 1 it can be negative and has no log)"
            )
        return LikelihoodReader("sum", t)
    raise VlmrobustError(f"--mode likelihood:{arg or ''}: use likelihood:sum, likelihood:avg "
                         "or likelihood:cfg=T with T in [0, 1]")


READERS.add("likelihood", ReaderKind(
    "likelihood", _build, "log p(option text | image, question), tokens summed or averaged; "
    "cfg=T: log(T·p(c|image,q) + (1-T)·p(c|q)) (seed 002)", args="sum | avg | cfg=T"))
