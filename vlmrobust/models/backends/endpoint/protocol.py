"""What the endpoint backend sends and reads: OpenAI chat-completions request
bodies built from a :class:`Prompt` (the image as a base64 PNG data URL) and the
fields read back (message text, ``logprobs.content[0].top_logprobs``, vLLM's
``prompt_logprobs``). Every malformed response is one EndpointError line."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.endpoint.body import json_with_digests
from vlmrobust.models.backends.endpoint.client import EndpointError
from vlmrobust.models.backends.endpoint.images import PNG_DEFAULT, ImageEncoding, data_url

CHAT = "chat/completions"
_DATA_URL = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def image_data_url(image: Any, encoding: ImageEncoding = PNG_DEFAULT) -> str:
    """The image as a base64 data URL: PNG by default (lossless, so the server
    decodes the very pixels the in-process backend would see), encoded once per
    distinct pixels (endpoint.images)."""
    return data_url(image, encoding)


def messages(prompt: Prompt, encoding: ImageEncoding = PNG_DEFAULT) -> list[dict[str, Any]]:
    """The chat messages of one prompt: a user turn (image first, then text, as
    the in-process chat template orders them) and, if the assistant has already
    written something, that text as the final assistant message."""
    content: list[dict[str, Any]] = []
    if prompt.image is not None:
        content.append({"type": "image_url", "image_url": {"url": image_data_url(prompt.image,
                                                                          encoding)}})
    content.append({"type": "text", "text": prompt.text})
    out: list[dict[str, Any]] = [{"role": "user", "content": content}]
    if prompt.assistant_prefix:
        out.append({"role": "assistant", "content": prompt.assistant_prefix})
    return out


def continuation_extras(has_prefix: bool) -> dict[str, Any]:
    """vLLM's chat-template switches that make the final assistant message a
    prefix to continue (rather than a finished turn)."""
    return ({"add_generation_prompt": False, "continue_final_message": True}
            if has_prefix else {})


def reasoning_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` under OpenAI's rules for reasoning models (o-series, GPT-5): no
    ``temperature`` (only the default is accepted) and ``max_completion_tokens``
    for ``max_tokens`` (it bounds the reasoning tokens and the answer together).

    >>> reasoning_body({"model": "o4-mini", "temperature": 0, "max_tokens": 8})
    {'model': 'o4-mini', 'max_completion_tokens': 8}
    """
    out = {k: v for k, v in body.items() if k != "temperature"}
    if "max_tokens" in out:
        out["max_completion_tokens"] = out.pop("max_tokens")
    return out


def render(body: dict[str, Any]) -> str:
    """The request as sent, as canonical JSON, with each image data URL replaced by
    ``<image/png sha256=...>`` (``image/jpeg`` for a JPEG sent as stored; the
    server applies its own chat template). The images' URLs are labelled from
    their known digests without being scanned (endpoint.body); any other data URL
    in the text is found by its pattern."""

    def digest(m: re.Match[str]) -> str:
        return label("image/png", hashlib.sha256(m.group(0).encode()).hexdigest())

    def label(mime: str, sha256: str) -> str:
        return f"<{mime} sha256={sha256[:16]}>"

    return _DATA_URL.sub(digest, json_with_digests(
        body, lambda url: label(url[5:url.index(";")], url.sha256), sort_keys=True))


def _choice(resp: Any, where: str) -> dict[str, Any]:
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"{where}: the response has no choices[0]; "
                            "is this an OpenAI-compatible chat-completions server?")
    return choices[0]


def chat_text(resp: Any, where: str) -> str:
    msg = _choice(resp, where).get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise EndpointError(f"{where}: choices[0].message.content is not text")
    return content


def reasoning_of(resp: Any, where: str) -> tuple[str | None, int]:
    """A reasoning model's reasoning text and the reasoning tokens the server
    counted, of one chat completion: the text from ``message.reasoning_content``
    (vLLM, SGLang, DeepSeek) or ``message.reasoning`` (newer vLLM; None where
    neither is given), the count from
    ``usage.completion_tokens_details.reasoning_tokens`` (OpenAI, which returns
    no reasoning text; 0 where not given).

    >>> reasoning_of({"choices": [{"message": {"content": "B", "reasoning_content": "hm"}}],
    ...               "usage": {"completion_tokens_details": {"reasoning_tokens": 64}}}, "u")
    ('hm', 64)
    """
    msg = _choice(resp, where).get("message")
    text = None
    if isinstance(msg, dict):
        text = msg.get("reasoning_content") or msg.get("reasoning")
    usage = resp.get("usage") if isinstance(resp, dict) else None
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    tokens = details.get("reasoning_tokens") if isinstance(details, dict) else None
    n = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0
    return (text if isinstance(text, str) and text else None), n


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop string (not included).

    >>> cut_at_stop("A. cat\\nB. dog", ["\\n"]), cut_at_stop("abc", [])
    ('A. cat', 'abc')
    """
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=len(text))
    return text[:cut]


def first_token_logprobs(resp: Any, where: str) -> list[tuple[str, float]] | None:
    """``(token, logprob)`` pairs the server gave for the first generated token
    (the chosen token and its ``top_logprobs``), or None when it gave none."""
    lp = _choice(resp, where).get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list) or not content:
        return None
    first = content[0]
    if not isinstance(first, dict):
        raise EndpointError(f"{where}: logprobs.content[0] is not an object")
    pairs: list[tuple[str, float]] = []
    for item in [first, *(first.get("top_logprobs") or [])]:
        if not isinstance(item, dict):
            raise EndpointError(f"{where}: a top_logprobs entry is not an object")
        token, value = item.get("token"), item.get("logprob")
        if not isinstance(token, str) or not isinstance(value, (int, float)) \
                or isinstance(value, bool) or math.isnan(value) or value > 1e-6:
            raise EndpointError(f"{where}: a logprobs entry has no token text or a "
                                f"logprob that is not <= 0 ({item!r:.80})")
        pairs.append((token, float(value)))
    return pairs


def prompt_token_logprobs(resp: Any, where: str) -> list[float] | None:
    """vLLM's ``prompt_logprobs`` as one log-prob per prompt token (nan for the
    first), or None when the server gave none (:func:`prompt_tokens`)."""
    found = prompt_tokens(resp, where)
    return None if found is None else found[1]


def prompt_tokens(resp: Any, where: str) -> tuple[list[int | None], list[float]] | None:
    """vLLM's ``prompt_logprobs`` (one ``{token_id: {logprob, rank, decoded_token}}`` or
    null per prompt token, requested with ``prompt_logprobs=0`` so that each entry
    holds the prompt's own token) as each prompt token's id (the entry's key; None
    for the first, which has no entry, or a key that is not an integer) and its
    log-prob (nan for the first, which has no context), or None when the server
    gave none."""
    entries = resp.get("prompt_logprobs") if isinstance(resp, dict) else None
    if not isinstance(entries, list) or not entries:
        return None
    ids: list[int | None] = []
    out: list[float] = []
    for entry in entries:
        if entry is None:
            ids.append(None)
            out.append(math.nan)
            continue
        if not isinstance(entry, dict) or len(entry) != 1:
            raise EndpointError(f"{where}: a prompt_logprobs entry does not hold exactly the "
                                "prompt's own token (requested with prompt_logprobs=0)")
        ((key, value),) = entry.items()
        lp = value.get("logprob") if isinstance(value, dict) else value
        if not isinstance(lp, (int, float)) or isinstance(lp, bool) or lp > 1e-6:
            raise EndpointError(f"{where}: a prompt_logprobs value is not a log-prob <= 0")
        ids.append(int(key) if isinstance(key, str) and key.isascii() and key.isdigit() else None)
        out.append(float(lp))
    return ids, out


def continuation_start(base: Sequence[int | None], full: Sequence[int | None], what: str,
                       where: str) -> int:
    """Where a continuation's tokens start in ``full`` (the prompt with the
    continuation as the continued assistant turn): ``len(base)``, once ``base``
    (the same prompt without it) is proven a token prefix of ``full``, token id by
    token id from the second token (the first has no entry). Refused in one line
    otherwise: a chat template that renders a continued assistant turn
    differently (a thinking template's empty think block, say) would make a
    count difference drop or add tokens silently.

    >>> continuation_start([None, 5, 6], [None, 5, 6, 7, 8], "x", "u")
    3
    >>> continuation_start([None, 5, 9, 9], [None, 5, 7, 8], "x", "u")
    Traceback (most recent call last):
    ...
    vlmrobust.models.backends.endpoint.client.EndpointError: u: x: the prompt without the option is not a token prefix of the prompt with it (token 2 of 4 differs); the chat template renders a continued assistant turn differently (e.g. a thinking template), so the option's log-probs cannot be isolated - read --mode likelihood:* through the in-process backend (vlm:)
    """
    n = len(base)
    differ = next((i for i in range(1, n) if i >= len(full) or base[i] is None
                   or full[i] is None or base[i] != full[i]), None)
    if differ is None and len(full) > n:
        return n
    why = (f"token {differ} of {n} differs" if differ is not None
           else f"it adds no token ({len(full)} against {n})")
    raise EndpointError(
        f"{where}: {what}: the prompt without the option is not a token prefix of the prompt "
        f"with it ({why}); the chat template renders a continued assistant turn differently "
        "(e.g. a thinking template), so the option's log-probs cannot be isolated - read "
        "--mode likelihood:* through the in-process backend (vlm:)")
