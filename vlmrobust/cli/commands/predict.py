"""`vlmrobust predict --model NAME --dataset DIR_OR_HUB_ID [--config C] --out FILE`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict",
        help="run a model on a dataset and write option logits",
        description="Run a model adapter on every row of a dataset and write predictions "
        "(parquet: id, logits, config, with its metadata embedded; JSONL + a .meta.yaml sidecar). Resumes an interrupted run when started "
        "again with the same arguments; under torchrun, ranks share the rows.",
    )
    p.add_argument("--model", required=True,
                   help="classifier:efficientnet-lite0 | clip:ARCH:PRETRAINED_OR_PATH | "
                   "vlm:HUB_ID_OR_DIR | endpoint:SERVED_NAME | pipeline:CLASSIFIER+ANSWERER | "
                   "describe:CLASSIFIER+ANSWERER | moondream:HUB_ID_OR_DIR (see `vlmrobust models`)")
    p.add_argument("--dataset", required=True, help="dataset directory or hub id")
    p.add_argument("--config", default=None,
                   help="one config, or several separated by commas (default: all); e.g. "
                        "imagenet-val,imagenet-r so that seed 001's temperature reaches the shift")
    p.add_argument("--out", type=Path, required=True, help="predictions .parquet (or .jsonl)")
    p.add_argument("--limit", type=int, default=None, help="first N rows of each config: a partial run, scored as partial and "
                   "refused by `submit`")
    p.add_argument("--prompt", default=None,
                   help="a prompt id (`vlmrobust prompts`; the seed's five: photo-of, class-name, "
                   "what-type, select-label, identify, for every family) or, for clip, a "
                   "template with {option}")
    p.add_argument("--name", default=None,
                   help="the model's public name in the metadata (default: the model name, "
                   "with any local path replaced by its folder name and a content hash)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--overwrite", action="store_true",
                   help="discard an unfinished run of --out instead of resuming it")
    p.add_argument("--mode", default=None,
                   help="vlm answer mode (default letter): letter | likelihood:sum | "
                   "likelihood:avg | likelihood:cfg=T | likelihood:cfg-avg=T (T >= 0: "
                   "seed 002's classifier-free guidance on summed / averaged token log-probs) "
                   "| generate | open-world (see `vlmrobust models`)")
    p.add_argument("--class-order", default=None, choices=("fixed", "random"),
                   help="vlm --mode generate over a label space (closed world): list the class "
                   "names shuffled per row, seeded by the row id (default random: seed 002 "
                   "Table 1), or in label-space order (fixed: its Table 2 control)")
    add_backend_args(p)
    p.set_defaults(func=run)


def add_backend_args(p: argparse.ArgumentParser) -> None:
    """The flags that say how a model runs (device, batching, threads, generation
    limits, the endpoint's connection): shared by `predict` and `eval`."""
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default=None, help="torch device (default: cuda if present)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: the CPUs this process may use, cgroup "
                        "quota included, less those other processes keep busy; chosen once per "
                        "run and reused on resume)")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="generate / open-world: most tokens generated per row (default "
                   f"{_defaults().max_new_tokens})")
    p.add_argument("--stop", action="append", default=None, metavar="TEXT",
                   help="generate / open-world: cut the output at this text (repeatable)")
    p.add_argument("--answer-cue", default=None, metavar="TEXT",
                   help="generate: appended after a reasoning model's output, then the "
                   "option letters' distribution is read (e.g. 'Answer:')")
    p.add_argument("--device-map", default=None,
                   choices=("auto", "balanced", "balanced_low_0", "sequential"),
                   help="vlm: shard the model over every visible GPU (accelerate) when it "
                   "does not fit one; instead of --device")
    e = p.add_argument_group("served models (--model endpoint:SERVED_NAME)")
    e.add_argument("--endpoint-url", default=None, metavar="URL",
                   help="the OpenAI-compatible server's base URL, e.g. http://localhost:8000/v1")
    e.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="environment variable holding the API key (default OPENAI_API_KEY; "
                   "the key is never written anywhere)")
    e.add_argument("--endpoint-concurrency", type=int, default=None, metavar="N",
                   help="requests in flight (default 8)")
    e.add_argument("--endpoint-timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds to wait for one response (default 120)")
    e.add_argument("--endpoint-max-response-mib", type=float, default=None, metavar="MIB",
                   help="largest response accepted, in MiB (default 16)")
    e.add_argument("--endpoint-retries", type=int, default=None, metavar="N",
                   help="retries of a request on 429, 5xx, timeouts (default 5)")
    e.add_argument("--endpoint-cache", type=Path, default=None, metavar="DIR",
                   help="response cache (default ~/.cache/vlmrobust/endpoint)")
    e.add_argument("--no-endpoint-cache", action="store_true",
                   help="send every request, keep no responses")
    e.add_argument("--endpoint-api", default=None, choices=("openai", "openai-reasoning"),
                   help="request rules: openai (temperature 0, max_tokens; default, and "
                   "switches by itself when the server asks for max_completion_tokens) or "
                   "openai-reasoning (o-series, GPT-5: max_completion_tokens, which also "
                   "bounds the reasoning tokens, and no temperature)")
    e.add_argument("--endpoint-reasoning-effort", default=None,
                   choices=("minimal", "low", "medium", "high"),
                   help="sent as reasoning_effort (reasoning models; default: the server's)")
    e.add_argument("--endpoint-engine", default=None, choices=("openai", "sglang"),
                   help="how likelihood:* reads the served model: openai (default: chat "
                   "completions with vLLM's prompt_logprobs, K + 1 full prefills per row) or "
                   "sglang (SGLang's /generate: one image prefill per row plus the options' "
                   "tokens, the prompt rendered by --endpoint-processor)")
    e.add_argument("--endpoint-processor", default=None, metavar="HUB_ID_OR_DIR",
                   help="--endpoint-engine sglang: the served model's processor, whose chat "
                   "template renders the prompt as in process (default: the served name)")
    e.add_argument("--endpoint-image-bytes", default=None, choices=("png", "source"),
                   help="what is sent for an image: png (default; the pixels, lossless) or "
                   "source (the row's stored PNG/JPEG bytes unchanged, decoded by the "
                   "server's decoder; PNG where a row has none)")
    e.add_argument("--endpoint-png-level", type=int, default=None, metavar="0..9",
                   help="zlib level of the PNG sent (default 6; 1 costs about half the CPU "
                   "for ~6%% more bytes, 0 a quarter for ~1.7x the bytes; same pixels)")
    e.add_argument("--endpoint-local-stop", action="store_true",
                   help="apply --stop here only, not on the server (for servers that fail "
                   "on stop strings, e.g. transformers serve with a VLM); same greedy text")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="vlm: run the modelling code a checkpoint ships with (only if you "
                   "trust it)")


def _defaults() -> Any:
    from vlmrobust.models.readers.base import ReadOptions

    return ReadOptions()


def read_options(args: argparse.Namespace) -> Any:
    """ReadOptions from the flags given (None: none given, the defaults apply)."""
    from vlmrobust.models.readers.base import ReadOptions

    given: dict[str, Any] = {}
    if args.max_new_tokens is not None:
        given["max_new_tokens"] = args.max_new_tokens
    if args.stop:
        given["stop"] = tuple(args.stop)
    if args.answer_cue is not None:
        given["answer_cue"] = args.answer_cue
    return ReadOptions(**given) if given else None


def endpoint_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The endpoint backend's options from the --endpoint-* flags given (None: none)."""
    given = {"url": args.endpoint_url, "api_key_env": args.api_key_env,
             "concurrency": args.endpoint_concurrency, "timeout_s": args.endpoint_timeout,
             "retries": args.endpoint_retries,
             "max_response_mib": args.endpoint_max_response_mib, "cache_dir": args.endpoint_cache,
             "use_cache": False if args.no_endpoint_cache else None,
             "server_stop": False if args.endpoint_local_stop else None,
             "api": args.endpoint_api, "reasoning_effort": args.endpoint_reasoning_effort,
             "engine": args.endpoint_engine, "processor": args.endpoint_processor,
             "image_bytes": args.endpoint_image_bytes, "png_level": args.endpoint_png_level}
    opts = {k: v for k, v in given.items() if v is not None}
    return opts or None


def backend_options(args: argparse.Namespace) -> Any:
    """The run's BackendOptions from the flags of :func:`add_backend_args`."""
    from vlmrobust.evaluation.predict.spec import BackendOptions

    return BackendOptions(batch_size=args.batch_size, device=args.device,
                          device_map=args.device_map, threads=args.threads,
                          trust_remote_code=args.trust_remote_code,
                          endpoint=endpoint_options(args))


def run(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predict.spec import ReaderOptions, RunSpec

    spec = RunSpec(
        args.model, args.dataset, args.out, configs=args.config, limit=args.limit,
        name=args.name, overwrite=args.overwrite, progress=not args.no_progress,
        reader=ReaderOptions(prompt=args.prompt, mode=args.mode,
                             read_options=read_options(args), class_order=args.class_order),
        backend=backend_options(args))
    out = predict_dataset(spec)
    print(out)
    if args.limit is not None:
        print(f"note: --limit {args.limit}: a partial run if a config has more rows; `score` "
              "marks it PARTIAL and `submit` refuses it")
    return 0
