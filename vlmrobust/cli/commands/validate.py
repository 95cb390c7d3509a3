"""`vlmrobust validate --dataset DIR [--config C] --predictions FILE`."""

from __future__ import annotations

import argparse

from vlmrobust.cli.common import add_dataset_predictions_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a predictions file against its dataset",
        description="Check that a predictions file (parquet or JSONL: id + logits or prediction) "
        "answers every row of the dataset exactly once with one finite logit per option, and "
        "that its metadata (embedded in the parquet file, or a <file>.meta.yaml sidecar) names "
        "this dataset build. Writes nothing.",
    )
    add_dataset_predictions_args(p, "check one config only (default: all)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.validate.registration import validate_dataset

    print(validate_dataset(args.dataset, args.predictions, args.config).summary())
    return 0
