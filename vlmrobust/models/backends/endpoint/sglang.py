"""``likelihood:*`` through SGLang's native API (``--endpoint-engine sglang``):
the K options of a row cost one image prefill plus their own tokens, as in
process, instead of vLLM's K + 1 full prefills.

Per row (one prompt, K options), three requests:

1. ``POST /v1/tokenize`` with ``[T, T + sep + o_1, ..., T + sep + o_K]`` (the
   server's tokenizer, no model run): the prefix proof. ``T`` is the prompt
   rendered by the served model's own chat template (``--endpoint-processor``,
   default the served name) exactly as the in-process backend renders it, and
   ``sep`` the in-process answer separator (backends/hf.py). Each option's text
   tokens must start with T's, token id by token id, else the row is refused
   naming the option (a tokenizer that merges the option into T's last token).
2. ``POST /generate`` with ``T`` and the image, ``max_new_tokens: 0`` and its
   input log-probs from position 0: one prefill of image + question, left in
   SGLang's radix cache; its tokens must be step 1's tokens of T with the image
   placeholder expanded (:func:`expands`), and their count is n.
3. ``POST /generate`` with the K texts (a batch; one ``image_data`` broadcast to
   all), ``return_logprob: true``, ``logprob_start_len: n - 1`` and
   ``max_new_tokens: 0`` (chunks of at most ``CHUNK`` options). SGLang matches
   its radix cache up to ``logprob_start_len`` and computes the rest
   (managers/schedule_batch.py, ``Req._compute_max_prefix_len``: at most
   ``input_len - 1``, and at most ``logprob_start_len`` with ``return_logprob``),
   so each option costs its own tokens plus one (all of the prompt again only if
   the server evicted it in between); ``meta_info.input_token_logprobs``
   holds ``[logprob, token_id, text]`` from position n - 1. Checked per option:
   ``prompt_tokens`` = n + its tail length, the first entry is T's last token,
   and the rest are exactly the tail ids step 1 proved; the option's log-probs
   are those of the rest.

This is the request pattern of SGLang's own frontend ``select`` (sglang/lang/
backend/runtime_endpoint.py: cache the prefix with ``max_new_tokens: 0``, then
one batched ``/generate`` of ``prefix + choice`` with ``logprob_start_len``
just before the choices). SGLang's native routes sit at the server root (the
base URL without ``/v1``); ``/v1/tokenize`` under the base URL.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import CONTINUATION, NEXT_TOKEN, Prompt
from vlmrobust.models.backends.endpoint import protocol as proto
from vlmrobust.models.backends.endpoint.client import EndpointError, HttpClient

GENERATE = "/generate"  # native: at the server root
TOKENIZE = "tokenize"  # under the base URL (/v1/tokenize)
NATIVE = frozenset({GENERATE, TOKENIZE})  # bodies sent as built (no chat-API rules)
# how likelihood:* reaches the model: chat completions with vLLM's prompt_logprobs
# (one request per option, endpoint/prompt_logprobs.py) or SGLang's /generate
ENGINES = ("openai", "sglang")
CHUNK = 256  # options per batched /generate: bounds one response, not the cost


class _Served(Protocol):
    options: Any
    client: HttpClient
    native: HttpClient
    renderer: ChatRenderer
    own: list[str]
    public_model: str
    encoding: Any  # endpoint.images.ImageEncoding

    def post(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], Any]) -> Any: ...

    def _map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]: ...


def check_engine(engine: str, processor: str | None) -> None:
    """EndpointOptions' check of ``--endpoint-engine`` / ``--endpoint-processor``."""
    if engine not in ENGINES:
        raise VlmrobustError(f"--endpoint-engine {engine!r}: give one of {', '.join(ENGINES)}")
    if processor is not None and engine != "sglang":
        raise VlmrobustError("--endpoint-processor applies to --endpoint-engine sglang only "
                             "(the other engines apply their own chat template)")


def own_probes(engine: str, probe: Iterable[str]) -> list[str]:
    """The primitives this module asks the server about (:func:`probe_refusal`):
    likelihood here, option letters by token id in endpoint/letters.py."""
    return ([p for p in (CONTINUATION, NEXT_TOKEN) if p in set(probe)]
            if engine == "sglang" else [])


def native_root(base_url: str) -> str:
    """SGLang's native routes live at the server root: the base URL without ``/v1``.

    >>> native_root("http://gpu:30000/v1"), native_root("http://gpu:30000")
    ('http://gpu:30000', 'http://gpu:30000')
    """
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


class ChatRenderer:
    """The served model's chat template, loaded once (``AutoProcessor``: only its
    template is used; the server tokenizes)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._processor: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._processor is None:
                try:
                    from transformers import AutoProcessor

                    self._processor = AutoProcessor.from_pretrained(self.name)
                except (OSError, ValueError, KeyError, ImportError) as exc:
                    raise VlmrobustError(
                        f"--endpoint-processor {self.name!r}: cannot load the served model's "
                        f"processor ({(str(exc).splitlines() or [type(exc).__name__])[0][:160]}"
                        "); give the folder or hub "
                        "id of the model the server runs (its chat template renders the "
                        "prompt for /generate)") from None
        return self._processor

    def text(self, prompt: Prompt) -> str:
        """T: the prompt as the in-process backend renders it (backends/hf.py)."""
        from vlmrobust.models.backends.hf import chat_prompt

        return chat_prompt(self._load(), prompt.text, prompt.image is not None) \
            + prompt.assistant_prefix


def token_lists(resp: Any, k: int, where: str) -> list[list[int]]:
    """The ``tokens`` of a ``/v1/tokenize`` answer to ``k`` texts."""
    tokens = resp.get("tokens") if isinstance(resp, dict) else None
    if not isinstance(tokens, list) or len(tokens) != k or not all(
            isinstance(t, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                        for i in t) for t in tokens):
        raise EndpointError(f"{where}: the answer has no 'tokens' list of {k} token-id "
                            "lists; is this an SGLang server (--endpoint-engine sglang)?")
    return tokens


def _items(resp: Any, k: int, where: str) -> list[dict[str, Any]]:
    items = resp if isinstance(resp, list) else [resp]
    if len(items) != k or not all(isinstance(x, dict) and isinstance(x.get("meta_info"), dict)
                                  for x in items):
        raise EndpointError(f"{where}: expected {k} results with meta_info; is this an "
                            "SGLang server (--endpoint-engine sglang)?")
    return items


def prompt_tokens(item: Mapping[str, Any], where: str) -> int:
    n = item["meta_info"].get("prompt_tokens")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise EndpointError(f"{where}: meta_info.prompt_tokens is not a positive count")
    return n


def input_logprobs(item: Mapping[str, Any], where: str) -> tuple[list[int], list[float]]:
    """``meta_info.input_token_logprobs`` (``[logprob, token_id, text]`` each; the
    first logprob may be null) as token ids and log-probs (nan where null)."""
    entries = item["meta_info"].get("input_token_logprobs")
    if not isinstance(entries, list) or not entries:
        raise EndpointError(f"{where}: meta_info.input_token_logprobs is missing "
                            "(sent with return_logprob)")
    ids: list[int] = []
    lps: list[float] = []
    for e in entries:
        if not isinstance(e, list) or len(e) < 2 or not isinstance(e[1], int):
            raise EndpointError(f"{where}: an input_token_logprobs entry is not "
                                f"[logprob, token_id, ...] ({e!r:.80})")
        lp = e[0]
        if lp is not None and (not isinstance(lp, (int, float)) or isinstance(lp, bool)
                               or math.isnan(lp) or lp > 1e-6):
            raise EndpointError(f"{where}: an input_token_logprobs value is not a log-prob "
                                f"<= 0 ({e!r:.80})")
        ids.append(int(e[1]))
        lps.append(math.nan if lp is None else float(lp))
    return ids, lps


def expands(text: Sequence[int], run: Sequence[int], image: bool) -> bool:
    """Whether ``run`` (the prompt's tokens as /generate ran them) is ``text`` (its
    /v1/tokenize tokens) with, where there is an image, one token (the image
    placeholder) replaced by a span: they agree but for at most one token of
    ``text``, after the longest common prefix and suffix.

    >>> expands([1, 5, 2], [1, 9, 9, 9, 2], True), expands([1, 5, 2], [1, 5, 5, 2], True)
    (True, True)
    >>> expands([1, 2], [0, 1, 2], False), expands([1, 5, 2], [0, 9, 9, 2], True)
    (False, False)
    """
    if not image:
        return list(run) == list(text)
    a = next((k for k in range(min(len(text), len(run))) if text[k] != run[k]),
             min(len(text), len(run)))
    room = min(len(text), len(run)) - a
    b = next((k for k in range(room) if text[-1 - k] != run[-1 - k]), room)
    return len(run) >= len(text) and len(text) - a - b <= 1


def proven_tail(base: Sequence[int], full: Sequence[int], what: str, where: str) -> list[int]:
    """The option's token ids: ``full`` after ``base``, once ``base`` is proven its
    token prefix (else refused in one line naming ``what``).

    >>> proven_tail([1, 2], [1, 2, 7, 8], "x", "u")
    [7, 8]
    >>> proven_tail([1, 2], [1, 9, 8], "x", "u")
    Traceback (most recent call last):
    ...
    vlmrobust.models.backends.endpoint.client.EndpointError: u: x: the prompt is not a token prefix of the prompt with the option (token 1 of 2 differs: the option merges into the prompt's last tokens); its log-probability is not defined after this prompt
    """
    n = len(base)
    differ = next((i for i in range(n) if i >= len(full) or full[i] != base[i]), None)
    if differ is None and len(full) > n:
        return [int(t) for t in full[n:]]
    why = (f"token {differ} of {n} differs: the option merges into the prompt's last tokens"
           if differ is not None else "the option adds no token")
    raise EndpointError(f"{where}: {what}: the prompt is not a token prefix of the prompt "
                        f"with the option ({why}); its log-probability is not defined after "
                        "this prompt")


def option_logprobs(item: Mapping[str, Any], n: int, last: int, tail: Sequence[int],
                    what: str, where: str) -> np.ndarray:
    """The log-probs of ``tail`` from one batched answer read from position n - 1,
    after checking that the server scored exactly T's last token then ``tail``."""
    ids, lps = input_logprobs(item, where)
    total = prompt_tokens(item, where)
    if total != n + len(tail) or ids != [last, *tail]:
        raise EndpointError(
            f"{where}: {what}: the server scored tokens {ids[:8]} over {total} prompt "
            f"tokens where the proven prefix gives [{last}, *{list(tail)[:7]}] over "
            f"{n + len(tail)}; the option's log-probs cannot be isolated")
    out = np.asarray(lps[1:], dtype=np.float64)
    if not np.isfinite(out).all():
        raise EndpointError(f"{where}: {what}: an option token has no log-prob")
    return out.astype(np.float32)


def rendered(backend: _Served, prompt: Prompt) -> str | None:
    """A likelihood or letter row's prompt text under SGLang: the ``/generate`` prompt (the
    chat template applied here), the image as its sha256 (protocol.render);
    None where the chat request is what is sent (other modes and engines)."""
    if not backend.own:
        return None
    image = {} if prompt.image is None else {"image_data": proto.image_data_url(prompt.image, backend.encoding)}
    return proto.render({"model": backend.public_model, "text": backend.renderer.text(prompt),
                         **image})


def probe_refusal(backend: _Served) -> str | None:
    """Why the server offers no SGLang likelihood (None: it does): one text-only
    ``/generate`` of "Hi" with its prompt log-probs, answered by the cache on a re-run."""
    where = backend.native.url(GENERATE)
    try:
        backend.post(GENERATE, {"text": "Hi", "return_logprob": True, "logprob_start_len": 0,
                                "sampling_params": {"max_new_tokens": 0}},
                     lambda r: input_logprobs(_items(r, 1, where)[0], where))
    except EndpointError as exc:
        if exc.status not in (400, 404, 405, 422):
            raise
        return "has no SGLang /generate with return_logprob (--endpoint-engine sglang)"
    return None


def continuation_logprobs(backend: _Served, prompts: Sequence[Prompt],
                          continuations: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
    """Each prompt's options' token log-probs (module doc), rows ``in_flight`` at a time."""
    from vlmrobust.models.backends.hf import answer_separator

    model, renderer = backend.options.model, backend.renderer
    gen_url, tok_url = backend.native.url(GENERATE), backend.client.url(TOKENIZE)

    def row(i: int) -> list[np.ndarray]:
        prompt, conts = prompts[i], list(continuations[i])
        if not conts:
            return []
        text = renderer.text(prompt)
        sep = answer_separator(text)
        fulls = [text + sep + c for c in conts]
        ids = backend.post(TOKENIZE, {"model": model, "prompt": [text, *fulls],
                                      "add_special_tokens": True},
                           lambda r: token_lists(r, len(fulls) + 1, tok_url))
        where_row = f"row {i} ({prompt.text[:60]!r})"
        tails = [proven_tail(ids[0], full, f"option {c!r} of {where_row}", tok_url)
                 for c, full in zip(conts, ids[1:], strict=True)]
        image = {} if prompt.image is None else {"image_data": proto.image_data_url(prompt.image, backend.encoding)}
        run = backend.post(GENERATE, {"text": text, **image, "return_logprob": True,
                                      "logprob_start_len": 0,
                                      "sampling_params": {"max_new_tokens": 0}},
                           lambda r: input_logprobs(_items(r, 1, gen_url)[0], gen_url)[0])
        if not expands(ids[0], run, bool(image)):
            raise EndpointError(
                f"{gen_url}: {where_row}: /generate ran {len(run)} tokens that are not "
                f"/v1/tokenize's {len(ids[0])} with the image expanded; the prefix proof "
                "does not hold for what was scored")
        warm = len(run)
        out: list[np.ndarray] = []
        for s in range(0, len(conts), CHUNK):
            chunk = fulls[s:s + CHUNK]
            items = backend.post(GENERATE, {
                "text": chunk, **image, "return_logprob": True, "logprob_start_len": warm - 1,
                "return_text_in_logprobs": False,
                "sampling_params": {"max_new_tokens": 0, "temperature": 0}},
                partial(_items, k=len(chunk), where=gen_url))
            out += [option_logprobs(item, warm, ids[0][-1], tails[s + j],
                                    f"option {conts[s + j]!r} of {where_row}", gen_url)
                    for j, item in enumerate(items)]
        return out

    return backend._map(row, list(range(len(prompts))))
