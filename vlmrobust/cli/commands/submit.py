"""`vlmrobust submit --submissions DIR --model-id ID --dataset DIR --predictions FILE`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vlmrobust.cli.common import add_dataset_predictions_args
from vlmrobust.core.errors import SubmissionError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit",
        help="validate, score and add predictions to a submissions folder",
        description="Validate and score a predictions file, then store it under "
        "SUBMISSIONS/<model-id>/<dataset>/ and merge its scores into "
        "SUBMISSIONS/<model-id>/scores.json, in one atomic swap under a per-model lock. Model "
        "metadata comes from the predictions' own metadata, then --meta, then the flags. "
        "Nothing is written on failure.",
    )
    p.add_argument("--submissions", type=Path, required=True, help="submissions folder")
    p.add_argument("--model-id", required=True, help="folder name: A-Z a-z 0-9 . _ - (max 100)")
    add_dataset_predictions_args(p, None)
    p.add_argument("--meta", type=Path, default=None, help="YAML file of model metadata fields")
    p.add_argument("--name", default=None, help="display name of the model")
    p.add_argument("--family", default=None, choices=("vlm", "clip", "classifier", "other"))
    p.add_argument("--vision-encoder", default=None, help="vision encoder, e.g. ViT-L/14")
    p.add_argument("--params", type=int, default=None, help="parameter count")
    p.set_defaults(func=run)


def _read_meta_file(path: Path) -> dict[str, Any]:
    from vlmrobust.core.files.bounded import MAX_META_BYTES, parse_yaml_bounded, read_bytes_bounded

    data = parse_yaml_bounded(read_bytes_bounded(path, MAX_META_BYTES, "--meta file", SubmissionError),
                              f"--meta {path}", SubmissionError)
    if not isinstance(data, dict):
        raise SubmissionError(f"--meta {path}: expected a mapping of model fields (name, family, ...)")
    return data


def run(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.submissions import add_submission

    overrides: dict[str, Any] = _read_meta_file(args.meta) if args.meta is not None else {}
    flags = {"name": args.name, "family": args.family, "vision_encoder": args.vision_encoder,
             "params": args.params}
    overrides.update({k: v for k, v in flags.items() if v is not None})
    scores = add_submission(args.submissions, args.model_id, args.dataset, args.predictions, overrides)
    names = ", ".join(scores["datasets"])
    print(f"submitted {args.model_id} -> {args.submissions / args.model_id} (datasets: {names})")
    return 0
