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
the vlm is asked by a label-space prompt (default ``what-type``; their registry is
vlmrobust.models.label_space_prompts),
and that entry's id is what the predictions record.

>>> SEED_PROMPTS["photo-of"].clip_templates, SEED_PROMPTS["identify"].clip_templates
(('A photo of a {option}',), ('Identify the object in this image. {option}',))
>>> SEED_PROMPTS["photo-of"].vlm_texts("What is this?", ["goldfish"])
('What is this?', ['A photo of a goldfish'])
>>> SEED_PROMPTS["what-type"].vlm_texts("What is this?", ["goldfish"])
('What type of object is in this photo?', ['goldfish'])
"""

from __future__ import annotations

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
    raise VlmrobustError(f"unknown prompt {prompt!r}{did_you_mean(prompt, list(PROMPTS))} (known: "
                         f"{', '.join(PROMPTS)}; or give a template containing {{option}})")


def resolve_classifier_prompt(prompt: str | None) -> str | None:
    """Classifiers read no text: any registered id is accepted and recorded."""
    if prompt is None:
        return None
    if prompt not in SEED_PROMPTS and prompt not in PROMPTS and prompt not in VLM_INSTRUCTIONS:
        known = [*SEED_PROMPT_IDS]
        raise VlmrobustError(f"unknown prompt {prompt!r}{did_you_mean(prompt, known)} for a classifier "
                             f"(known: {', '.join(known)})")
    return prompt


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """'; did you mean X?' for the closest of ``known``, else ''."""
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
