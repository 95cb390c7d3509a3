"""Readers (answer modes): how a dataset row becomes backend calls and an answer.

A mode is ``NAME`` or ``NAME:ARG`` (``letter``, ``likelihood:sum``,
``likelihood:cfg=2``, ``generate``, ``open-world``); each reader names the
backend primitives it needs, and a backend without one is refused in one line
before any row is read. Readers are written once against
:mod:`vlmrobust.models.backends.base`.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.registry import Registry
from vlmrobust.models import prompts as _prompts
from vlmrobust.models.backends.base import Backend, Prompt
from vlmrobust.models.label_space_prompts import LABEL_SPACE_PROMPTS
from vlmrobust.models.prompts import DEFAULT_VLM_PROMPT, VLM_INSTRUCTIONS

LETTERS = string.ascii_uppercase
DEFAULT_MODE = "letter"
# what predict records as the mode of models that are not read through a backend
CLASS_LOGITS = "class-logits"  # ImageNet classifiers (and the classifier pipeline)
EMBEDDING = "embedding"  # CLIP: cosine of the image to each option's prompt


@dataclass(frozen=True)
class ReadOptions:
    """The knobs of the generating readers, with their defaults (predict's
    ``--max-new-tokens``, ``--stop``, ``--answer-cue``). ``answer_cue``: text
    appended after a reasoning model's finished output (e.g. ``"\\nAnswer:"``)
    before the option-letter distribution is read."""

    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    answer_cue: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) \
                or self.max_new_tokens < 1:
            raise VlmrobustError(f"--max-new-tokens must be an integer >= 1, got "
                                 f"{self.max_new_tokens!r}")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise VlmrobustError("--stop strings must be non-empty")
        if self.answer_cue is not None and not self.answer_cue.strip():
            raise VlmrobustError("--answer-cue must hold visible text")

    def record(self) -> dict[str, Any]:
        """As recorded in the predictions' metadata: texts backslash-escaped, since
        metadata holds printable single-line text and cues and stops are often
        line breaks.

        >>> ReadOptions(stop=("\\n\\n",), answer_cue="\\nAnswer:").record()["answer_cue"]
        '\\\\nAnswer:'
        """
        return {"max_new_tokens": self.max_new_tokens, "stop": [_escaped(s) for s in self.stop],
                "answer_cue": None if self.answer_cue is None else _escaped(self.answer_cue)}


def _escaped(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


@dataclass(frozen=True)
class Reading:
    """One row read: ``logits`` float32 (K,) or None (generation without an
    answer cue has no distribution); ``prompt_text`` the exact text sent to the
    model; ``text`` the raw output of the generating readers; ``prediction``
    the option the matcher found (None: no answer) where the reader decides by
    text; ``logp_with_image`` / ``logp_without_image`` float32 (K,), CFG's two
    terms (log p(option | image, prompt), log p(option | prompt)) that its
    ``logits`` combine, kept so that scoring can sweep the guidance weight;
    ``truncated`` the number of options whose log-prob a server did not list
    (their logits are placeholders, never probabilities; None: all observed);
    ``reasoning`` a reasoning model's reasoning text, where its server returns it,
    and ``reasoning_tokens`` the reasoning tokens the server counted."""

    prompt_text: str
    logits: np.ndarray | None = None
    text: str | None = None
    prediction: int | None = None
    logp_with_image: np.ndarray | None = None
    logp_without_image: np.ndarray | None = None
    truncated: int | None = None
    reasoning: str | None = None
    reasoning_tokens: int | None = None


class Reader(Protocol):
    mode: str
    needs: frozenset[str]
    #: whether the predictions carry a decided ``prediction`` per row
    decides: bool
    #: whether the predictions carry option logits
    has_logits: bool
    #: the most options a row may have (None: any number)
    max_options: int | None

    def prompt(self, row: Mapping[str, Any], prompt_id: str, where: str = "row") -> Prompt:
        """The row's main model call (its rendering is the row's ``prompt_text``)."""
        ...

    def read(self, backend: Backend, rows: Sequence[Mapping[str, Any]],
             prompt_id: str) -> list[Reading]:
        ...


@dataclass(frozen=True)
class ReaderKind:
    """A reader's name, how to build it from the mode's argument, and its help."""

    name: str
    build: Callable[[str | None, ReadOptions], Reader]
    help: str
    args: str = ""


READERS: Registry[ReaderKind] = Registry("answer mode")


def refuse_missing(backend: Backend, reader: Reader) -> None:
    """One line naming the backend, the mode and the primitive it lacks."""
    missing = sorted(reader.needs - set(backend.capabilities))
    if missing:
        raise VlmrobustError(
            f"backend {backend.name!r} cannot read --mode {reader.mode}: it lacks "
            f"{', '.join(missing)}; choose another --mode (vlmrobust models lists them)"
        )


def row_where(row: Mapping[str, Any], i: int) -> str:
    return f"row {row.get('id', i)!r}"


def options_of(row: Mapping[str, Any], where: str) -> list[str]:
    options = row.get("options")
    if options is None or len(options) == 0:
        raise VlmrobustError(f"{where}: 'options' is missing or empty; each row needs >= 1 option")
    return [str(o) for o in options]


def format_question(question: str, options: Sequence[str], prompt: str = DEFAULT_VLM_PROMPT
                    ) -> str:
    """The user turn's text of a lettered question: the question and options as
    the prompt (vlmrobust.models.prompts) words them, then the answer instruction.

    >>> print(format_question("What is this?", ["cat", "dog"]))
    What is this?
    A. cat
    B. dog
    Answer with the option's letter from the given choices directly.
    >>> print(format_question("What is this?", ["cat"], "photo-of"))
    What is this?
    A. A photo of a cat
    Answer with the option's letter from the given choices directly.
    """
    if len(options) > len(LETTERS):
        raise VlmrobustError(f"{len(options)} options: at most {len(LETTERS)} can be lettered")
    entry = LABEL_SPACE_PROMPTS.get(prompt)
    own = entry.letter_instruction if entry is not None and prompt not in _prompts.SEED_PROMPTS \
        else prompt
    instruction = VLM_INSTRUCTIONS.get(own, VLM_INSTRUCTIONS[DEFAULT_VLM_PROMPT])
    question, options = question_and_options(question, options, prompt)
    lines = [question.strip()] + [f"{LETTERS[i]}. {o}" for i, o in enumerate(options)]
    return "\n".join([*lines, instruction])


def question_and_options(question: str, options: Sequence[str], prompt: str
                         ) -> tuple[str, list[str]]:
    """(question, option texts) as a seed prompt words them, or a label-space
    prompt of its own wording (seed 001's LLaVA ImageNet-D prompt; others: as given).

    >>> question_and_options("What?", ["goldfish"], "what-type")
    ('What type of object is in this photo?', ['goldfish'])
    >>> question_and_options("What?", ["goldfish"], "llava-imagenet-d")[0]
    'What is the main object in this image? Choose from the following list:'
    """
    if prompt in _prompts.SEED_PROMPTS:
        return _prompts.SEED_PROMPTS[prompt].vlm_texts(question, options)
    entry = LABEL_SPACE_PROMPTS.get(prompt)
    if entry is not None:
        return entry.question, entry.answers(options)
    return question, list(options)
