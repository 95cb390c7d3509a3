"""`vlmrobust import vlmevalkit RESULT --dataset DIR --out PREDS`: a harness's
per-sample output as a predictions file (its raw text; the answer is read by
our matcher when scored)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlmrobust.models.base import FAMILIES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="turn a harness's per-sample output into a predictions file",
        description="Read another harness's per-sample results for a dataset exported with "
        "'vlmrobust export' and write a predictions file with metadata. The raw model output "
        "goes into 'text'; the scorer reads the answer from it with the project's matcher "
        "(accuracy only: text carries no logits). Rows of another dataset build, unknown ids "
        "and missing rows are refused, and nothing is written.",
    )
    fmt = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    v = fmt.add_parser("vlmevalkit", help="VLMEvalKit's <model>_<dataset>.xlsx|.tsv|.jsonl")
    v.add_argument("result", type=Path, help="VLMEvalKit's per-sample result file")
    v.add_argument("--dataset", type=Path, required=True, help="the dataset directory it answers")
    v.add_argument("--out", type=Path, required=True, help="predictions file (.parquet or .jsonl)")
    v.add_argument("--model", default=None,
                   help="model name (default: from VLMEvalKit's file name <model>_<dataset>)")
    v.add_argument("--family", default="vlm", choices=FAMILIES)
    v.add_argument("--harness-version", default=None,
                   help="the VLMEvalKit version or commit (its result files do not record it)")
    v.add_argument("--prompt", default=None, help="the prompt id given to 'vlmrobust export'")
    v.set_defaults(func=run_vlmevalkit)


def run_vlmevalkit(args: argparse.Namespace) -> int:
    from vlmrobust.core.output_guard import check_file_output
    from vlmrobust.evaluation.harness_vlmevalkit import import_vlmevalkit

    check_file_output(args.out, "--out", inputs=[args.result], input_dirs=[args.dataset])
    out = import_vlmevalkit(args.result, args.dataset, args.out, model=args.model,
                            family=args.family, harness_version=args.harness_version,
                            prompt=args.prompt)
    print(f"wrote {out}; score it with: vlmrobust score --dataset {args.dataset} "
          f"--predictions {out} --out scores.json")
    return 0
