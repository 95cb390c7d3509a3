"""The ``endpoint`` backend: a model behind an OpenAI-compatible server (vLLM,
SGLang, LMDeploy, TGI, llama.cpp server, ``transformers serve``, proprietary APIs).

Model name ``endpoint:<served model name>`` with options ``url``
(``--endpoint-url http://host:port/v1``) and ``api_key_env`` (``--api-key-env``,
default ``OPENAI_API_KEY``; the key is read from that variable and never written
anywhere). Primitives:

- ``generate``: chat completions, temperature 0, ``max_tokens``; the text is cut at
  the first stop string here as well, so servers that return the stop string agree
  with those that strip it;
- ``next_token_logprobs``: the letters' token ids' log-probs (vLLM's
  ``logprob_token_ids``), else the top-20 listing of the first generated token,
  where the server returns one (endpoint.letters);
- ``continuation_logprobs``: vLLM's ``prompt_logprobs``, K + 1 full prefills per
  row (endpoint/prompt_logprobs.py); with ``--endpoint-engine sglang`` SGLang's
  ``/generate``, one image prefill plus the options' tokens (endpoint/sglang.py).

Which of the last two a server offers is probed when the backend loads (those the
mode needs), with one one-token text-only request each; a reader that needs a
missing one is refused in one line naming the server and the missing feature.
Requests run ``concurrency`` at a time (over all calls together, so predict
keeps that many in flight across its batches) and go through the response cache
(endpoint.cache), so a resumed or repeated run sends only what it has not
received before.

Not used: ``/v1/completions`` with ``echo`` + ``logprobs``: it takes no image.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vlmrobust.core.errors import UnsupportedReaderError, VlmrobustError
from vlmrobust.core.files.bounded import MIB
from vlmrobust.core.ordered_threads import DaemonPool, SingleFlight
from vlmrobust.core.text.public_names import public_name
from vlmrobust.models.backends.base import (
    CONTINUATION,
    GENERATE,
    NEXT_TOKEN,
    BackendFamily,
    GenerationConfig,
    Prompt,
)
from vlmrobust.models.backends.endpoint import letters, prompt_logprobs, sglang
from vlmrobust.models.backends.endpoint import protocol as proto
from vlmrobust.models.backends.endpoint.cache import ResponseCache, default_cache_dir, request_key
from vlmrobust.models.backends.endpoint.client import (
    EndpointError,
    HttpClient,
    RetryPolicy,
    check_base_url,
)
from vlmrobust.models.backends.endpoint.images import DEFAULT_PNG_LEVEL, ImageEncoding
from vlmrobust.models.backends.endpoint.letters import TOP_LOGPROBS  # noqa: F401 (re-exported)
from vlmrobust.models.backends.endpoint.pool import in_order
from vlmrobust.models.backends.endpoint.probe import OPTIONAL, feature_refusals, stop_refusal
from vlmrobust.models.backends.endpoint.server import server_version

T = TypeVar("T")
R = TypeVar("R")
APIS = ("openai", "openai-reasoning")
EFFORTS = ("minimal", "low", "medium", "high")  # OpenAI's published reasoning_effort values
MAX_TIMEOUT_S = 86400.0
MAX_RESPONSE_MIB = 1024


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
    # "openai": chat completions as OpenAI's GPT-4o takes them (temperature 0,
    # max_tokens), switching to "openai-reasoning" when the server answers
    # "Use 'max_completion_tokens'"; "openai-reasoning": the o-series / GPT-5 rules
    api: str = "openai"
    reasoning_effort: str | None = None
    # "sglang": likelihood:* through SGLang's /generate, the prompt rendered by
    # ``processor`` (default: the served name) as in process (endpoint/sglang.py)
    engine: str = "openai"
    processor: str | None = None
    image_bytes: str = "png"  # or "source": the row's stored bytes (endpoint.images)
    png_level: int = DEFAULT_PNG_LEVEL

    def __post_init__(self) -> None:
        check_base_url(self.url)
        if self.api not in APIS:
            raise VlmrobustError(f"--endpoint-api {self.api!r}: give one of {', '.join(APIS)}")
        sglang.check_engine(self.engine, self.processor)
        ImageEncoding(self.image_bytes, self.png_level)  # refuses a bad flag in one line
        if self.reasoning_effort is not None and self.reasoning_effort not in EFFORTS:
            raise VlmrobustError(f"--endpoint-reasoning-effort {self.reasoning_effort!r}: give "
                                 f"one of {', '.join(EFFORTS)}")
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
        self.native = HttpClient(sglang.native_root(self.client.base_url), options.api_key_env,
                                 options.timeout_s, options.retry, options.max_response_bytes,
                                 **kwargs)  # SGLang's /generate sits at the server root
        self.renderer = sglang.ChatRenderer(options.processor or options.model)
        self.encoding = ImageEncoding(options.image_bytes, options.png_level)
        root = (options.cache_dir or default_cache_dir()) if options.use_cache else None
        self.cache = ResponseCache(root, options.max_response_bytes)
        self.sent = 0  # request bodies that went to the server (not answered by the cache)
        self._lock = threading.Lock()
        # requests in flight over every call at once (one pool of threads): predict
        # reads several batches together (evaluation/predict/batches.py), so this
        # is a sliding window over the run, whatever its batch size
        self.in_flight = options.concurrency
        self._pool = DaemonPool(options.concurrency, "endpoint")
        self._flight = SingleFlight()
        self._version: tuple[str | None] | None = None
        self._limit: tuple[tuple[int, str] | None] | None = None
        self._stop_ok: bool | None = None  # whether the server takes stop strings
        self.letter_ids = letters.LetterIds(self.client, options.model, self.name)
        self._reasoning = options.api == "openai-reasoning"
        # the served name as published: a local folder (transformers serve DIR)
        # becomes its base name and a hash of the path (core.public_names)
        self.public_model = public_name(options.model, None)[0]
        # optional primitive -> why the server lacks it (None: offered); under SGLang
        # likelihood is asked through /generate instead of prompt_logprobs
        self.own = own = sglang.own_probes(options.engine, probe)
        self._features = feature_refusals(self, set(probe) - set(own)) if features is None \
            else {p: None if p in features else "was declared without it" for p in OPTIONAL}
        if own and features is None:  # one /generate probe answers for all of them
            self._features.update(dict.fromkeys(own, sglang.probe_refusal(self)))
        self.capabilities = frozenset(
            [GENERATE] + [p for p, why in self._features.items() if why is None])

    # ---- requests ----

    def _body(self, prompt: Prompt, **params: Any) -> dict[str, Any]:
        messages = proto.messages(prompt, self.encoding)
        body: dict[str, Any] = {"model": self.options.model, "messages": messages, "temperature": 0}
        body.update(proto.continuation_extras(bool(prompt.assistant_prefix)))
        body.update(params)
        return body

    def post(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], R]) -> R:
        """One request through the cache: ``parse(response)``. A response is stored
        only once it parses; an entry that no longer parses is asked for again."""
        native = path in sglang.NATIVE
        sent = dict(body) if native else self.prepare(body)
        key = request_key(path, sent)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                return parse(hit)
            except EndpointError:
                pass
        if self.cache.root is None:
            return self._send(path, body, parse, sent, key)
        # through the cache, one request per content: the same row in two batches
        # of predict's window is sent once, the other waits for its answer
        return self._flight.do(key, lambda: self._send(path, body, parse, sent, key))

    def _send(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], R],
              sent: dict[str, Any], key: str) -> R:
        with self._lock:
            self.sent += 1
        client = self.native if path == sglang.GENERATE else self.client
        try:
            resp = client.post_json(path, sent)
        except EndpointError as exc:
            if path not in sglang.NATIVE and self.asks_for_reasoning(exc, sent):
                return self.post(path, body, parse)
            raise
        if isinstance(resp, dict) and "error" in resp and "choices" not in resp:
            raise EndpointError(self.client.scrub(
                f"{client.url(path)}: the server answered with an error "
                f"({str(resp['error'])[:200]})"))
        result = parse(resp)
        self.cache.put(key, resp)
        return result

    def prepare(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The body as sent: for an OpenAI reasoning model
        (:func:`protocol.reasoning_body`) without temperature and with
        ``max_completion_tokens``; ``reasoning_effort`` passed through where given."""
        out = proto.reasoning_body(body) if self._reasoning else dict(body)
        if self.options.reasoning_effort is not None:
            out["reasoning_effort"] = self.options.reasoning_effort
        return out

    def asks_for_reasoning(self, exc: EndpointError, sent: Mapping[str, Any]) -> bool:
        """Whether ``exc`` is a reasoning model's refusal of ``max_tokens`` in ``sent``
        (OpenAI: "Use 'max_completion_tokens' instead"); if so, every request from
        now on (those in flight included, once resent) follows the reasoning rules."""
        if exc.status != 400 or "max_tokens" not in sent or "max_completion_tokens" not in str(exc):
            return False
        with self._lock:
            if self._reasoning:
                return True
            self._reasoning = True
        print(f"note: {self.name}: the server asks for max_completion_tokens (an OpenAI "
              "reasoning model); sending it without temperature from now on, as "
              "--endpoint-api openai-reasoning does", file=sys.stderr)
        return True

    def _map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return in_order(fn, items, self.options.concurrency, self._pool)

    def stop_queued(self) -> int:
        """Cancel the requests waiting for a slot (predict stopped: an error, Ctrl-C);
        those in flight end on their own and are cached."""
        return self._pool.cancel_queued()

    # ---- capabilities ----

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
        """The request as sent, under the served model's public name (SGLang's
        likelihood: the /generate prompt, endpoint/sglang.py)."""
        return sglang.rendered(self, prompt) or proto.render(
            {**self._body(prompt), "model": self.public_model})

    def _server_takes_stop(self, stop: list[str]) -> bool:
        """Whether stop strings go to the server: asked once per run with one
        one-token request and no retries (``transformers serve`` answers a VLM's
        stop string with HTTP 500, which retries would repeat for 42 s; OpenAI's
        o3/o4-mini refuse ``stop``). On a refusal the stops are applied here only,
        as ``--endpoint-local-stop`` does, with a one-line note; the greedy text
        is the same."""
        if self._stop_ok is None:
            why = stop_refusal(self, self._body(Prompt(text="Hi"), max_tokens=1, stop=stop))
            self._stop_ok = why is None
            if why is not None:
                print(f"note: {self.name}: the server refuses stop strings ({why[:160]}); "
                      "applying --stop here instead (pass --endpoint-local-stop to skip "
                      "this check)", file=sys.stderr)
        return self._stop_ok

    def generate(self, prompts: Sequence[Prompt], config: GenerationConfig) -> list[str]:
        return [text for text, _, _ in self.generate_with_reasoning(prompts, config)]

    def generate_with_reasoning(self, prompts: Sequence[Prompt], config: GenerationConfig
                                ) -> list[tuple[str, str | None, int]]:
        """Per prompt: the answer (cut at the first stop string), a reasoning
        model's reasoning text (None where the server returns none) and the
        reasoning tokens the server counted (proto.reasoning_of)."""
        stop = list(config.stop)
        server_stop = bool(stop) and self.options.server_stop and self._server_takes_stop(stop)
        extra: dict[str, Any] = {"stop": stop} if server_stop else {}
        where = self.client.url(proto.CHAT)

        def read(resp: Any) -> tuple[str, str | None, int]:
            return (proto.chat_text(resp, where), *proto.reasoning_of(resp, where))

        def one(p: Prompt) -> tuple[str, str | None, int]:
            text, reasoning, tokens = self.post(proto.CHAT, self._body(
                p, max_tokens=config.max_new_tokens, **extra), read)
            return proto.cut_at_stop(text, stop), reasoning, tokens

        return self._map(one, prompts)

    def next_token_logprobs(self, prompts: Sequence[Prompt],
                            candidates: Sequence[str]) -> np.ndarray:
        self.check_reader([NEXT_TOKEN], "the letter reader (option-letter log-probs)")
        if NEXT_TOKEN in self.own:
            return letters.sglang_letters(self, prompts, candidates)
        return letters.read_letters(self, prompts, candidates)

    def continuation_logprobs(self, prompts: Sequence[Prompt],
                              continuations: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
        self.check_reader([CONTINUATION], "the likelihood reader (continuation log-probs)")
        if len(prompts) != len(continuations):
            raise ValueError("one list of continuations per prompt")
        if self.options.engine == "sglang":
            return sglang.continuation_logprobs(self, prompts, continuations)
        return prompt_logprobs.continuation_logprobs(self, self.client.url(proto.CHAT),
                                                     prompts, continuations)

    # ---- context (optional: only where the server advertises it) ----

    def context_limit(self) -> tuple[int, str] | None:
        """The served model's context as the server advertises it (endpoint.limits)."""
        if self._limit is None:
            from vlmrobust.models.backends.endpoint.limits import advertised_limit

            self._limit = (advertised_limit(self.client, self.options.model),)
        return self._limit[0]

    def prompt_tokens(self, prompt: Prompt) -> int | None:
        """The request's tokens as the server counts them (None: it cannot say)."""
        from vlmrobust.models.backends.endpoint.limits import served_token_count

        return served_token_count(self.client, self._body(prompt))

    # ---- provenance ----

    def server_version(self) -> str | None:
        if self._version is None:
            self._version = (server_version(self.client),)
        return self._version[0]

    def server_record(self) -> dict[str, Any]:
        """What the predictions metadata records about the server (never the key);
        predict adds the run's reasoning totals, summed from its journal."""
        return {"backend": "endpoint", "server_url": self.client.base_url,
                "served_model": self.public_model, "server_version": self.server_version(),
                "api": "openai-reasoning" if self._reasoning else "openai",
                **({"letter_logprobs": letters.SGLANG_IDS} if NEXT_TOKEN in self.own else
                   {} if self.letter_ids.offered is None else {"letter_logprobs": (
                       letters.TOKEN_IDS if self.letter_ids.offered else letters.TOP_LISTING)}),
                "reasoning_effort": self.options.reasoning_effort,
                "image_bytes": self.encoding.record(),
                **({"engine": "sglang", "processor": public_name(self.renderer.name, None)[0]}
                   if self.options.engine == "sglang" else {}),
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
