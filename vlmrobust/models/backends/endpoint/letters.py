"""Option letters over an endpoint, as the in-process reader reads them (issue
36 item 3): one token id per letter, chosen by the answer-token rule of
:mod:`vlmrobust.models.backends.answer_tokens`, and that id's log-prob.

Where the server offers it (vLLM since PR 43463, 2026: ``logprob_token_ids`` on
chat completions "replaces natural top-k selection ... the response contains the
sampled token plus every explicitly requested token ID"; with
``return_tokens_as_token_ids`` each entry is named ``token_id:N``), the letters'
ids are requested and every letter is observed. The ids come from the
server's own tokenizer over vLLM's ``/tokenize`` and ``/detokenize`` routes:
the chat template's generation prompt is rendered by the server around a
marker, decoded back to text, and each letter tokenized after it exactly as
the hf backend does.

Elsewhere (OpenAI, SGLang's and llama.cpp's chat routes, TGI, transformers
serve) only the top-20 listing exists: a letter is read as its likeliest
listed spelling ("A" or " A", one token's log-prob, never a sum of two), and a
letter absent from the listing is unobserved (-inf). The letter reader marks
such rows truncated (readers/letter.py); nothing is invented for them.
With ``--endpoint-engine sglang`` the letters go through SGLang's native
``/generate`` with ``token_ids_logprob`` (:func:`sglang_letters`): the prompt T
rendered by the served model's processor as in process (endpoint/sglang.py),
each letter's id what its text adds after T by the server's ``/v1/tokenize``
(one token, proven T's token prefix), read at the first generated position
(``meta_info.output_token_ids_logprobs[0]``, ``[logprob, token_id, text]``).
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from vlmrobust.models.backends.answer_tokens import single_token_ids
from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.endpoint import protocol as proto
from vlmrobust.models.backends.endpoint.client import EndpointError, HttpClient
from vlmrobust.models.backends.endpoint.server import server_root

TOKEN_ID = "token_id:"
# a user turn the generation prompt is found after (text the template copies verbatim)
MARKER = "VLMROBUST_MARKER_7F3A"
MAX_IDS_CACHE = 64
TOP_LOGPROBS = 20  # the most OpenAI's API returns; vLLM's default max_logprobs too
TOKEN_IDS = "token ids (logprob_token_ids; ids from the server's /tokenize)"
SGLANG_IDS = "token ids (SGLang /generate token_ids_logprob; ids from its /v1/tokenize)"
TOP_LISTING = "top-20 listing by token text (the likeliest spelling; unlisted letters truncated)"


def ids_logprobs(pairs: Sequence[tuple[str, float]], ids: Sequence[int]) -> np.ndarray | None:
    """Each id's log-prob from entries named ``token_id:N`` (-inf where the
    server listed no such entry); None when no entry is named that way (a
    server that ignored ``return_tokens_as_token_ids``).

    >>> ids_logprobs([("token_id:7", -0.5), ("token_id:9", -2.0)], [9, 7, 3]).tolist()
    [-2.0, -0.5, -inf]
    >>> ids_logprobs([("A", -0.5)], [7]) is None
    True
    """
    by_id: dict[int, float] = {}
    for token, value in pairs:
        digits = token[len(TOKEN_ID):] if token.startswith(TOKEN_ID) else ""
        if digits.isascii() and digits.isdigit():
            by_id[int(digits)] = value
    if not by_id:
        return None
    return np.asarray([by_id.get(int(i), -math.inf) for i in ids], dtype=np.float32)


def spelling_logprobs(pairs: Sequence[tuple[str, float]], candidates: Sequence[str]
                      ) -> np.ndarray:
    """log p of each candidate's likeliest listed spelling (tokens whose text,
    whitespace stripped, is the candidate: "A" and " A"), -inf for a candidate
    the server did not list. One token's value, as in process: a listed token
    outranks every unlisted one, so the argmax over observed letters is
    the argmax over all of them.

    >>> spelling_logprobs([("A", -1.0), (" A", -2.0), ("B", -0.5)], ["A", "B", "C"]).tolist()
    [-1.0, -0.5, -inf]
    """
    out = np.full(len(candidates), -np.inf, dtype=np.float64)
    for i, cand in enumerate(candidates):
        values = [v for t, v in pairs if t.strip() == cand.strip()]
        if values:
            out[i] = max(values)
    return out.astype(np.float32)


class ServerTokenizer:
    """The served model's tokenizer over vLLM's ``/tokenize`` and ``/detokenize``
    routes, with the calls :func:`answer_tokens.answer_token_ids` makes."""

    def __init__(self, client: HttpClient, model: str) -> None:
        self.client = client
        self.model = model
        self.root = server_root(client.base_url)

    def _post(self, route: str, body: Mapping[str, Any], field: str) -> Any:
        resp = self.client.post_json_once(f"{self.root}/{route}", {"model": self.model, **body})
        value = resp.get(field) if isinstance(resp, dict) else None
        if value is None:
            raise EndpointError(f"{self.root}/{route}: the answer has no {field!r}")
        return value

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        tokens = self._post("tokenize", {"prompt": text, "add_special_tokens": add_special_tokens},
                            "tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise EndpointError(f"{self.root}/tokenize: 'tokens' is not a list of token ids")
        return tokens

    def __call__(self, texts: Sequence[str], add_special_tokens: bool = False
                 ) -> dict[str, list[list[int]]]:
        return {"input_ids": [self.encode(t, add_special_tokens) for t in texts]}

    def decode(self, ids: Sequence[int]) -> str:
        text = self._post("detokenize", {"tokens": list(ids)}, "prompt")
        if not isinstance(text, str):
            raise EndpointError(f"{self.root}/detokenize: 'prompt' is not text")
        return text

    def generation_prompt(self) -> str:
        """The text the served chat template puts after a user turn."""
        tokens = self._post("tokenize", {"messages": [{"role": "user", "content": MARKER}],
                                         "add_generation_prompt": True,
                                         "add_special_tokens": False}, "tokens")
        if not isinstance(tokens, list):
            raise EndpointError(f"{self.root}/tokenize: 'tokens' is not a list of token ids")
        text = self.decode(tokens)
        if MARKER not in text:
            raise EndpointError(f"{self.root}/tokenize: the rendered chat does not hold the "
                                "user turn's text")
        return text[text.rindex(MARKER) + len(MARKER):]


class LetterIds:
    """Per prompt tail, the letters' token ids as the server's tokenizer gives
    them; ``None`` once the server has shown it cannot (no /tokenize route, a
    letter that is not one token): the run then reads the top-20 listing."""

    def __init__(self, client: HttpClient, model: str, name: str) -> None:
        self.tokenizer = ServerTokenizer(client, model)
        self.name = name
        self.offered: bool | None = None  # None: not asked yet
        self.why: str | None = None  # why not offered
        self._noted = False
        self._gen: str | None = None
        self._cache: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        self._lock = threading.Lock()

    def note(self) -> bool:
        """True once, the first time it is asked after the server proved not to
        offer ids (asked when a letter went unlisted)."""
        with self._lock:
            due = self.offered is False and not self._noted
            self._noted = self._noted or due
            return due

    def ids(self, assistant_prefix: str, candidates: Sequence[str]) -> list[int] | None:
        """The candidates' token ids after the generation prompt and
        ``assistant_prefix`` (None: the server cannot say). The generation
        prompt is asked once; a tail's ids are asked outside the lock, so rows
        with distinct tails (reasoning prefixes) are resolved concurrently."""
        try:
            with self._lock:  # once per run; every thread waits for the answer
                if self.offered is False:
                    return None
                if self._gen is None:
                    self._gen = self.tokenizer.generation_prompt()
                key = (self._gen + assistant_prefix, tuple(candidates))
                hit = self._cache.get(key)
            if hit is None:
                hit = single_token_ids(self.tokenizer, key[0], candidates, self.name)
                with self._lock:
                    if len(self._cache) >= MAX_IDS_CACHE:  # reasoning prefixes: all distinct
                        self._cache.clear()
                    self._cache[key] = hit
        except Exception as exc:  # a refusal or odd answer: it lists top tokens only
            with self._lock:
                if self.offered is not True:
                    self.offered = False
                    self.why = self.why or str(exc).splitlines()[0][:160]
                    return None
            raise
        with self._lock:
            self.offered = True
        return hit


class _Served(Protocol):
    name: str
    client: HttpClient
    letter_ids: LetterIds

    def post(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], Any]) -> Any: ...

    def _body(self, prompt: Prompt, **params: Any) -> dict[str, Any]: ...

    def _map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]: ...


def read_letters(backend: _Served, prompts: Sequence[Prompt], candidates: Sequence[str]
                 ) -> np.ndarray:
    """(B, K) float32: each candidate's one-token log-prob, by token id where
    the server takes ``logprob_token_ids``, else its likeliest listed spelling;
    -inf where the server listed none (the module doc)."""
    where = backend.client.url(proto.CHAT)

    def parse(resp: Any) -> list[tuple[str, float]]:
        pairs = proto.first_token_logprobs(resp, where)
        if pairs is None:
            raise EndpointError(f"{where}: the response has no logprobs")
        return pairs

    def one(p: Prompt) -> np.ndarray:
        ids = backend.letter_ids.ids(p.assistant_prefix, candidates)
        extra = {} if ids is None else {"logprob_token_ids": ids,
                                        "return_tokens_as_token_ids": True}
        pairs = backend.post(proto.CHAT, backend._body(
            p, max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS, **extra), parse)
        got = None if ids is None else ids_logprobs(pairs, ids)
        return spelling_logprobs(pairs, candidates) if got is None else got

    rows = backend._map(one, prompts)
    if any(not np.isfinite(r).all() for r in rows) and backend.letter_ids.note():
        print(f"note: {backend.name}: letters are read from the top-{TOP_LOGPROBS} listing "
              f"(no token-id log-probs: {backend.letter_ids.why}); rows whose letters are not "
              "all listed are marked truncated", file=sys.stderr)
    return np.stack(rows) if rows else np.zeros((0, len(candidates)), np.float32)


def sglang_letters(backend: Any, prompts: Sequence[Prompt], candidates: Sequence[str]
                   ) -> np.ndarray:
    """(B, K) float32 under ``--endpoint-engine sglang`` (the module doc): per
    row one ``/v1/tokenize`` of ``[T, T + sep + letter, ...]`` and one
    ``/generate`` of T (+ image) asking for those ids' log-probs."""
    from vlmrobust.models.backends.answer_tokens import answer_separator
    from vlmrobust.models.backends.endpoint import sglang

    model = backend.options.model
    gen_url, tok_url = backend.native.url(sglang.GENERATE), backend.client.url(sglang.TOKENIZE)

    def one(p: Prompt) -> np.ndarray:
        text = backend.renderer.text(p)
        sep = answer_separator(text)
        ids = backend.post(sglang.TOKENIZE, {"model": model, "prompt": [
            text, *(text + sep + c for c in candidates)], "add_special_tokens": True},
            lambda r: sglang.token_lists(r, len(candidates) + 1, tok_url))
        tails = [sglang.proven_tail(ids[0], full, f"letter {c!r}", tok_url)
                 for c, full in zip(candidates, ids[1:], strict=True)]
        if any(len(t) != 1 for t in tails) or len({t[0] for t in tails}) != len(tails):
            raise EndpointError(f"{tok_url}: the letters {list(candidates)} are not one distinct "
                                f"token each after {text[-20:]!r}; this model cannot be read by "
                                "next-token log-probs of letters")
        want = [t[0] for t in tails]
        image = {} if p.image is None else {"image_data": proto.image_data_url(p.image, backend.encoding)}
        item = backend.post(sglang.GENERATE, {
            "text": text, **image, "return_logprob": True, "token_ids_logprob": want,
            "return_text_in_logprobs": False,
            "sampling_params": {"max_new_tokens": 1, "temperature": 0}},
            lambda r: sglang._items(r, 1, gen_url)[0])
        return _first_position(item, want, gen_url)

    rows = backend._map(one, prompts)
    return np.stack(rows) if rows else np.zeros((0, len(candidates)), np.float32)


def _first_position(item: Mapping[str, Any], ids: Sequence[int], where: str) -> np.ndarray:
    """The log-probs of ``ids`` at the first generated position of one /generate
    answer (``meta_info.output_token_ids_logprobs[0]``), all of them required.

    >>> _first_position({"meta_info": {"output_token_ids_logprobs": [[[-0.5, 7, None],
    ...                  [-2.0, 9, None]]]}}, [9, 7], "u").tolist()
    [-2.0, -0.5]
    """
    per_pos = item["meta_info"].get("output_token_ids_logprobs")
    first = per_pos[0] if isinstance(per_pos, list) and per_pos else None
    got: dict[int, float] = {}
    for e in first if isinstance(first, list) else []:
        if isinstance(e, list) and len(e) >= 2 and isinstance(e[1], int) \
                and isinstance(e[0], (int, float)) and not isinstance(e[0], bool) and e[0] <= 1e-6:
            got[e[1]] = float(e[0])
    missing = [i for i in ids if i not in got]
    if missing:
        raise EndpointError(f"{where}: meta_info.output_token_ids_logprobs has no log-prob for "
                            f"token ids {missing[:5]} (sent as token_ids_logprob)")
    return np.asarray([got[i] for i in ids], dtype=np.float32)
