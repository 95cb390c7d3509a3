"""`vlmrobust discover planted|train|sample|evaluate|taxonomy`: seed 004's RL
failure discovery (docs/discover.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from vlmrobust.cli.discover.options import D, make_roles, role_args

# numpy's and torch's generators take seeds in [0, 2**63); item seeds are derived below that
MAX_SEED = 2**63 - 1


def check_numbers(args: argparse.Namespace) -> None:
    """Refuse an out-of-range number flag in one line (issue 40.13, 41.6): a
    negative seed or token count, a NaN temperature and ``--limit -1`` (which
    sliced off the last image) reached numpy, torch or a slice as-is."""
    import math

    from vlmrobust.core.errors import VlmrobustError

    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise VlmrobustError(f"--seed {seed}: give a seed from 0 to {MAX_SEED}")
    for name in ("limit", "k", "max_new_tokens", "answer_max_new_tokens", "judge_max_new_tokens",
                 "samples_per_image", "batch_size"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise VlmrobustError(f"{flag(name)} {value}: give a positive integer")
    temperature = getattr(args, "temperature", None)
    if temperature is not None and not (math.isfinite(temperature) and temperature > 0):
        raise VlmrobustError(f"--temperature {temperature}: give a finite number > 0")
    top_p = getattr(args, "top_p", None)
    if top_p is not None and not (math.isfinite(top_p) and 0 < top_p <= 1):
        raise VlmrobustError(f"--top-p {top_p}: give a number in (0, 1]")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("discover", help="seed 004: an RL questioner that finds a VLM's failures",
                       description="Failure-mode discovery (seed 004): a questioner asks k "
                       "questions per image, a frozen answerer answers, a verifier judges "
                       "validity and correctness. Full description: docs/discover.md in the vlmrobust "
                       "source tree (README, 'Failure-mode discovery').")
    cmd = p.add_subparsers(dest="discover_command", metavar="STEP", required=True)

    pl = cmd.add_parser("planted", help="write planted-blind-spot images (and a tiny questioner)")
    pl.add_argument("--out", type=Path, required=True, help="folder for the PNG images")
    pl.add_argument("--n", type=int, default=D.planted_images)
    pl.add_argument("--seed", type=int, default=D.seed)
    pl.add_argument("--questioner-out", type=Path, default=None,
                    help="also build the tiny text-only questioner here")
    pl.set_defaults(func=run_planted)

    s = cmd.add_parser("sample", help="ask, answer and verify over a folder of images -> JSONL")
    s.add_argument("--questioner", required=True,
                   help="model folder (sampled; e.g. a `discover train` output) or "
                   "vlm:HUB_ID / endpoint:NAME (greedy)")
    s.add_argument("--questioner-url", default=None, help="base URL of the questioner's server")
    role_args(s)
    s.add_argument("--out", type=Path, required=True, help="records file (.jsonl)")
    s.add_argument("--strategy", choices=("zero-shot", "conme"), default="zero-shot",
                   help="one-turn prompt, or ConMe-style describe-then-ask")
    s.add_argument("--method", choices=("rl", "zero-shot", "conme", "untrained"), default=None,
                   help="label in the records (default: rl for a trained folder, else the "
                   "strategy)")
    s.add_argument("--samples-per-image", type=int, default=D.samples_per_image)
    s.add_argument("--batch-size", type=int, default=D.batch_size)
    s.add_argument("--temperature", type=float, default=D.temperature)
    s.add_argument("--top-p", type=float, default=D.top_p)
    s.add_argument("--max-new-tokens", type=int, default=D.max_new_tokens)
    s.set_defaults(func=run_sample)

    e = cmd.add_parser("evaluate", help="QVR, FDR, SD, LD, #Skills, SC from records")
    e.add_argument("records", type=Path, nargs="+", help="records files (.jsonl)")
    e.add_argument("--out", type=Path, required=True, help="metrics (.json)")
    e.add_argument("--no-sd", action="store_true", help="skip SD (needs MiniLM)")
    e.add_argument("--taxonomy", type=Path, default=None,
                   help="reference skills, one per line, for taxonomy coverage (the share of "
                   "them some valid question carries; not seed 004's SC)")
    e.add_argument("--min-skill-questions", type=int, default=D.min_skill_questions)
    e.add_argument("--prefix-words", type=int, default=D.prefix_words)
    e.add_argument("--ld-normalise", choices=("n_questions", "n_prefixes", "none"),
                   default=D.ld_normalise,
                   help="LD's divisor: ln(#valid questions), ln(#distinct prefixes) or none "
                   "(entropy in nats)")
    e.set_defaults(func=run_evaluate)

    from vlmrobust.cli.discover.train import register_taxonomy, register_train

    register_train(cmd)
    register_taxonomy(cmd)


def run_planted(args: argparse.Namespace) -> int:
    from vlmrobust.core.errors import printable
    from vlmrobust.core.files.owned import check_owned_folder
    from vlmrobust.evaluation.discover.images import PLANTED, write_planted_images

    check_numbers(args)
    if args.questioner_out is not None:  # both checked before either is written
        from vlmrobust.evaluation.discover.tiny import TINY

        check_owned_folder(args.questioner_out, "--questioner-out", TINY, inputs=[args.out])
        check_owned_folder(args.out, "--out", PLANTED, inputs=[args.questioner_out])
    paths = write_planted_images(args.out, args.n, args.seed)
    print(printable(f"wrote {len(paths)} planted images to {args.out}"))
    if args.questioner_out is not None:
        from vlmrobust.evaluation.discover.tiny import make_tiny_questioner

        make_tiny_questioner(args.questioner_out, seed=args.seed)
        print(printable(f"wrote the tiny questioner to {args.questioner_out}"))
    return 0


def skill_tagger(name: str) -> Any:
    from vlmrobust.core.errors import VlmrobustError

    if name == "none":
        return None
    if name == "rule:planted":
        from vlmrobust.evaluation.discover.planted import tag_skills

        return lambda images, questions: [tag_skills(q) for q in questions]
    raise VlmrobustError(f"--skills {name!r}: use none or rule:planted")


def run_sample(args: argparse.Namespace) -> int:
    from vlmrobust.core.errors import printable
    from vlmrobust.core.files.output_guard import check_earlier_output, check_file_output
    from vlmrobust.evaluation.discover.images import list_images
    from vlmrobust.evaluation.discover.questioner import make_questioner
    from vlmrobust.evaluation.discover.roles import model_folders
    from vlmrobust.evaluation.discover.sample import SampleConfig
    from vlmrobust.evaluation.discover.sample import run_sample as sample

    check_numbers(args)
    check_file_output(args.out, "--out", input_dirs=[args.images, *model_folders(
        args.questioner, args.answerer, args.verifier)])
    check_earlier_output(args.out, "--out", _is_records, "a records file")
    run = Path(args.questioner) / "discover_run.json"
    step = 0
    if run.is_file():  # a `discover train` output: its records carry the trained step
        from vlmrobust.core.files.bounded import MIB, read_json_bounded

        done = read_json_bounded(run, 64 * MIB, "run record").get("steps_done", 0)
        step = done if isinstance(done, int) and not isinstance(done, bool) and done >= 0 else 0
    method = args.method or ("rl" if run.is_file() else args.strategy)
    # bad values refused before any model loads
    config = SampleConfig(method, seed=args.seed, samples_per_image=args.samples_per_image,
                          batch_size=args.batch_size, step=step)
    refs = list_images(args.images, args.limit)
    tagger = skill_tagger(args.skills)
    questioner = make_questioner(
        args.questioner, args.k, args.strategy, temperature=args.temperature, top_p=args.top_p,
        max_new_tokens=args.max_new_tokens, device=args.device,
        **({"endpoint_url": args.questioner_url, "api_key_env": args.api_key_env}
           if args.questioner.startswith("endpoint:") else {}))
    answerer, verifier = make_roles(args)
    records = sample(refs, questioner, answerer, verifier, args.out, config,
                     skill_tagger=tagger)
    n_valid = sum(r.valid for r in records)
    print(printable(f"wrote {args.out}: {len(records)} questions, {n_valid} valid, "
                    f"{sum(r.failure for r in records)} failures"))
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    from vlmrobust.core.discover_records import read_many
    from vlmrobust.core.errors import printable
    from vlmrobust.core.files.atomic import write_text_atomic
    from vlmrobust.core.files.bounded import MIB, read_bytes_bounded
    from vlmrobust.core.files.output_guard import check_earlier_output, check_file_output
    from vlmrobust.evaluation.discover.evaluate import EvaluateConfig, evaluate_rows

    check_file_output(args.out, "--out", inputs=[*args.records, args.taxonomy])
    check_earlier_output(args.out, "--out", _is_metrics, "a metrics file of discover evaluate")
    cfg = EvaluateConfig(prefix_words=args.prefix_words, ld_normalise=args.ld_normalise,
                         min_skill_questions=args.min_skill_questions)
    records = read_many(args.records)
    taxonomy = None
    if args.taxonomy is not None:
        text = read_bytes_bounded(args.taxonomy, 16 * MIB, "taxonomy file").decode(
            "utf-8", "replace")
        taxonomy = [s.strip() for s in text.splitlines() if s.strip()]
    embed = None
    if not args.no_sd:
        from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

        embed = TextEmbedder(load_minilm(args_device(args)))
    result = evaluate_rows(records, cfg, embed, taxonomy)
    write_text_atomic(args.out, json.dumps(result, indent=2, sort_keys=True) + "\n")
    for row in result["rows"]:
        # names come from the records file: an ESC in one must not reach the terminal
        print(printable(f"{row['method']} | {row['questioner']} -> {row['answerer']} "
              f"(judge {row['verifier']}): QVR {row['qvr']} FDR {row['fdr']} "
              f"SD {row['sd']} LD {row['ld']} #Skills {row['n_skills']} "
              f"SC {row['skill_coverage']}"))
    print(printable(f"wrote {args.out}"))
    return 0


def args_device(args: argparse.Namespace) -> str | None:
    return getattr(args, "device", None)


def _is_records(path: Path) -> bool:
    """Whether ``path`` starts with a discovery record (an earlier sample)."""
    from vlmrobust.core.discover_records import iter_records
    from vlmrobust.core.errors import VlmrobustError

    try:
        return next(iter(iter_records(path)), None) is not None
    except VlmrobustError:
        return False


def _is_metrics(path: Path) -> bool:
    """Whether ``path`` holds an earlier `discover evaluate` result."""
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.core.files.bounded import MIB, read_json_bounded

    try:
        data = read_json_bounded(path, 64 * MIB, "metrics file")
    except VlmrobustError:
        return False
    return isinstance(data, dict) and {"rows", "spread", "config"} <= set(data)
