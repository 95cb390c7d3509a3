"""`vlmrobust build SPEC [--sample | --source-root DIR] --out DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.families import BuildOptions, get_builder
from vlmrobust.core.errors import VlmrobustError, printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build",
        help="build a benchmark dataset directory from a spec",
        description="Build a dataset directory (parquet + README card + manifest.json) "
        "from a spec in benchmarks/ or a YAML path.",
    )
    p.add_argument("spec", metavar="SPEC", help="a name in benchmarks/ (the name wins over a folder of that name) or a "
                   "YAML path")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--sample", action="store_true", help="build from the embedded sample")
    src.add_argument("--source-root", type=Path, help="folder holding the source datasets")
    p.add_argument("--out", type=Path, required=True, help="output dataset directory")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes for corrupting/encoding images (default: the CPUs "
                        "this process may use, cgroup quota included)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads for selector/embedding models (default: the CPUs "
                        "this process may use, cgroup quota included, less those other "
                        "processes keep busy)")
    p.add_argument("--device", default=None, help="torch device for selector/embedding models")
    p.add_argument("--limit", type=int, default=None, help="cap rows (for quick trials)")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="let vlm selector models run the code their checkpoints ship with")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=run)


def set_torch_threads(threads: int) -> None:
    """torch's intra-op threads, if torch is installed (the light install has none)."""
    import importlib.util

    from vlmrobust.core.cpus import check_threads

    check_threads(threads)
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(threads)


def run(args: argparse.Namespace) -> int:
    from vlmrobust.core.cpus import available_cpus, default_threads
    from vlmrobust.core.files.output_guard import check_dataset_output

    path = resolve_spec(args.spec)
    raw = load_spec_yaml(path)
    # before any work: the folder it would replace must be a dataset it built (or empty)
    check_dataset_output(args.out, "--out", protected=[path, args.source_root])
    cpus = available_cpus()
    # read once, at the start: one build uses one count throughout
    threads = args.threads if args.threads is not None else default_threads()
    set_torch_threads(threads)
    try:
        options = BuildOptions(
            out=args.out,
            sample=args.sample,
            source_root=args.source_root,
            workers=args.workers if args.workers is not None else cpus,
            progress=not args.no_progress,
            device=args.device,
            limit=args.limit,
            trust_remote_code=args.trust_remote_code,
        )
    except ValueError as exc:
        raise VlmrobustError(str(exc)) from None
    if options.source_root is not None and not options.source_root.is_dir():
        raise VlmrobustError(f"--source-root {options.source_root} is not a directory")
    builder = get_builder(str(raw["family"]))
    manifest = builder(raw, path, options)
    # the spec's name and version are the user's text: escaped (issue 41.5)
    print(printable(
        f"built {manifest['spec']['name']} v{manifest['spec']['version']}: "
        f"{manifest['num_rows']} rows in {len(manifest['configs'])} configs -> {args.out} "
        f"(fingerprint {manifest['fingerprint'][:16]}; {threads} torch thread(s))"
    ))
    return 0
