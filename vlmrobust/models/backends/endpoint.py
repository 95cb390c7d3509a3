"""The ``endpoint`` backend: a model behind an OpenAI-compatible server (vLLM,
SGLang, LMDeploy, TGI, llama.cpp server, ``transformers serve``, proprietary APIs).

Model name ``endpoint:<served model name>`` with options ``url``
(``--endpoint-url http://host:port/v1``) and ``api_key_env`` (``--api-key-env``,
default ``OPENAI_API_KEY``; the key is read from that variable and never written
anywhere). Primitives:

- ``generate``: chat completions, temperature 0, ``max_tokens``; the text is cut at
  the first stop string here as well, so servers that return the stop string agree
  with those that strip it;
- ``next_token_logprobs``: ``logprobs`` + ``top_logprobs`` of the first generated
  token, where the server returns them;
- ``continuation_logprobs``: vLLM's ``prompt_logprobs`` with the continuation as the
  final assistant message (``continue_final_message``).

Which of the last two a server offers is probed when the backend loads (those the
mode needs), with one one-token text-only request each; a reader that needs a
missing one is refused in one line naming the server and the missing feature.
Requests run ``concurrency`` at a time and go through the response cache
(endpoint_cache), so a resumed or repeated run sends only what it has not
received before.

Not used: ``/v1/completions`` with ``echo`` + ``logprobs``. It takes no image and
a raw prompt, so the chat template would have to be rebuilt here, unseen by the
server; vLLM's ``prompt_logprobs`` gives the same numbers through chat.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vlmrobust.core.bounded import MIB
from vlmrobust.core.errors import UnsupportedReaderError, VlmrobustError
from vlmrobust.models.backends import endpoint_protocol as proto
from vlmrobust.models.backends.base import (
    CONTINUATION,
    GENERATE,
    NEXT_TOKEN,
    BackendFamily,
    GenerationConfig,
    Prompt,
)
from vlmrobust.models.backends.endpoint_cache import ResponseCache, default_cache_dir, request_key
from vlmrobust.models.backends.endpoint_client import (
    EndpointError,
    HttpClient,
    RetryPolicy,
    check_base_url,
)
from vlmrobust.models.backends.endpoint_server import server_version

T = TypeVar("T")
R = TypeVar("R")
OPTIONAL = (NEXT_TOKEN, CONTINUATION)
MAX_TIMEOUT_S = 86400.0
MAX_RESPONSE_MIB = 1024
TOP_LOGPROBS = 20  # the most OpenAI's API returns; vLLM's default max_logprobs too


@dataclass(frozen=True)
class EndpointOptions:
    """Connection settings of one served model (see the module doc)."""

    url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache_dir: Path | None = None
    use_cache: bool = True
    max_response_bytes: int = 16 << 20
    # False: stop strings are applied here only (for servers whose stop handling
    # fails, e.g. transformers serve with a VLM processor); greedy text is the same
    server_stop: bool = True

    def __post_init__(self) -> None:
        check_base_url(self.url)
        if not self.model or self.model != self.model.strip():
            raise VlmrobustError("endpoint:<served model name>: the served model name is empty")
        if not 1 <= self.concurrency <= 1024:
            raise VlmrobustError(f"--endpoint-concurrency {self.concurrency}: give 1 to 1024")
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:  # nan fails this test too
            raise VlmrobustError(f"--endpoint-timeout {self.timeout_s}: give seconds > 0 "
                                 f"and at most {MAX_TIMEOUT_S:g} (a day)")
        if not 0 < self.max_response_bytes <= MAX_RESPONSE_MIB * MIB:
            raise VlmrobustError(f"--endpoint-max-response-mib {self.max_response_bytes / MIB:g}"
                                 f": give more than 0 and at most {MAX_RESPONSE_MIB}")
        if self.api_key_env is not None and not self.api_key_env.isidentifier():
            raise VlmrobustError(f"--api-key-env {self.api_key_env!r}: give the NAME of an "
                                 "environment variable (the key itself never goes on the "
                                 "command line)")


class EndpointBackend:
    """An OpenAI-compatible server behind the backend primitives (base.Backend)."""

    def __init__(self, options: EndpointOptions, sleep: Callable[[float], None] | None = None,
                 features: frozenset[str] | None = None,
                 probe: Iterable[str] = OPTIONAL) -> None:
        """``features``: the optional primitives the server offers; None asks the
        server about those in ``probe`` (the others count as not offered)."""
        self.options = options
        self.name = f"endpoint:{options.model}"
        kwargs = {} if sleep is None else {"sleep": sleep}
        self.client = HttpClient(options.url, options.api_key_env, options.timeout_s,
                                 options.retry, options.max_response_bytes, **kwargs)
        root = (options.cache_dir or default_cache_dir()) if options.use_cache else None
        self.cache = ResponseCache(root, options.max_response_bytes)
        self.sent = 0  # request bodies that went to the server (not answered by the cache)
        self._lock = threading.Lock()
        self._version: tuple[str | None] | None = None
        self._limit: tuple[tuple[int, str] | None] | None = None
        # optional primitive -> why the server lacks it (None: offered)
        self._features = self._probe(set(probe)) if features is None else {
            p: None if p in features else "was declared without it" for p in OPTIONAL}
        self.capabilities = frozenset(
            [GENERATE] + [p for p, why in self._features.items() if why is None])

    # ---- requests ----

    def _body(self, prompt: Prompt, **params: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.options.model, "messages": proto.messages(prompt),
                                "temperature": 0}
        body.update(proto.continuation_extras(bool(prompt.assistant_prefix)))
        body.update(params)
        return body

    def post(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], R]) -> R:
        """One request through the cache: ``parse(response)``. A response is stored
        only once it parses; an entry that no longer parses is asked for again."""
        key = request_key(path, body)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                return parse(hit)
            except EndpointError:
                pass
        with self._lock:
            self.sent += 1
        resp = self.client.post_json(path, body)
        if isinstance(resp, dict) and "error" in resp and "choices" not in resp:
            raise EndpointError(self.client.scrub(
                f"{self.client.url(path)}: the server answered with an error "
                f"({str(resp['error'])[:200]})"))
        result = parse(resp)
        self.cache.put(key, resp)
        return result

    def _map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``fn`` over ``items``, ``concurrency`` at a time, results in order. On the
        first failure no further request starts (those finished are cached) and the
        failure of the earliest item is raised. Workers are daemon threads and the
        wait polls, so Ctrl-C ends the run at once instead of after the requests in
        flight time out."""
        n = len(items)
        if self.options.concurrency == 1 or n <= 1:
            return [fn(x) for x in items]
        results: list[Any] = [None] * n
        errors: dict[int, BaseException] = {}
        lock = threading.Lock()
        pending = iter(range(n))
        stop = threading.Event()

        def work() -> None:
            while not stop.is_set():
                with lock:
                    i = next(pending, None)
                if i is None:
                    return
                try:
                    results[i] = fn(items[i])
                except BaseException as exc:  # handed to the caller's thread
                    with lock:
                        errors[i] = exc
                    stop.set()

        threads = [threading.Thread(target=work, daemon=True, name=f"endpoint-{k}")
                   for k in range(min(self.options.concurrency, n))]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except BaseException:
            stop.set()
            raise
        if errors:
            raise errors[min(errors)]
        return results

    # ---- capabilities ----

    def _probe(self, which: set[str]) -> dict[str, str | None]:
        """Why each optional primitive in ``which`` is missing (None where the server
        offers it): one one-token text-only request each, answered by the cache on a
        re-run. A 400/404/422 answer means "not offered"; any other failure stops."""
        ask = Prompt(text="Hi")
        where = self.client.url(proto.CHAT)
        asks = {
            NEXT_TOKEN: ({"logprobs": True, "top_logprobs": 1},
                         lambda r: proto.first_token_logprobs(r, where),
                         "returns no logprobs for chat completions",
                         "refuses logprobs/top_logprobs in chat completions"),
            CONTINUATION: ({"prompt_logprobs": 0},
                           lambda r: proto.prompt_token_logprobs(r, where),
                           "returns no prompt_logprobs",
                           "refuses prompt_logprobs (a vLLM extension)"),
        }
        found: dict[str, str | None] = {}
        for primitive in OPTIONAL:
            params, parse, absent, refused = asks[primitive]
            if primitive not in which:
                found[primitive] = "was not asked for (this run's mode does not use it)"
                continue
            try:
                got = self.post(proto.CHAT, self._body(ask, max_tokens=1, **params), parse)
                found[primitive] = None if got is not None else absent
            except EndpointError as exc:
                if exc.status not in (400, 404, 422):
                    raise
                found[primitive] = refused
        return found

    def check_reader(self, needs: Iterable[str], what: str) -> None:
        """One line naming the server and the feature it lacks, if ``what`` (a
        reader, e.g. ``--mode letter``) needs a primitive the server does not offer."""
        for primitive in sorted(needs):
            why = self._features.get(primitive)
            if why is not None:
                raise UnsupportedReaderError(
                    f"{self.name}: the server at {self.client.base_url} "
                    f"({self.server_version() or 'version unknown'}) {why}, which {what} "
                    "needs; use --mode generate, or serve the model with an engine that "
                    "offers it (vLLM)")

    # ---- primitives ----

    def render(self, prompt: Prompt) -> str:
        return proto.render(self._body(prompt))

    def generate(self, prompts: Sequence[Prompt], config: GenerationConfig) -> list[str]:
        stop = list(config.stop)
        extra: dict[str, Any] = {"stop": stop} if stop and self.options.server_stop else {}

        where = self.client.url(proto.CHAT)

        def one(p: Prompt) -> str:
            text = self.post(proto.CHAT, self._body(p, max_tokens=config.max_new_tokens,
                                                    **extra),
                             lambda r: proto.chat_text(r, where))
            return proto.cut_at_stop(text, stop)

        return self._map(one, prompts)

    def next_token_logprobs(self, prompts: Sequence[Prompt],
                            candidates: Sequence[str]) -> np.ndarray:
        self.check_reader([NEXT_TOKEN], "the letter reader (option-letter log-probs)")
        where = self.client.url(proto.CHAT)

        def parse(resp: Any) -> list[tuple[str, float]]:
            pairs = proto.first_token_logprobs(resp, where)
            if pairs is None:
                raise EndpointError(f"{where}: the response has no logprobs")
            return pairs

        def one(p: Prompt) -> np.ndarray:
            pairs = self.post(proto.CHAT, self._body(p, max_tokens=1, logprobs=True,
                                                     top_logprobs=TOP_LOGPROBS), parse)
            return proto.candidate_logprobs(pairs, candidates)

        rows = self._map(one, prompts)
        return np.stack(rows) if rows else np.zeros((0, len(candidates)), np.float32)

    def continuation_logprobs(self, prompts: Sequence[Prompt],
                              continuations: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
        self.check_reader([CONTINUATION], "the likelihood reader (continuation log-probs)")
        if len(prompts) != len(continuations):
            raise ValueError("one list of continuations per prompt")
        where = self.client.url(proto.CHAT)

        def parse(resp: Any) -> tuple[list[int | None], list[float]]:
            found = proto.prompt_tokens(resp, where)
            if found is None:
                raise EndpointError(f"{where}: the response has no prompt_logprobs")
            return found

        def token_logprobs(p: Prompt, tail: str) -> tuple[list[int | None], list[float]]:
            full = Prompt(text=p.text, image=p.image, assistant_prefix=p.assistant_prefix + tail)
            return self.post(proto.CHAT, self._body(full, max_tokens=1, prompt_logprobs=0), parse)

        jobs = [(i, c) for i, conts in enumerate(continuations) for c in ["", *conts]]
        done = self._map(lambda job: token_logprobs(prompts[job[0]], job[1]), jobs)
        out: list[list[np.ndarray]] = []
        k = 0
        for i, conts in enumerate(continuations):
            base_ids = done[k][0]
            row = []
            for j, cont in enumerate(conts):
                ids, lps = done[k + 1 + j]
                # the option's tokens are those after the prompt, once the prompt is
                # proven their token prefix (never a bare difference of two counts)
                start = proto.continuation_start(
                    base_ids, ids, f"option {cont!r} of prompt {i} ({prompts[i].text[:60]!r})",
                    where) if cont else len(lps)
                row.append(np.asarray(lps[start:], dtype=np.float32))
            out.append(row)
            k += 1 + len(conts)
        return out

    # ---- context (optional: only where the server advertises it) ----

    def context_limit(self) -> tuple[int, str] | None:
        """The served model's context as the server advertises it (endpoint_limits)."""
        if self._limit is None:
            from vlmrobust.models.backends.endpoint_limits import advertised_limit

            self._limit = (advertised_limit(self.client, self.options.model),)
        return self._limit[0]

    def prompt_tokens(self, prompt: Prompt) -> int | None:
        """The request's tokens as the server counts them (None: it cannot say)."""
        from vlmrobust.models.backends.endpoint_limits import served_token_count

        return served_token_count(self.client, self._body(prompt))

    # ---- provenance ----

    def server_version(self) -> str | None:
        if self._version is None:
            self._version = (server_version(self.client),)
        return self._version[0]

    def server_record(self) -> dict[str, Any]:
        """What the predictions metadata records about the server (never the key)."""
        return {"backend": "endpoint", "server_url": self.client.base_url,
                "served_model": self.options.model, "server_version": self.server_version(),
                "chat_template": "applied by the server; prompt_text is the request as sent"}


def load(target: str, options: Mapping[str, Any]) -> EndpointBackend:
    """The ``endpoint`` BackendFamily's loader: ``target`` is the served model name."""
    opts = dict(options)
    opts.pop("name", None)  # always endpoint:<target>
    url = opts.pop("url", None) or opts.pop("endpoint_url", None)
    if not url:
        raise VlmrobustError(f"endpoint:{target}: give the server's base URL with "
                             "--endpoint-url, e.g. http://localhost:8000/v1")
    probe = opts.pop("probe", OPTIONAL)
    mib = opts.pop("max_response_mib", None)
    if mib is not None:
        opts["max_response_bytes"] = int(mib * MIB) if math.isfinite(mib) else 0
    retries = opts.pop("retries", None)
    if retries is not None:
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100:
            raise VlmrobustError(f"--endpoint-retries {retries}: give 0 to 100")
        opts["retry"] = RetryPolicy(max_tries=retries + 1)
    known = set(EndpointOptions.__dataclass_fields__) - {"url", "model"}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise VlmrobustError(f"endpoint:{target}: unexpected options {unknown}")
    if opts.get("cache_dir") is not None:
        opts["cache_dir"] = Path(opts["cache_dir"])
    return EndpointBackend(EndpointOptions(url=str(url), model=target, **opts), probe=probe)


ENDPOINT_FAMILY = BackendFamily(
    "endpoint", load,
    help="an OpenAI-compatible server: endpoint:SERVED_NAME --endpoint-url URL")
