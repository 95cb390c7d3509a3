"""THE prompt registry: the seed paper's five formulations (appendix A.4) with
stable ids, used by the ImageNet-MCQ builder (question text), the clip adapter
(zero-shot text templates), the vlm adapter (question and option texts) and the
classifier adapter (which reads no text; the id is accepted and recorded so that
the five prompts form comparable leaderboard entries for every family), plus the
clip template ensembles and vlm answer instructions the adapters also accept.

A seed prompt is either a *class* formulation (``{class}`` = the option's class
name) or a *question* formulation. How each family uses it:

======================  ===============================  ===================================
seed prompt kind        clip text per option              vlm user turn
======================  ===============================  ===================================
class  (photo-of, ...)  the template, {class} = option    dataset question; every option
                                                          written through the template
question (what-type..)  "<question> <option>"             the seed question replaces the
                                                          dataset question; options as is
======================  ===============================  ===================================

The vlm turn ends with the answer instruction ("Answer with the option's letter
from the given choices directly."). Without ``--prompt`` the clip adapter uses
``photo`` ("a photo of a {option}") on MCQ rows and ``photo-period`` ("a photo
of a {option}.", seed 002) over a whole label space, and the vlm adapter asks the dataset's own
question (``mcq-letter``), which is what Bench-C and ImageWikiQA need. Over a
whole label space (kinds classification, ood) a row has no question of its own:
the vlm is asked by a :data:`LABEL_SPACE_PROMPTS` entry (default ``what-type``),
and that entry's id is what the predictions record.

>>> SEED_PROMPTS["photo-of"].clip_templates, SEED_PROMPTS["identify"].clip_templates
(('A photo of a {option}',), ('Identify the object in this image. {option}',))
>>> SEED_PROMPTS["photo-of"].vlm_texts("What is this?", ["goldfish"])
('What is this?', ['A photo of a goldfish'])
>>> SEED_PROMPTS["what-type"].vlm_texts("What is this?", ["goldfish"])
('What type of object is in this photo?', ['goldfish'])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.prompt_tables import (
    MCM_5_TEMPLATES,
    OPENAI_30_TEMPLATES,
    OPENAI_IMAGENET_TEMPLATES,
    SEED001_DEFAULT_PROMPT_SET,
)

PROMPT_KINDS = ("class", "question")


@dataclass(frozen=True)
class SeedPrompt:
    """One seed formulation: ``text`` is the paper's exact wording."""

    id: str
    text: str
    kind: str

    def __post_init__(self) -> None:
        if self.kind not in PROMPT_KINDS:
            raise ValueError(f"kind must be one of {PROMPT_KINDS}, got {self.kind!r}")
        if (self.kind == "class") != ("{class}" in self.text):
            raise ValueError(f"{self.id}: a class prompt holds {{class}}, a question none")
        if "{" in self.text.replace("{class}", "") or "}" in self.text.replace("{class}", ""):
            raise ValueError(f"{self.id}: only {{class}} may appear in braces")

    def render(self, class_name: str) -> str:
        """The text with ``{class}`` filled in (question prompts have none)."""
        # str.format would choke on the keyword 'class'; a plain replace is exact here
        return self.text.replace("{class}", class_name)

    @property
    def clip_templates(self) -> tuple[str, ...]:
        if self.kind == "class":
            return (self.text.replace("{class}", "{option}"),)
        return (f"{self.text} {{option}}",)

    def vlm_texts(self, question: str, options: Sequence[str]) -> tuple[str, list[str]]:
        """(question, options) as the vlm sees them under this prompt."""
        if self.kind == "class":
            return question, [self.render(o) for o in options]
        return self.text, list(options)


SEED_PROMPTS: MappingProxyType[str, SeedPrompt] = MappingProxyType({p.id: p for p in (
    SeedPrompt("photo-of", "A photo of a {class}", "class"),
    SeedPrompt("class-name", "{class}", "class"),
    SeedPrompt("what-type", "What type of object is in this photo?", "question"),
    SeedPrompt("select-label",
               "Select the most appropriate label for the object shown in the image.",
               "question"),
    SeedPrompt("identify", "Identify the object in this image.", "question"),
)})
SEED_PROMPT_IDS = tuple(SEED_PROMPTS)
DEFAULT_QUESTION = "what-type"

DEFAULT_PROMPT = "photo"
#: clip's template over a whole label space (kind classification / ood) when no
#: --prompt is given: seed 002's "a photo of a {}." without ensembling
CLIP_LABEL_SPACE_PROMPT = "photo-period"

#: clip zero-shot templates and ensembles ({option} = the option text); the seed
#: prompts are included under their ids.
PROMPTS: dict[str, tuple[str, ...]] = {
    "photo": ("a photo of a {option}",),
    "photo-caps": ("A photo of a {option}",),
    "photo-period": ("a photo of a {option}.",),
    "bare": ("{option}",),
    "photo-the": ("a photo of the {option}.",),
    "itap": ("itap of a {option}.",),
    "art": ("art of the {option}.",),
    "sketch": ("a sketch of a {option}.",),
    "rendition": ("a rendition of a {option}.",),
    # seed 001 §X-B's sets (prompt_tables.py): single, 5 (MCM's), 30 (a stand-in) and the
    # default 80 (OpenAI's ImageNet templates, seed 001's CLIP default)
    "single": ("a photo of a {option}",),
    "mcm-5": MCM_5_TEMPLATES,
    "openai-30": OPENAI_30_TEMPLATES,
    SEED001_DEFAULT_PROMPT_SET: OPENAI_IMAGENET_TEMPLATES,
    # the 7-template subset OpenAI selected for ImageNet zero-shot
    "openai-7": (
        "itap of a {option}.",
        "a bad photo of the {option}.",
        "a origami {option}.",
        "a photo of the large {option}.",
        "a {option} in a video game.",
        "art of the {option}.",
        "a photo of the small {option}.",
    ),
    **{p.id: p.clip_templates for p in SEED_PROMPTS.values()},
}

#: how ``vlmrobust prompts`` describes the seed 001 §X-B sets beyond their templates
PROMPT_NOTES = {
    "single": "seed 001 §X-B single prompt",
    "mcm-5": "seed 001 §X-B: the five prompts of [15] (MCM)",
    "openai-30": "seed 001 §X-B's 30-prompt set is not published; stand-in: the first 30 of "
                 "OpenAI's 80",
    SEED001_DEFAULT_PROMPT_SET: "seed 001's default (§X-B: the default prompt set of [1])",
}

#: vlm answer instructions (LLaVA's MCQ evaluation wording), after the options.
VLM_INSTRUCTIONS = MappingProxyType({
    "mcq-letter": "Answer with the option's letter from the given choices directly.",
    "mcq-letter-short": "Answer with the letter.",
    # seed 001 §IX, the last line of LLaVA's ImageNet-D prompt
    "choice-from-list": "Please answer the question using the choice from the list.",
})
DEFAULT_VLM_PROMPT = "mcq-letter"

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


def get_seed_prompt(prompt_id: str) -> SeedPrompt:
    """The seed prompt ``prompt_id``; a clear error lists the five ids."""
    try:
        return SEED_PROMPTS[prompt_id]
    except KeyError:
        raise VlmrobustError(
            f"unknown seed prompt {prompt_id!r}; use one of {', '.join(SEED_PROMPT_IDS)}"
        ) from None


def resolve_prompt(prompt: str | None) -> tuple[str, tuple[str, ...]]:
    """(prompt id, clip templates) for a prompt name or a literal template.

    >>> resolve_prompt(None)
    ('photo', ('a photo of a {option}',))
    >>> resolve_prompt("A picture of a {class}!")
    ('custom:A picture of a {option}!', ('A picture of a {option}!',))
    >>> resolve_prompt("select-label")[1]
    ('Select the most appropriate label for the object shown in the image. {option}',)
    """
    if prompt is None:
        prompt = DEFAULT_PROMPT
    if prompt in PROMPTS:
        return prompt, PROMPTS[prompt]
    template = prompt.replace("{class}", "{option}")
    if "{option}" in template:
        try:
            template.format(option="x")
        except (IndexError, KeyError, ValueError):
            raise VlmrobustError(
                f"--prompt {prompt!r}: only {{option}} (or {{class}}) may appear in braces"
            ) from None
        return f"custom:{template}", (template,)
    raise VlmrobustError(f"unknown prompt {prompt!r}{_hint(prompt, list(PROMPTS))} (known: "
                         f"{', '.join(PROMPTS)}; or give a template containing {{option}})")


def resolve_vlm_prompt(prompt: str | None) -> str:
    """A vlm prompt id: a seed prompt or an answer instruction (default mcq-letter)."""
    prompt = prompt or DEFAULT_VLM_PROMPT
    if prompt not in SEED_PROMPTS and prompt not in VLM_INSTRUCTIONS \
            and prompt not in LABEL_SPACE_PROMPTS:
        known = [*SEED_PROMPT_IDS, *VLM_INSTRUCTIONS, *LABEL_SPACE_PROMPTS]
        known = list(dict.fromkeys(known))
        raise VlmrobustError(f"unknown vlm prompt {prompt!r}{_hint(prompt, known)} "
                             f"(known: {', '.join(known)})")
    return prompt


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


def resolve_classifier_prompt(prompt: str | None) -> str | None:
    """Classifiers read no text: any registered id is accepted and recorded."""
    if prompt is None:
        return None
    if prompt not in SEED_PROMPTS and prompt not in PROMPTS and prompt not in VLM_INSTRUCTIONS:
        known = [*SEED_PROMPT_IDS]
        raise VlmrobustError(f"unknown prompt {prompt!r}{_hint(prompt, known)} for a classifier "
                             f"(known: {', '.join(known)})")
    return prompt


def _hint(name: str, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def all_prompts() -> dict[str, str]:
    """id -> description for ``vlmrobust prompts`` and the dataset manifest."""
    out = {p.id: f"seed A.4 ({p.kind}): {p.text}" for p in SEED_PROMPTS.values()}
    out.update({k: "clip" + (f" ({PROMPT_NOTES[k]})" if k in PROMPT_NOTES else "") + ": " + (
        " | ".join(v) if len(v) <= 7 else
        f"{len(v)}-template ensemble: {v[0]} | {v[1]} | ... | {v[-1]}")
                for k, v in PROMPTS.items() if k not in out})
    out.update({k: f"vlm instruction: {v}" for k, v in VLM_INSTRUCTIONS.items()})
    return out
