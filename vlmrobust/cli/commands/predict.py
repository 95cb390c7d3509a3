"""`vlmrobust predict --model NAME --dataset DIR_OR_HUB_ID [--config C] --out FILE`."""

from __future__ import annotations

import argparse
from pathlib import Path


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
                   "vlm:HUB_ID_OR_DIR | pipeline:CLASSIFIER+ANSWERER (see `vlmrobust models`)")
    p.add_argument("--dataset", required=True, help="dataset directory or hub id")
    p.add_argument("--config", default=None, help="one config (default: all)")
    p.add_argument("--out", type=Path, required=True, help="predictions .parquet (or .jsonl)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--device", default=None, help="torch device (default: cuda if present)")
    p.add_argument("--limit", type=int, default=None, help="first N rows of each config")
    p.add_argument("--prompt", default=None,
                   help="a prompt id (`vlmrobust prompts`; the seed's five: photo-of, class-name, "
                   "what-type, select-label, identify, for every family) or, for clip, a "
                   "template with {option}")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: the CPUs this process may use, cgroup "
                        "quota included, less those other processes keep busy; chosen once per "
                        "run and reused on resume)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--overwrite", action="store_true",
                   help="discard an unfinished run of --out instead of resuming it")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="vlm: run the modelling code a checkpoint ships with (only if you "
                   "trust it)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.predict import predict_dataset

    out = predict_dataset(
        args.model, args.dataset, args.out, config=args.config, batch_size=args.batch_size,
        device=args.device, limit=args.limit, progress=not args.no_progress,
        prompt=args.prompt, threads=args.threads, overwrite=args.overwrite,
        trust_remote_code=args.trust_remote_code,
    )
    print(out)
    return 0
