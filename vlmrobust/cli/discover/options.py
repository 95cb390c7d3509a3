"""The defaults of the discover commands and the answerer / verifier options that
``discover sample`` and ``discover train`` share: below both command modules, so
that neither imports the other (issue 38.4: no import circles)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DiscoverDefaults:
    """Every default of the discover commands, in one place (docs/discover.md
    states why each is what it is)."""

    k: int = 2
    seed: int = 0
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    answer_max_new_tokens: int = 64
    judge_max_new_tokens: int = 512
    samples_per_image: int = 1
    batch_size: int = 8
    planted_images: int = 64
    min_skill_questions: int = 20
    prefix_words: int = 2
    ld_normalise: str = "n_questions"


D = DiscoverDefaults()


def role_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--answerer", required=True,
                   help="vlm:DIR_OR_HUB_ID, endpoint:NAME (with --answerer-url) or "
                   "rule:blind=TYPE[,TYPE] (the planted rule answerer)")
    p.add_argument("--verifier", required=True,
                   help="vlm:DIR_OR_HUB_ID, endpoint:NAME (with --verifier-url) or rule:planted")
    p.add_argument("--answerer-url", default=None, help="base URL of the answerer's server")
    p.add_argument("--verifier-url", default=None, help="base URL of the verifier's server")
    p.add_argument("--api-key-env", default=None,
                   help="environment variable holding the servers' API key")
    p.add_argument("--device", default=None, help="torch device for in-process models")
    p.add_argument("--answer-max-new-tokens", type=int, default=D.answer_max_new_tokens)
    p.add_argument("--judge-max-new-tokens", type=int, default=D.judge_max_new_tokens,
                   help="room for the verifier's reasoning before its verdict lines")
    p.add_argument("--images", type=Path, required=True, help="folder of PNG/JPEG images")
    p.add_argument("--limit", type=int, default=None, help="first N images only")
    p.add_argument("--k", type=int, default=D.k, help="questions per completion (seed: 2)")
    p.add_argument("--seed", type=int, default=D.seed)
    p.add_argument("--skills", default="none",
                   help="skill tagger written into the records: none or rule:planted "
                   "(`discover taxonomy` tags with a model)")


def make_roles(args: argparse.Namespace) -> tuple[Any, Any]:
    from vlmrobust.evaluation.discover.roles import make_answerer, make_verifier

    common = {"api_key_env": args.api_key_env, "device": args.device}
    answerer = make_answerer(args.answerer, args.answer_max_new_tokens,
                             endpoint_url=args.answerer_url, **common)
    verifier = make_verifier(args.verifier, args.judge_max_new_tokens,
                             endpoint_url=args.verifier_url, **common)
    return answerer, verifier
