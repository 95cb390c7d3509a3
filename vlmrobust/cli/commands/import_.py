"""`vlmrobust import vlmevalkit|lmms-eval FILE --dataset DIR --out PREDS`: a harness's
per-sample output as a predictions file (raw text, whose answer our matcher
reads when scored; lmms-eval's multiple_choice log-likelihoods as logits)."""

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
        "(accuracy only: text carries no logits); lmms-eval's multiple_choice log-likelihoods "
        "become logits (every metric), except llava_hf's with an image of several tokens, whose "
        "values also average prompt tokens: its choices only (accuracy only). Rows of another dataset build, unknown ids, missing "
        "rows and edited logs are refused, and nothing is written.",
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
    m = fmt.add_parser("lmms-eval", help="lmms-eval's <date>_samples_<task>.jsonl (--log_samples)")
    m.add_argument("samples", type=Path, nargs="+",
                   help="lmms-eval samples files of tasks from 'vlmrobust export lmms-eval' "
                   "(one per config; all multiple_choice or all generate_until)")
    m.add_argument("--dataset", type=Path, required=True, help="the dataset directory it answers")
    m.add_argument("--out", type=Path, required=True, help="predictions file (.parquet or .jsonl)")
    m.add_argument("--results", type=Path, default=None,
                   help="lmms-eval's <date>_results.json (default: the one beside the samples)")
    m.add_argument("--model", default=None,
                   help="model name (default: lmms-eval's model_name; a local path becomes "
                   "its folder name and a hash)")
    m.add_argument("--family", default="vlm", choices=FAMILIES)
    m.add_argument("--harness-version", default=None,
                   help="the lmms-eval version (a pip install records none in its results)")
    m.set_defaults(func=run_lmms_eval)


def _check_suffix(out: Path) -> None:
    # the writer picks parquet for any name but .jsonl: `--out notes.txt` replaced a
    # user's text file with parquet bytes
    if out.suffix not in (".parquet", ".jsonl"):
        from vlmrobust.core.errors import VlmrobustError

        raise VlmrobustError(f"--out {out}: use a .parquet (or .jsonl) file name")


def run_vlmevalkit(args: argparse.Namespace) -> int:
    from vlmrobust.core.files.output_guard import check_file_output
    from vlmrobust.evaluation.harness.vlmevalkit.bridge import import_vlmevalkit

    _check_suffix(args.out)
    check_file_output(args.out, "--out", inputs=[args.result], input_dirs=[args.dataset])
    out = import_vlmevalkit(args.result, args.dataset, args.out, model=args.model,
                            family=args.family, harness_version=args.harness_version,
                            prompt=args.prompt)
    print(f"wrote {out}; score it with: vlmrobust score --dataset {args.dataset} "
          f"--predictions {out} --out scores.json")
    return 0


def run_lmms_eval(args: argparse.Namespace) -> int:
    from vlmrobust.core.files.output_guard import check_file_output
    from vlmrobust.evaluation.harness.lmms_eval.import_ import import_lmms_eval
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    _check_suffix(args.out)
    check_file_output(args.out, "--out", inputs=[*args.samples, args.results],
                      input_dirs=[args.dataset])
    out = import_lmms_eval(args.samples, args.dataset, args.out, results=args.results,
                           model=args.model, family=args.family,
                           harness_version=args.harness_version)
    withheld = (read_prediction_meta(out).get("harness") or {}).get("accuracy_only")
    if withheld:
        print(f"note: {withheld}; for logits run vlmrobust predict --mode likelihood:avg")
    print(f"wrote {out}; score it with: vlmrobust score --dataset {args.dataset} "
          f"--predictions {out} --out scores.json")
    return 0
