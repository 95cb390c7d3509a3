"""The generating readers: greedy text, kept raw, decided by the project's
matcher (vlmrobust.core.text.matcher).

``generate``: the lettered question of ``letter``; the answer is what
:func:`~vlmrobust.core.text.matcher.match_option` finds in the output (option
letter, then option text, then the class's synonyms where the row has
ImageNet class ids); None is "no answer" and scores as wrong. With an answer
cue (``--answer-cue``, for reasoning models), once the model has finished the
cue is appended after its output in the assistant's turn and the option
letters' next-token log-probs are read there: the row's logits, so accuracy
by argmax, RAS and calibration keep a distribution.

``open-world`` (seed 002): the question alone, no options; a row succeeds
when the ground-truth option's name or one of its synonyms appears in the
output (:func:`~vlmrobust.core.text.matcher.names_in_text`), naming other classes
as well does not count against it. Its ``prediction`` is the answer on
success, else None (no answer); it has no logits.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.matcher import match_option, names_in_text, row_synonyms
from vlmrobust.models.backends.base import GENERATE, NEXT_TOKEN, Backend, GenerationConfig, Prompt
from vlmrobust.models.readers.base import (
    LETTERS,
    READERS,
    Reader,
    ReaderKind,
    Reading,
    ReadOptions,
    options_of,
    row_where,
)
from vlmrobust.models.readers.letter import letter_logits, lettered_prompt
from vlmrobust.models.readers.likelihood import question_prompt


def _config(options: ReadOptions) -> GenerationConfig:
    return GenerationConfig(max_new_tokens=options.max_new_tokens, stop=options.stop)


class GenerateReader:
    mode = "generate"
    decides = True
    max_options: int | None = len(LETTERS)

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        cue = options.answer_cue is not None
        self.needs = frozenset({GENERATE, NEXT_TOKEN} if cue else {GENERATE})
        self.has_logits = cue

    def prompt(self, row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
        return lettered_prompt(row, prompt_id, where)

    def read(self, backend: Backend, rows: Sequence[Mapping[str, Any]],
             prompt_id: str) -> list[Reading]:
        prompts = [self.prompt(r, prompt_id, row_where(r, i)) for i, r in enumerate(rows)]
        texts, reasoning = generate_texts(backend, prompts, _config(self.options))
        answers = [match_option(t, options_of(r, row_where(r, i)), row_synonyms(r))
                   for i, (t, r) in enumerate(zip(texts, rows, strict=True))]
        read: list[tuple[Any, int]] = [(None, 0)] * len(rows)
        cue = self.options.answer_cue
        if cue is not None:
            cued = [Prompt(p.text, image=p.image, assistant_prefix=p.assistant_prefix + t + cue)
                    for p, t in zip(prompts, texts, strict=True)]
            read = letter_logits(backend, cued, [len(r["options"]) for r in rows])
        return [Reading(prompt_text=backend.render(p), logits=v, text=t, prediction=a,
                        truncated=n or None, reasoning=why, reasoning_tokens=tokens or None)
                for p, (v, n), t, a, (why, tokens)
                in zip(prompts, read, texts, answers, reasoning, strict=True)]


def generate_texts(backend: Backend, prompts: Sequence[Prompt], config: GenerationConfig
                   ) -> tuple[list[str], list[tuple[str | None, int]]]:
    """The generated texts and, from a backend that returns them (a served
    reasoning model: endpoint), each one's reasoning text and token count."""
    with_reasoning = getattr(backend, "generate_with_reasoning", None)
    if with_reasoning is None:
        return backend.generate(prompts, config), [(None, 0)] * len(prompts)
    out = with_reasoning(prompts, config)
    return [t for t, _, _ in out], [(r, n) for _, r, n in out]


def open_world_prediction(text: str, row: Mapping[str, Any], where: str) -> int | None:
    """The row's answer when the output names it (or a synonym), else None
    (the scorer's reading: vlmrobust.evaluation.scoring.text_answers.text_answers)."""
    options = options_of(row, where)
    answer = row.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, numbers.Integral) \
            or not 0 <= int(answer) < len(options):
        raise VlmrobustError(f"{where}: --mode open-world needs the row's 'answer' (an option "
                             f"index below {len(options)}); this dataset has none")
    answer = int(answer)
    synonyms = row_synonyms(row)
    names = [options[answer], *(synonyms[answer] if synonyms else ())]
    return answer if names_in_text(text, names) else None


class OpenWorldReader:
    mode = "open-world"
    needs = frozenset({GENERATE})
    decides = True
    has_logits = False
    max_options: int | None = None

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def prompt(self, row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
        return question_prompt(row, prompt_id, where)[0]

    def read(self, backend: Backend, rows: Sequence[Mapping[str, Any]],
             prompt_id: str) -> list[Reading]:
        wheres = [row_where(r, i) for i, r in enumerate(rows)]
        for r, where in zip(rows, wheres, strict=True):
            open_world_prediction("", r, where)  # a row without an answer fails before generating
        prompts = [self.prompt(r, prompt_id, w) for r, w in zip(rows, wheres, strict=True)]
        texts, reasoning = generate_texts(backend, prompts, _config(self.options))
        return [Reading(prompt_text=backend.render(p), text=t,
                        prediction=open_world_prediction(t, r, w), reasoning=why,
                        reasoning_tokens=tokens or None)
                for p, t, r, w, (why, tokens)
                in zip(prompts, texts, rows, wheres, reasoning, strict=True)]


def _no_arg(name: str, arg: str | None) -> None:
    if arg is not None:
        raise VlmrobustError(f"--mode {name}:{arg}: {name} takes no argument (its limits are "
                             "--max-new-tokens, --stop and --answer-cue)")


def _build_generate(arg: str | None, options: ReadOptions) -> Reader:
    _no_arg("generate", arg)
    return GenerateReader(options)


def _build_open_world(arg: str | None, options: ReadOptions) -> Reader:
    _no_arg("open-world", arg)
    if options.answer_cue is not None:
        raise VlmrobustError("--answer-cue reads option letters; open-world asks without options")
    return OpenWorldReader(options)


READERS.add("generate", ReaderKind(
    "generate", _build_generate, "greedy text, answer found by the project matcher (letter, "
    "option text, synonyms); with --answer-cue the letters' log-probs after the cue"))
READERS.add("open-world", ReaderKind(
    "open-world", _build_open_world, "the question without options; right when the output "
    "names the true class or a synonym (seed 002)"))
