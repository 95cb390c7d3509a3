"""The questioner's prompts: seed 004's RL / zero-shot prompt (k questions in one
completion, as ``<response_i>…</response_i>``, each conditioned on those before
it) and a ConMe-style two-turn baseline (describe the image, then ask questions
about what the description says). Seed 004's exact wording is not in our copy;
these are ours, and a run records the text it used."""

from __future__ import annotations

from vlmrobust.core.errors import VlmrobustError

QUESTIONER = (
    "Ask {k} different short questions about this image that a vision-language "
    "model could answer wrongly. Write question i as <response_i> question </response_i>."
)
CONME_DESCRIBE = "Describe this image in detail: the objects, their attributes, counts and positions."
CONME_ASK = (
    "Here is a description of the image:\n{description}\n\n"
    "Using details of this description, ask {k} different short questions about the image "
    "that a vision-language model could answer wrongly. Write question i as "
    "<response_i> question </response_i>."
)


def questioner_prompt(k: int, template: str = QUESTIONER) -> str:
    """The questioner's prompt for k questions.

    >>> questioner_prompt(2).split("<response_i>")[0][:16]
    'Ask 2 different '
    """
    if k < 1:
        raise VlmrobustError(f"k must be >= 1, got {k}")
    if "{k}" not in template:
        raise VlmrobustError("a questioner prompt must contain {k}")
    return template.replace("{k}", str(k))


def conme_ask_prompt(k: int, description: str) -> str:
    """ConMe's second turn: questions grounded in the first turn's description."""
    return CONME_ASK.replace("{k}", str(k)).replace("{description}", description.strip())
