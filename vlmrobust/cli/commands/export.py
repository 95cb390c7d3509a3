"""`vlmrobust export vlmevalkit DATASET --out FILE.tsv`: run our benchmarks in another harness."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a dataset in another harness's format (VLMEvalKit TSV)",
        description="Write a built dataset in the form another evaluation harness loads. "
        "vlmevalkit: the TSV VLMEvalKit loads as a custom MCQ dataset (index, base64 image, "
        "question, A..., answer, category = config, plus vlmrobust_id / vlmrobust_config / "
        "vlmrobust_fingerprint / vlmrobust_tsv, which VLMEvalKit carries into its result file "
        "so that 'vlmrobust import vlmevalkit' can check it). Prints the file's MD5 for "
        "VLMEvalKit's check.",
    )
    fmt = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    v = fmt.add_parser("vlmevalkit", help="VLMEvalKit custom MCQ TSV")
    v.add_argument("dataset", help="dataset directory (or hub id)")
    v.add_argument("--out", type=Path, required=True, help="the .tsv to write")
    v.add_argument("--config", default=None, help="one config only (default: all)")
    v.add_argument("--prompt", default=None,
                   help="word the question/options as this VLM prompt id does (vlmrobust prompts)")
    v.set_defaults(func=run_vlmevalkit)


def run_vlmevalkit(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.harness_vlmevalkit import export_vlmevalkit

    path, md5, n = export_vlmevalkit(args.dataset, args.out, args.config, args.prompt)
    print(f"wrote {path} ({n} rows); md5 {md5}")
    print(f"VLMEvalKit: put it in $LMUData as {path.name} and run e.g. "
          f"python run.py --data {path.stem} --model MODEL")
    return 0
