"""`vlmrobust compare MODEL_A MODEL_B --dataset D`: where two models' per-row
results disagree, with the leaderboard's paired tests (leaderboard/fits/compare.py)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from vlmrobust.benchmarks.hub_names import DETAILS_REPO


@dataclass(frozen=True)
class CompareDefaults:
    """Defaults of `vlmrobust compare` (one place)."""

    details: str = DETAILS_REPO  # the published details dataset; a local folder is read from disk


def register(sub: argparse._SubParsersAction) -> None:
    defaults = CompareDefaults()
    p = sub.add_parser(
        "compare", help="where two models' per-row results disagree, with the paired tests",
        description="Read the configs MODEL_A--DATASET and MODEL_B--DATASET of the per-row "
        "details dataset (`leaderboard publish` writes it beside the site), count the rows "
        "only one model answers right, list a few of their ids, and run the paired tests the "
        "leaderboard uses (Bench-C: κ-weighted Acc, ΔAcc, RAS over source questions; "
        "otherwise McNemar's exact test with a paired bootstrap interval).")
    p.add_argument("model_a", metavar="MODEL_A", help="model id (submissions/<model-id>/)")
    p.add_argument("model_b", metavar="MODEL_B", help="model id to compare against")
    p.add_argument("--dataset", required=True, metavar="D",
                   help="dataset name, e.g. imagenet-mcq or bench-c")
    p.add_argument("--details", default=defaults.details, metavar="DIR",
                   help="details folder written by `leaderboard publish`, or its hub dataset "
                   f"id (default: {defaults.details}, needs the network)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vlmrobust.leaderboard.fits.compare import compare_details

    result = compare_details(args.details, args.model_a, args.model_b, args.dataset)
    print("\n".join(result.lines()))
    return 0
