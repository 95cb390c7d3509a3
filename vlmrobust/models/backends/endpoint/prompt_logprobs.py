"""``likelihood:*`` through chat completions with vLLM's ``prompt_logprobs`` (the
default ``--endpoint-engine openai``): per row, one request for the prompt and
one per option with the option as the continued final assistant message
(``continue_final_message``), each read with ``prompt_logprobs=0``.

Cost: K + 1 full prefills of image + question per row. vLLM's documentation
(docs/usage/v1_guide.md, "Prompt Logprobs with Prefix Caching"): "For a request
requiring prompt logprobs, the engine will ignore the prefix cache and recompute
the prefill of full prompt to generate the logprobs", so no request here reads
another's cached image prefix, and vLLM serves prompt log-probs no other way
(its completions API takes no image). SGLang's native API does (endpoint/sglang.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.endpoint import protocol as proto
from vlmrobust.models.backends.endpoint.client import EndpointError


class _Served(Protocol):
    def post(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], Any]) -> Any: ...

    def _body(self, prompt: Prompt, **params: Any) -> dict[str, Any]: ...

    def _map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]: ...


def continuation_logprobs(backend: _Served, where: str, prompts: Sequence[Prompt],
                          continuations: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
    """Each prompt's options' token log-probs, the option's tokens being those after
    the prompt once the prompt is proven their token prefix
    (:func:`protocol.continuation_start`; never a bare difference of two counts)."""

    def parse(resp: Any) -> tuple[list[int | None], list[float]]:
        found = proto.prompt_tokens(resp, where)
        if found is None:
            raise EndpointError(f"{where}: the response has no prompt_logprobs")
        return found

    def token_logprobs(p: Prompt, tail: str) -> tuple[list[int | None], list[float]]:
        full = Prompt(text=p.text, image=p.image, assistant_prefix=p.assistant_prefix + tail)
        return backend.post(proto.CHAT, backend._body(full, max_tokens=1, prompt_logprobs=0),
                            parse)

    jobs = [(i, c) for i, conts in enumerate(continuations) for c in ["", *conts]]
    done = backend._map(lambda job: token_logprobs(prompts[job[0]], job[1]), jobs)
    out: list[list[np.ndarray]] = []
    k = 0
    for i, conts in enumerate(continuations):
        base_ids = done[k][0]
        row = []
        for j, cont in enumerate(conts):
            ids, lps = done[k + 1 + j]
            start = proto.continuation_start(
                base_ids, ids, f"option {cont!r} of prompt {i} ({prompts[i].text[:60]!r})",
                where) if cont else len(lps)
            row.append(np.asarray(lps[start:], dtype=np.float32))
        out.append(row)
        k += 1 + len(conts)
    return out
