"""`vlmrobust eval --model NAME --suite SUITE [--out DIR]`: one model through a
suite (benchmarks/suites/*.yaml); the work is in vlmrobust.evaluation.suite."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.cli.commands.predict import add_backend_args, backend_options, read_options


@dataclass(frozen=True)
class EvalDefaults:
    """Defaults of `vlmrobust eval` (one place)."""

    out_root: Path = Path("eval-out")  # --out defaults to eval-out/<model-id>


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="take one model through a suite: predict, score, submission folder, results.json",
        description="For every dataset of SUITE (a name in benchmarks/suites/ or a YAML file): "
        "predict with the reader the suite gives the model's family, validate, score, and add "
        "it to OUT/submissions/<model-id>/ (ready for a pull request); then write "
        "OUT/results.json and print the results table. A rerun after a kill redoes only what "
        "is missing. Datasets the model's family cannot answer are listed as skipped.",
    )
    p.add_argument("--model", required=True, help="as `vlmrobust predict --model` (see "
                   "`vlmrobust models`)")
    p.add_argument("--suite", required=True, help="a suite name (sample, seed000-imagenet-mcq, "
                   "seed001-holistic, seed002-classification, seed003-bench-c, "
                   "seed004-failure-modes, full) or a suite YAML file")
    p.add_argument("--out", type=Path, default=None,
                   help=f"output folder (default: {EvalDefaults.out_root}/<model-id>)")
    p.add_argument("--dataset-store", type=Path, action="append", default=[], metavar="DIR",
                   help="a folder of dataset directories, where the suite's `store:` datasets "
                   "are (repeatable; also $VLMROBUST_DATASETS), e.g. demo-out/datasets")
    p.add_argument("--datasets", nargs="+", default=None, metavar="NAME",
                   help="run only these datasets of the suite")
    p.add_argument("--configs", nargs="+", default=None, metavar="NAME",
                   help="run only these configs (of the datasets that have them)")
    p.add_argument("--limit", type=int, default=None,
                   help="first N rows of each config: a smoke run, marked partial in every "
                   "output, scored into OUT/scores/ and never submitted")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (datasets, configs, rows, readers, skips) and the "
                   "estimated row count; load no model, write nothing")
    p.add_argument("--model-id", default=None,
                   help="submission folder name (default: from the model name)")
    p.add_argument("--name", default=None, help="the model's public name in the metadata "
                   "(as `predict --name`)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_backend_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.core.files.output_guard import refuse_non_folder, resolve
    from vlmrobust.evaluation.model_meta import validate_model_id
    from vlmrobust.evaluation.suite.plan import describe_plan, make_plan, stores
    from vlmrobust.evaluation.suite.results import results_table
    from vlmrobust.evaluation.suite.run import EvalOptions, default_model_id, run_suite
    from vlmrobust.evaluation.suite.spec import load_suite

    if args.limit is not None and args.limit < 1:
        raise VlmrobustError(f"--limit must be >= 1, got {args.limit}")
    suite = load_suite(args.suite)
    plan = make_plan(suite, args.model, stores(args.dataset_store), args.datasets, args.configs,
                     manifest_only=args.dry_run)
    if os.environ.get("RANK", "0") == "0":  # under torchrun, rank 0 speaks for all
        for line in describe_plan(plan, args.limit):
            print(line)
    if args.dry_run:
        return 0
    missing = [e for e in plan.entries if e.missing is not None and e.reader.skip is None]
    if missing:
        raise VlmrobustError(f"suite {suite.name} dataset {missing[0].name}: {missing[0].missing}")
    model_id = validate_model_id(args.model_id or default_model_id(args.model))
    out = resolve(args.out or EvalDefaults.out_root / model_id, "--out")
    refuse_non_folder(out, "--out")
    opts = EvalOptions(out=out, model_id=model_id, name=args.name, limit=args.limit,
                       backend=backend_options(args), read_options=read_options(args),
                       progress=not args.no_progress)
    results = run_suite(plan, opts)
    if results is None:  # a torchrun rank other than 0: rank 0 reports
        return 0
    print()
    for line in results_table(results):
        print(line)
    print(f"\nwrote {out / 'results.json'}")
    if results["submission"]:
        from vlmrobust.leaderboard.pages.report import write_report

        datasets = [Path(e["path"]) for e in results["entries"] if e["status"] == "done"]
        report = write_report(out / "submissions", model_id, out, datasets)
        print(f"report: {report}  (opens from disk)")
        print(f"submission folder: {out / results['submission']}  (open a pull request adding "
              "it under submissions/)")
    return 0
