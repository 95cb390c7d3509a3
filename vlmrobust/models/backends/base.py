"""The backend primitives every reader is written against (as lm-evaluation-harness's
``LM`` interface: ``loglikelihood``, ``generate_until``).

A :class:`Prompt` is one model call's input: an optional image, the user turn's
text and, optionally, text the assistant has already written (a reasoning
model's finished thought followed by the answer cue). A backend renders it
through the model's chat template; :meth:`Backend.render` returns that exact
text so that predictions can carry it as their audit trail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vlmrobust.core.registry import Registry

# primitive names, as listed in Backend.capabilities
NEXT_TOKEN = "next_token_logprobs"      # log p(first answer token = candidate string)
CONTINUATION = "continuation_logprobs"  # per-token log p(continuation | prompt), prefix shared
GENERATE = "generate"                   # greedy text after the prompt
PRIMITIVES = (NEXT_TOKEN, CONTINUATION, GENERATE)


@dataclass(frozen=True)
class Prompt:
    """One model call: ``image`` (PIL or None for a text-only call, e.g. CFG's
    p(c | prompt)), the user turn ``text`` and ``assistant_prefix``, text already
    in the assistant's turn before what is read or generated."""

    text: str
    image: Any = None
    assistant_prefix: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Prompt.text must be str, got {type(self.text).__name__}")
        if not isinstance(self.assistant_prefix, str):
            raise TypeError("Prompt.assistant_prefix must be str")


@dataclass(frozen=True)
class GenerationConfig:
    """Greedy decoding limits."""

    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


@runtime_checkable
class Backend(Protocol):
    """A loaded model behind the primitives. Methods a backend lacks (not in
    ``capabilities``) raise VlmrobustError naming the backend and the primitive."""

    name: str
    capabilities: frozenset[str]

    def render(self, prompt: Prompt) -> str:
        """The exact text the model receives (chat template applied, image
        placeholder tokens as the template writes them)."""
        ...

    def next_token_logprobs(self, prompts: Sequence[Prompt],
                            candidates: Sequence[str]) -> np.ndarray:
        """float32 (B, len(candidates)): log p of each candidate string (e.g. the
        letters "A".."E") as the first token the assistant writes after the prompt.
        Candidates absent from a server's top-logprobs are -inf."""
        ...

    def continuation_logprobs(self, prompts: Sequence[Prompt],
                              continuations: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
        """For each prompt, for each of its continuations, the float32 per-token
        log-probs of the continuation's tokens given the prompt (teacher forced).
        The prompt's prefix is computed once per prompt and reused."""
        ...

    def generate(self, prompts: Sequence[Prompt], config: GenerationConfig) -> list[str]:
        """Greedy continuation of each prompt, cut at the first stop string."""
        ...


@dataclass(frozen=True)
class BackendFamily:
    """How to load the backends of one model-name prefix (``hf`` for ``vlm:<dir or hub id>``,
    ``endpoint`` for served models): ``load(target, options)`` returns a loaded Backend."""

    prefix: str
    load: Callable[[str, Mapping[str, Any]], Backend]
    help: str = ""

    def __post_init__(self) -> None:
        if not self.prefix or ":" in self.prefix:
            raise ValueError(f"backend prefix must be non-empty without ':', got {self.prefix!r}")


# Filled by the module that imports the implementations (never by this protocol module).
BACKENDS: Registry[BackendFamily] = Registry("backend")
