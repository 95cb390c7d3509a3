"""Which token ids an answer is, after a rendered prompt: the rule the
in-process backend (hf) reads answers by, written against any tokenizer with
``encode`` / ``__call__`` / ``decode`` (a transformers tokenizer, or a served
model's tokenizer over HTTP: endpoint.letters).

Answer-token rule: what the assistant writes follows the text T the prompt
renders to (chat template, generation prompt, then any ``assistant_prefix``).
If T ends in whitespace (``"<|im_start|>assistant\\n"``) an answer is written
``"A"``; if it ends in a visible character (``"ASSISTANT:"``, ``"[/INST]"``)
it is written ``" A"``, as these models were trained to answer. An answer's
tokens are what ``tokenize(T + sep + answer)`` adds after ``tokenize(T)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vlmrobust.core.errors import VlmrobustError


def answer_separator(rendered: str) -> str:
    """'' when the rendered prompt ends in whitespace, else ' ' (module doc).

    >>> answer_separator("<|im_start|>assistant\\n"), answer_separator("ASSISTANT:")
    ('', ' ')
    """
    return "" if not rendered or rendered[-1].isspace() else " "


def answer_token_ids(tokenizer: Any, rendered: str, answers: Sequence[str]) -> list[list[int]]:
    """The token ids each answer adds after ``rendered`` (module doc rule)."""
    sep = answer_separator(rendered)
    base = tokenizer.encode(rendered, add_special_tokens=False)
    fulls = tokenizer([rendered + sep + a for a in answers],
                      add_special_tokens=False)["input_ids"]
    out = []
    for answer, full in zip(answers, fulls, strict=True):
        if full[: len(base)] != base:
            raise VlmrobustError(
                f"answer {answer!r} merges with the prompt's last token "
                f"({rendered[-20:]!r}); its log-probability is not defined after this prompt"
            )
        if len(full) == len(base):
            raise VlmrobustError(f"answer {answer!r} has no tokens")
        out.append([int(t) for t in full[len(base):]])
    return out


def single_token_ids(tokenizer: Any, tail: str, candidates: Sequence[str], name: str
                     ) -> list[int]:
    """Each candidate's one token id after ``tail`` (the text after the user
    turn: generation prompt and assistant prefix), refused in one line naming
    ``name`` when a candidate is not one token that decodes to itself, or two
    share a token."""
    ids = answer_token_ids(tokenizer, tail, candidates)
    firsts = [t[0] for t in ids]
    bad = [c for c, t in zip(candidates, ids, strict=True)
           if len(t) != 1 or tokenizer.decode(t).strip() != c.strip()]
    if bad or len(set(firsts)) != len(firsts):
        what = f"{bad[0]!r} is not one token" if bad else "two answers share a token"
        raise VlmrobustError(
            f"{name}: {what} after {tail[-20:]!r}; this model cannot be read "
            "by next-token log-probs of these answers")
    return firsts
