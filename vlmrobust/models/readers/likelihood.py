"""``likelihood:sum|avg|cfg=<t>|cfg-avg=<t>``: seed 002's probabilistic
inference. The user turn is the question alone (no options, no instruction);
an option's logit is the log-probability of its text as the assistant's
answer, given the image and the question: the tokens' log-probs summed
(``sum``) or averaged (``avg``). Under a seed class prompt (``photo-of``...)
the answer scored is the option written through the template ("A photo of a
goldfish").

Classifier-free guidance (``cfg=<t>`` on summed token log-probs, ``cfg-avg=<t>``
on their mean: Table 2's "Prob Inference (Avg) w/ CFG" row) ranks by

    score(c) = t · log p(c | image, prompt) + (1 − t) · log p(c | prompt)

for any t >= 0: t = 1 is plain likelihood, t = 0 ignores the image, t > 1
is guidance (the image's evidence extrapolated away from the text prior).
Seed 002 §3.1 (002_*.txt, "Inference algorithm"): "We also explore
classifier-free guidance (CFG) techniques by ranking t * prob(class
name|image, prompt) + (1 - t) * prob(class name|prompt) with varying guidance
coefficients t [38, 50]"; its reference [38] (Sanchez et al., "Stay on topic
with classifier-free guidance") applies that mixture to log-probabilities with
coefficients above 1, which is how "prob" is read here. Each row keeps both
terms per option (``Reading.logp_with_image`` / ``logp_without_image``) so that
scoring sweeps t from one run (evaluation/scoring/guidance.py).
"""

from __future__ import annotations

import math
import re
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
# the CFG mode arguments: cfg=T reduces tokens by sum, cfg-avg=T by mean
CFG_ARGS = {"cfg": "sum", "cfg-avg": "avg"}
_CFG_MODE = re.compile(r"likelihood:(cfg|cfg-avg)=(.*)")


def cfg_logit(cond: ArrayLike, uncond: ArrayLike, t: float) -> NDArray[np.float64]:
    """Classifier-free guidance: t·cond + (1 − t)·uncond, with cond = log p(c |
    image, prompt) and uncond = log p(c | prompt), each the same token reduction
    (sum or mean) of the option's token log-probs; t >= 0 (t > 1: guidance).

    >>> cfg_logit([-1.0, -2.0], [-3.0, -1.0], 2.0).tolist()
    [1.0, -3.0]
    >>> cfg_logit([-1.0], [-3.0], 1.0).tolist()
    [-1.0]
    """
    if not (math.isfinite(t) and t >= 0.0):
        raise ValueError(f"t must be a finite number >= 0, got {t}")
    a = np.asarray(cond, dtype=np.float64)
    b = np.asarray(uncond, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"cond has shape {a.shape}, uncond {b.shape}")
    if t == 1.0:  # exactly the conditional log-probs (no 0 * value rounding)
        return a.copy()
    out: NDArray[np.float64] = t * a + (1.0 - t) * b
    return out


def cfg_mode(mode: object) -> tuple[str, float] | None:
    """(token reduction, t) of a CFG mode string, None for any other mode.

    >>> cfg_mode("likelihood:cfg-avg=2")
    ('avg', 2.0)
    >>> cfg_mode("likelihood:sum") is None
    True
    """
    found = _CFG_MODE.fullmatch(mode) if isinstance(mode, str) else None
    if found is None:
        return None
    return CFG_ARGS[found.group(1)], _parse_t(found.group(1), found.group(2))


def _t_text(t: float) -> str:
    """t as the mode string records it: the shortest text that reads back as
    exactly t (rescoring recomputes the logits from it), without a trailing .0.

    >>> [_t_text(x) for x in (2.0, 1.5, 0.1)]
    ['2', '1.5', '0.1']
    """
    text = repr(float(t))
    return text.removesuffix(".0")


def _parse_t(name: str, raw: str) -> float:
    try:
        t = float(raw)
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and t >= 0.0):
        raise VlmrobustError(
            f"--mode likelihood:{name}={raw}: t must be a number >= 0 (the weight of "
            "log p(c | image, prompt); 1 = plain likelihood, above 1 = guidance)")
    return t


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
        arg = next(k for k, v in CFG_ARGS.items() if v == aggregate)
        self.mode = f"likelihood:{aggregate}" if t is None else f"likelihood:{arg}={_t_text(t)}"

    def prompt(self, row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
        return question_prompt(row, prompt_id, where)[0]

    def _reduced(self, per_token: list[list[np.ndarray]]) -> list[NDArray[np.float64]]:
        agg = np.mean if self.aggregate == "avg" else np.sum
        return [np.array([agg(v, dtype=np.float64) for v in row]) for row in per_token]

    def read(self, backend: Backend, rows: Sequence[Mapping[str, Any]],
             prompt_id: str) -> list[Reading]:
        prompts, answers = question_prompts(rows, prompt_id)
        cond = self._reduced(backend.continuation_logprobs(prompts, answers))
        if self.t is None:
            return [Reading(prompt_text=backend.render(p), logits=c.astype(np.float32))
                    for p, c in zip(prompts, cond, strict=True)]
        # the same question and answers, the image left out: p(c | prompt)
        uncond = self._reduced(backend.continuation_logprobs(
            [Prompt(p.text, image=None) for p in prompts], answers))
        out = []
        for p, c, u in zip(prompts, cond, uncond, strict=True):
            # each term rounded to float32 first, so that the stored logits are
            # exactly what rescoring recomputes from the stored terms
            c32, u32 = c.astype(np.float32), u.astype(np.float32)
            out.append(Reading(prompt_text=backend.render(p),
                               logits=cfg_logit(c32, u32, self.t).astype(np.float32),
                               logp_with_image=c32, logp_without_image=u32))
        return out


def _build(arg: str | None, options: ReadOptions) -> Reader:
    if arg in AGGREGATES:
        return LikelihoodReader(arg)
    name, sep, raw = (arg or "").partition("=")
    if sep and name in CFG_ARGS:
        return LikelihoodReader(CFG_ARGS[name], _parse_t(name, raw))
    raise VlmrobustError(f"--mode likelihood:{arg or ''}: use likelihood:sum, likelihood:avg, "
                         "likelihood:cfg=T or likelihood:cfg-avg=T with T >= 0")


READERS.add("likelihood", ReaderKind(
    "likelihood", _build, "log p(option text | image, question), tokens summed or averaged; "
    "cfg=T / cfg-avg=T: T·log p(c|image,q) + (1-T)·log p(c|q), summed / averaged tokens, "
    "T >= 0 (seed 002 CFG)", args="sum | avg | cfg=T | cfg-avg=T"))
