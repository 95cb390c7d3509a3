"""`vlmrobust convert FORMAT SOURCE --out DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError, printable

FORMATS = ("vlmevalkit-tsv", "parquet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert",
        help="convert a multiple-choice benchmark into an MCQ dataset directory",
        description="Convert a VLMEvalKit TSV file (MMBench, MMStar, SEED-Bench2-Plus, "
        "MMT-Bench, MME-RealWorld, LEGO-Puzzles, ...) or a Hugging Face parquet snapshot "
        "into a dataset directory that `datasets.load_dataset` and `vlmrobust build` read. "
        "Bad rows are listed by their index and nothing is written.",
    )
    p.add_argument("format", metavar="FORMAT", choices=FORMATS, help=" | ".join(FORMATS))
    p.add_argument("source", metavar="SOURCE", type=Path,
                   help="the .tsv / .parquet file, or a folder of .parquet files")
    p.add_argument("--out", type=Path, required=True, help="output dataset directory")
    p.add_argument("--name", default=None, help="dataset name (default: the file name)")
    p.add_argument("--mapping", type=Path, default=None,
                   help="YAML column mapping for tables in other layouts")
    p.add_argument("--md5", default=None,
                   help="expected MD5 of the file, or 'published' for VLMEvalKit's value")
    p.add_argument("--max-bytes", type=int, default=16 << 30,
                   help="refuse sources larger than this (default 16 GiB)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vlmrobust.builders.convert.mcq import ConvertOptions, convert

    try:
        opts = ConvertOptions(format=args.format, source=args.source, out=args.out,
                              name=args.name, mapping=args.mapping, md5=args.md5,
                              max_bytes=args.max_bytes)
    except ValueError as exc:
        raise VlmrobustError(str(exc)) from None
    manifest = convert(opts)
    skipped = sum(manifest["converted_from"]["skipped"].values())
    print(printable(f"converted {manifest['spec']['name']}: {manifest['num_rows']} questions"
                    + (f" ({skipped} left out)" if skipped else "")
                    + f" -> {args.out} (fingerprint {manifest['fingerprint'][:16]})"))
    return 0
