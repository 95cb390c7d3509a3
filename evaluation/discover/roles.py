"""The answerer and verifier of seed 004, reached through the evaluator's
backends (``vlm:DIR_OR_HUB_ID`` in process, ``endpoint:SERVED_NAME`` behind an
OpenAI-compatible server such as vLLM), plus the rule-based pair of the planted
world (:mod:`.planted`), all behind one interface:

- ``Answerer.answer(images, questions) -> list[str]`` (free-form answers);
- ``Verifier.verify(images, questions, answers) -> list[Verdict]``.

The verifier prompt (seed 004's appendix is not in our copy, so it is ours,
:data:`VERIFIER_PROMPT`) asks the judge to reason first, then to end with four
lines ``VALID: yes|no``, ``VALID_REASON: ...``, ``CORRECT: yes|no``,
``CORRECT_REASON: ...``. :func:`parse_verdict` reads the last such lines; a
reply without a readable VALID (or, for a valid question, without a readable
CORRECT) is unparsable and counts as an invalid question (V = 0), as does a
question missing from a malformed completion (no model call is made for it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.discover.planted import RuleAnswerer, RuleVerifier
from vlmrobust.models.backends.base import Backend, GenerationConfig, Prompt

ANSWERER_PROMPT = "{question}\nAnswer briefly."
VERIFIER_PROMPT = (
    "You judge a question about this image and the answer a model gave to it.\n"
    "Question: {question}\n"
    "Answer given: {answer}\n\n"
    "First reason step by step about the image, the question and the answer. Then judge:\n"
    "V (valid): is the question grammatical, atomic (it asks exactly one thing), visually "
    "grounded (it can be answered by looking at this image) and objective (it has one "
    "answer careful people would agree on)?\n"
    "C (correct): is the given answer correct for this image?\n"
    "End your reply with exactly these four lines:\n"
    "VALID: yes or no\n"
    "VALID_REASON: one sentence\n"
    "CORRECT: yes or no\n"
    "CORRECT_REASON: one sentence"
)
MAX_REASON_CHARS = 500
_YES = {"yes", "true", "1", "y"}
_FLAG = r"\**\s*[\"'`]?(yes|no|true|false|y|n|1|0)\b"
_VALID = re.compile(r"(?im)^[\s*#>-]*(?:VALID|V)\s*\**\s*[:=]\s*" + _FLAG)
_CORRECT = re.compile(r"(?im)^[\s*#>-]*(?:CORRECT|C)\s*\**\s*[:=]\s*" + _FLAG)
_VALID_WHY = re.compile(r"(?im)^[\s*#>-]*VALID_REASON\s*\**\s*[:=]\s*(.*)$")
_CORRECT_WHY = re.compile(r"(?im)^[\s*#>-]*CORRECT_REASON\s*\**\s*[:=]\s*(.*)$")


@dataclass(frozen=True)
class Verdict:
    """V, C and why, for one (image, question, answer). ``parsed`` is False when
    the judge's reply could not be read (then V = C = False); ``raw`` is the
    reply as received (empty for rule-based judges)."""

    valid: bool
    correct: bool
    valid_reason: str = ""
    correct_reason: str = ""
    parsed: bool = True
    raw: str = ""

    def __post_init__(self) -> None:
        if not self.valid and self.correct:
            raise ValueError("an invalid question has no correct answer (C = 1 needs V = 1)")


class Answerer(Protocol):
    name: str

    def answer(self, images: Sequence[Any], questions: Sequence[str]) -> list[str]: ...


class Verifier(Protocol):
    name: str

    def verify(self, images: Sequence[Any], questions: Sequence[str | None],
               answers: Sequence[str | None]) -> list[Verdict]: ...


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.findall(text)
    return found[-1].strip() if found else None


def parse_verdict(reply: str) -> Verdict:
    """The judge's reply as a Verdict (the last VALID/CORRECT lines count).

    >>> parse_verdict("The dog is brown.\\nVALID: yes\\nVALID_REASON: ok\\nCORRECT: No\\n"
    ...               "CORRECT_REASON: it says black").correct
    False
    >>> parse_verdict("I cannot tell.").parsed
    False
    """
    v = _last(_VALID, reply)
    c = _last(_CORRECT, reply)
    v_why = (_last(_VALID_WHY, reply) or "")[:MAX_REASON_CHARS]
    c_why = (_last(_CORRECT_WHY, reply) or "")[:MAX_REASON_CHARS]
    if v is None or (v.lower() in _YES and c is None):
        return Verdict(False, False, "verifier reply unparsable", "", parsed=False, raw=reply)
    valid = v.lower() in _YES
    correct = valid and c is not None and c.lower() in _YES
    return Verdict(valid, correct, v_why, c_why if valid else "", raw=reply)


MISSING = Verdict(False, False, "question missing from the completion (malformed)", "")


class BackendAnswerer:
    """A frozen VLM answering free-form through a backend (greedy)."""

    def __init__(self, backend: Backend, template: str = ANSWERER_PROMPT,
                 max_new_tokens: int = 64) -> None:
        if "{question}" not in template:
            raise VlmrobustError("the answerer prompt must contain {question}")
        self.backend = backend
        self.name = backend.name
        self.template = template
        self.config = GenerationConfig(max_new_tokens=max_new_tokens)

    def answer(self, images: Sequence[Any], questions: Sequence[str]) -> list[str]:
        prompts = [Prompt(text=self.template.replace("{question}", q), image=im)
                   for im, q in zip(images, questions, strict=True)]
        return [a.strip() for a in self.backend.generate(prompts, self.config)]


class BackendVerifier:
    """A VLM judge through a backend, with :data:`VERIFIER_PROMPT` (or another
    template holding ``{question}`` and ``{answer}``)."""

    def __init__(self, backend: Backend, template: str = VERIFIER_PROMPT,
                 max_new_tokens: int = 512) -> None:
        if "{question}" not in template or "{answer}" not in template:
            raise VlmrobustError("the verifier prompt must contain {question} and {answer}")
        self.backend = backend
        self.name = backend.name
        self.template = template
        self.config = GenerationConfig(max_new_tokens=max_new_tokens)

    def verify(self, images: Sequence[Any], questions: Sequence[str | None],
               answers: Sequence[str | None]) -> list[Verdict]:
        out: list[Verdict] = [MISSING] * len(questions)
        todo = [i for i, q in enumerate(questions) if q is not None]
        prompts = [Prompt(text=self.template.replace("{question}", str(questions[i]))
                          .replace("{answer}", answers[i] or ""), image=images[i])
                   for i in todo]
        for i, reply in zip(todo, self.backend.generate(prompts, self.config), strict=True):
            out[i] = parse_verdict(reply)
        return out


class PlantedVerifier:
    """:class:`.planted.RuleVerifier` behind the Verifier interface."""

    def __init__(self) -> None:
        self.rule = RuleVerifier()
        self.name = self.rule.name

    def verify(self, images: Sequence[Any], questions: Sequence[str | None],
               answers: Sequence[str | None]) -> list[Verdict]:
        out = []
        for im, q, a in zip(images, questions, answers, strict=True):
            if q is None:
                out.append(MISSING)
                continue
            r = self.rule.judge(im, q, a)
            out.append(Verdict(r.valid, r.correct, r.valid_reason, r.correct_reason))
        return out


def model_folders(*specs: str | None) -> list[Path]:
    """The local folders among role specs (``vlm:DIR``, or a bare folder as
    ``--questioner`` takes): inputs an output must never touch."""
    out = []
    for spec in specs:
        if spec is None or spec.startswith("endpoint:"):
            continue
        path = Path(spec[4:] if spec.startswith("vlm:") else spec)
        if path.is_dir():
            out.append(path)
    return out


def load_backend(name: str, endpoint_url: str | None = None, api_key_env: str | None = None,
                 device: str | None = None, cache_dir: str | None = None) -> Backend:
    """``vlm:DIR_OR_HUB_ID`` (hf, in process) or ``endpoint:SERVED_NAME`` (with
    ``endpoint_url``): the backend behind a role. Only generation is used, so
    an endpoint is not probed for log-probs."""
    from vlmrobust.models.registration import BACKENDS

    family, sep, target = name.partition(":")
    if not sep or not target or family not in ("vlm", "endpoint"):
        raise VlmrobustError(f"role model {name!r}: give vlm:DIR_OR_HUB_ID or "
                             "endpoint:SERVED_NAME (with --endpoint-url)")
    if family == "vlm":
        if endpoint_url:
            raise VlmrobustError(f"{name}: --endpoint-url is for endpoint:NAME models")
        return BACKENDS.get("hf").load(target, {"name": name, "device": device})
    opts: dict[str, Any] = {"url": endpoint_url, "probe": ()}
    if api_key_env is not None:
        opts["api_key_env"] = api_key_env
    if cache_dir is not None:
        opts["cache_dir"] = cache_dir
    return BACKENDS.get("endpoint").load(target, opts)


def make_answerer(name: str, max_new_tokens: int = 64, **backend_opts: Any) -> Answerer:
    """``rule:blind=count,color`` (the planted rule answerer; ``count@0.5`` makes
    a blind spot partial: wrong on that fraction of the images) or a backend model."""
    if name.startswith("rule:"):
        spec = name[len("rule:"):]
        if not spec.startswith("blind="):
            raise VlmrobustError(f"answerer {name!r}: write rule:blind=TYPE[@RATE][,TYPE[@RATE]]")
        types, rates = [], []
        for part in (t for t in spec[len("blind="):].split(",") if t):
            qtype, _, rate = part.partition("@")
            try:
                rates.append(float(rate) if rate else 1.0)
            except ValueError:
                raise VlmrobustError(f"answerer {name!r}: {part!r} needs a rate in (0, 1] after "
                                     "'@', e.g. count@0.5") from None
            types.append(qtype)
        return RuleAnswerer(types, rates)
    return BackendAnswerer(load_backend(name, **backend_opts), max_new_tokens=max_new_tokens)


def make_verifier(name: str, max_new_tokens: int = 512, **backend_opts: Any) -> Verifier:
    """``rule:planted`` (the planted rule verifier) or a backend model."""
    if name == "rule:planted":
        return PlantedVerifier()
    if name.startswith("rule:"):
        raise VlmrobustError(f"verifier {name!r}: the rule verifier is rule:planted")
    return BackendVerifier(load_backend(name, **backend_opts), max_new_tokens=max_new_tokens)
