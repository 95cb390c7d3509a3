"""`vlmrobust export vlmevalkit|lmms-eval DATASET --out FILE.tsv|DIR`: run our benchmarks
in another harness."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a dataset in another harness's format (VLMEvalKit TSV, lmms-eval tasks)",
        description="Write a built dataset in the form another evaluation harness loads. "
        "vlmevalkit: the TSV VLMEvalKit loads as a custom MCQ dataset (index, base64 image, "
        "question, A..., answer, category = config, plus vlmrobust_id / vlmrobust_config / "
        "vlmrobust_fingerprint / vlmrobust_tsv, which VLMEvalKit carries into its result file "
        "so that 'vlmrobust import vlmevalkit' can check it). Prints the file's MD5 for "
        "VLMEvalKit's check. lmms-eval: a task folder for --include_path (per config a "
        "multiple_choice task vlmrobust_<family>_<config> and a generate_until task "
        "..._gen, one utils.py rendering our prompt registry's texts), reading the dataset "
        "directory in place; each task names the dataset build's fingerprint.",
    )
    fmt = p.add_subparsers(dest="format", metavar="FORMAT", required=True)
    v = fmt.add_parser("vlmevalkit", help="VLMEvalKit custom MCQ TSV")
    v.add_argument("dataset", help="dataset directory (or hub id)")
    v.add_argument("--out", type=Path, required=True, help="the .tsv to write")
    v.add_argument("--config", default=None, help="one config only (default: all)")
    v.add_argument("--prompt", default=None,
                   help="word the question/options as this VLM prompt id does (vlmrobust prompts)")
    v.set_defaults(func=run_vlmevalkit)
    m = fmt.add_parser("lmms-eval", help="lmms-eval task folder (YAML + utils.py)")
    m.add_argument("dataset", help="dataset directory (or hub id OWNER/NAME[@REVISION])")
    m.add_argument("--out", type=Path, required=True,
                   help="the task folder to write (new, empty, or an earlier export)")
    m.add_argument("--config", default=None, help="one config only (default: all)")
    m.add_argument("--prompt", default=None,
                   help="word the question/options as this VLM prompt id does (vlmrobust prompts)")
    m.add_argument("--output-type", action="append", default=None,
                   choices=["multiple_choice", "generate_until"],
                   help="only this output type (repeatable; default: both)")
    m.set_defaults(func=run_lmms_eval)


def run_vlmevalkit(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.harness.vlmevalkit.bridge import export_vlmevalkit

    path, md5, n = export_vlmevalkit(args.dataset, args.out, args.config, args.prompt)
    print(f"wrote {path} ({n} rows); md5 {md5}")
    print(f"VLMEvalKit: put it in $LMUData as {path.name} and run e.g. "
          f"python run.py --data {path.stem} --model MODEL")
    return 0


def run_lmms_eval(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.harness.lmms_eval.export import export_lmms_eval
    from vlmrobust.evaluation.harness.lmms_eval.task import OUTPUT_TYPES

    done = export_lmms_eval(args.dataset, args.out, args.config, args.prompt,
                            tuple(args.output_type or OUTPUT_TYPES))
    print(f"wrote {len(done.names)} lmms-eval tasks to {done.out} "
          f"(dataset build {done.fingerprint[:12]})")
    for line in done.run_lines():
        print(f"run: {line}")
    return 0
