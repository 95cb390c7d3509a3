"""The label-space prompt registry: how a vlm is asked over a whole label
space (kinds classification and ood), where a row has no question of its own
(seed 002 §2.3 and App. B.1; seed 001 §IX's LLaVA ImageNet-D prompt). The
registry of seed prompts, clip templates and MCQ answer instructions is
vlmrobust.models.prompts; these entries reuse its wording, and
:func:`resolve_vlm_prompt`, which accepts ids of both, lives here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.prompts import (
    DEFAULT_VLM_PROMPT,
    SEED_PROMPT_IDS,
    SEED_PROMPTS,
    VLM_INSTRUCTIONS,
    did_you_mean,
)

#: the answer modes that write each class as an answer (scored or lettered); the
#: others (generate: closed world, open-world) show only the question and names
ANSWER_MODES = ("letter", "likelihood")
GENERATING_MODES = ("generate", "open-world")
#: seed 002 §2.3's closed world: "<image> What type of object is in this photo?
#: Choose one from <class name A>, <class name B>, ..."
SEED_CHOICES = "Choose one from {classes}."
#: the closed-world instruction of earlier releases (prompt ``what-type-name-only``)
NAME_ONLY_CHOICES = "Choose one from: {classes}.\nAnswer with the name of the class only."
#: seed 002 §3.1's zero-shot chain of thought (Kojima et al.)
COT = "Let's think step by step."
#: seed 002 App. B.1: "Base Prompt", "Prompt Alternative 1", "Prompt Alternative 2"
SEED_002_QUESTIONS = {"what-type": "What type of object is in this photo?",
                      "identify": "Identify the object in this image.",
                      "main-object": "What is the main object depicted in this photograph?"}


@dataclass(frozen=True)
class LabelSpacePrompt:
    """How a vlm is asked over a whole label space (kinds classification and ood;
    seed 002). ``question`` is the user turn's question in every mode (alone in
    ``open-world``); ``answer`` writes a class as the answer (``{class}``: its
    name): the continuation ``likelihood`` scores and the option ``letter``
    letters, the latter ended by the ``letter_instruction`` (a
    :data:`VLM_INSTRUCTIONS` id); ``choices`` follows the question in a
    closed-world call (``generate``; ``{classes}``: every name, in presentation
    order).

    >>> p = LABEL_SPACE_PROMPTS["photo-of"]
    >>> p.question, p.answers(["cat"])
    ('What type of object is in this photo?', ['A photo of a cat'])
    >>> LABEL_SPACE_PROMPTS["identify"].closed_world(["cat", "dog"])
    'Identify the object in this image. Choose one from cat, dog.'
    >>> LABEL_SPACE_PROMPTS["what-type-cot"].closed_world(["cat", "dog"])
    "What type of object is in this photo? Choose one from cat, dog. Let's think step by step."

    ``suffix`` ends the user turn in the two generating modes (seed 002's
    chain of thought: "adding 'let's think step by step' at the end of the
    prompt"); an entry with one asks only in those modes.
    """

    id: str
    question: str
    answer: str = "{class}"
    choices: str = SEED_CHOICES
    letter_instruction: str = DEFAULT_VLM_PROMPT
    letter_only: bool = False  # a lettered list in its wording: only --mode letter renders it
    suffix: str = ""

    def __post_init__(self) -> None:
        if not self.question.strip() or "{" in self.question or "}" in self.question:
            raise ValueError(f"{self.id}: the question must be plain, non-empty text")
        rest = self.answer.replace("{class}", "")
        if self.answer.count("{class}") != 1 or "{" in rest or "}" in rest:
            raise ValueError(f"{self.id}: the answer holds {{class}} once and no other braces")
        rest = self.choices.replace("{classes}", "")
        if self.choices.count("{classes}") != 1 or "{" in rest or "}" in rest:
            raise ValueError(f"{self.id}: choices hold {{classes}} once and no other braces")
        if self.letter_instruction not in VLM_INSTRUCTIONS:
            raise ValueError(f"{self.id}: letter_instruction must be one of "
                             f"{', '.join(VLM_INSTRUCTIONS)}")
        if "{" in self.suffix or "}" in self.suffix:
            raise ValueError(f"{self.id}: the suffix must be plain text")

    @property
    def open_world(self) -> str:
        """The open-world user turn: the question (and the suffix)."""
        return f"{self.question} {self.suffix}" if self.suffix else self.question

    def answers(self, names: Sequence[str]) -> list[str]:
        """Each class name written as this prompt's answer."""
        return [self.answer.replace("{class}", n) for n in names]

    def closed_world(self, names: Sequence[str]) -> str:
        """The closed-world user turn: the question, every name, the instruction."""
        sep = "; " if any("," in n for n in names) else ", "
        turn = f"{self.question} {self.choices.replace('{classes}', sep.join(names))}"
        return f"{turn} {self.suffix}" if self.suffix else turn

    def serves(self, mode: str) -> bool:
        """Whether ``mode`` (an answer mode, its argument ignored) renders this
        prompt as itself: a prompt that only words the answers would ask a
        closed-world or open-world call exactly as the one with its question; a
        suffix (chain of thought) only asks a model that generates, and other
        closed-world choices only the closed world."""
        if self.suffix:
            return mode in GENERATING_MODES
        if self.choices != SEED_CHOICES:
            return mode == "generate"
        if self.letter_only:
            return mode.partition(":")[0] == "letter"
        return self.answer == "{class}" or mode.partition(":")[0] in ANSWER_MODES

    def describe(self) -> str:
        if self.letter_only:
            return (f"{self.question} A. <class> B. ... {VLM_INSTRUCTIONS[self.letter_instruction]}"
                    "  [--mode letter only]")
        answer = "" if self.answer == "{class}" else \
            f"  [answers: {self.answer}; --mode letter and likelihood only]"
        if self.suffix:
            answer = f" ... {self.suffix}  [--mode generate and open-world only]"
        if self.choices != SEED_CHOICES:
            answer += f"  [{self.choices.replace(chr(10), ' ')}; --mode generate only]"
        return f"{self.question}{answer}"


#: the prompts a vlm is asked by over a whole label space, named as the seed
#: prompts whose wording they use: a label-space row has no question of its own,
#: so a class formulation keeps what-type's question (``class-name`` would ask
#: exactly as ``what-type`` does and is not listed)
LABEL_SPACE_PROMPTS: MappingProxyType[str, LabelSpacePrompt] = MappingProxyType({p.id: p for p in (
    LabelSpacePrompt("what-type", SEED_PROMPTS["what-type"].text),
    LabelSpacePrompt("select-label", SEED_PROMPTS["select-label"].text),
    LabelSpacePrompt("identify", SEED_PROMPTS["identify"].text),
    LabelSpacePrompt("main-object", SEED_002_QUESTIONS["main-object"]),
    *(LabelSpacePrompt(f"{q}-cot", SEED_002_QUESTIONS[q], suffix=COT) for q in SEED_002_QUESTIONS),
    LabelSpacePrompt("what-type-name-only", SEED_PROMPTS["what-type"].text, choices=NAME_ONLY_CHOICES),
    LabelSpacePrompt("photo-of", SEED_PROMPTS["what-type"].text,
                     answer=SEED_PROMPTS["photo-of"].text),
    # seed 001 §IX, "LLaVA's prompt format is: What is the main object in this image?
    # Choose from the following list: A.[Ground truth class] B.[Failure class 1] ...
    # Please answer the question using the choice from the list." (the options are
    # lettered "A. <class>", one per line, by the letter reader)
    LabelSpacePrompt("llava-imagenet-d", "What is the main object in this image? Choose from "
                     "the following list:", letter_instruction="choice-from-list",
                     letter_only=True),
)})
DEFAULT_LABEL_SPACE_PROMPT = "what-type"
#: where seed 001 asks LLaVA by its ImageNet-D prompt: the K-option ImageNet-D configs
LLAVA_IMAGENET_D = "llava-imagenet-d"
_IMAGENET_D_OPTIONS = re.compile(r"^imagenet-d-[a-z]+-\d+opt$")


def default_label_space_prompt(mode: str, configs: Sequence[str] = ()) -> str:
    """The label-space prompt a vlm is asked by without ``--prompt``: seed 001's
    LLaVA prompt when every config read is an ImageNet-D K-option config and the
    mode letters them (as §IX reads LLaVA), else ``what-type``.

    >>> default_label_space_prompt("letter", ["imagenet-d-texture-4opt"])
    'llava-imagenet-d'
    >>> default_label_space_prompt("letter", ["imagenet-d-texture-4opt", "flowers102-k5"])
    'what-type'
    """
    if configs and all(_IMAGENET_D_OPTIONS.match(c) for c in configs) \
            and LABEL_SPACE_PROMPTS[LLAVA_IMAGENET_D].serves(mode):
        return LLAVA_IMAGENET_D
    return DEFAULT_LABEL_SPACE_PROMPT


def resolve_label_space_prompt(prompt: str | None, mode: str,
                               configs: Sequence[str] = ()) -> str:
    """The :data:`LABEL_SPACE_PROMPTS` id a vlm read in ``mode`` over a label
    space renders (default: :func:`default_label_space_prompt` of the
    ``configs`` read); a prompt that cannot serve one (an MCQ answer
    instruction, ...) is refused in one line naming those that can.

    >>> resolve_label_space_prompt(None, "likelihood:avg")
    'what-type'
    """
    prompt_id = default_label_space_prompt(mode, configs) if prompt is None else prompt
    entry = LABEL_SPACE_PROMPTS.get(prompt_id)
    if entry is not None and entry.serves(mode):
        return prompt_id
    usable = [p.id + (" (default)" if p.id == DEFAULT_LABEL_SPACE_PROMPT else "")
              for p in LABEL_SPACE_PROMPTS.values() if p.serves(mode)]
    why = ("its wording letters the classes, which only --mode letter does"
           if entry is not None and entry.letter_only else
           "its chain of thought asks a model that generates (--mode generate, open-world)"
           if entry is not None and entry.suffix else
           "it words only the closed world (--mode generate)"
           if entry is not None and entry.choices != SEED_CHOICES else
           f"it words only the answers, which --mode {mode} does not show"
           if entry is not None else
           "it asks an MCQ's own question" if prompt_id in VLM_INSTRUCTIONS else
           "it asks as what-type does" if prompt_id == "class-name" else "it is not one of them")
    raise VlmrobustError(f"--prompt {prompt_id}: a vlm over a label space (kinds classification, "
                         f"ood) in --mode {mode} is asked by {', '.join(usable)}; {why} "
                         "(vlmrobust prompts lists them)")


def resolve_vlm_prompt(prompt: str | None) -> str:
    """A vlm prompt id: a seed prompt, an answer instruction or a label-space
    prompt (default mcq-letter). Here, not in prompts.py, because it knows the
    label-space ids, and this registry is built from prompts.py's."""
    prompt = prompt or DEFAULT_VLM_PROMPT
    if prompt not in SEED_PROMPTS and prompt not in VLM_INSTRUCTIONS \
            and prompt not in LABEL_SPACE_PROMPTS:
        known = [*SEED_PROMPT_IDS, *VLM_INSTRUCTIONS, *LABEL_SPACE_PROMPTS]
        known = list(dict.fromkeys(known))
        raise VlmrobustError(f"unknown vlm prompt {prompt!r}{did_you_mean(prompt, known)} "
                             f"(known: {', '.join(known)})")
    return prompt
