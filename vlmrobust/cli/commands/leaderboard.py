"""`vlmrobust leaderboard build|publish`: render submissions/ into the static site."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.benchmarks.hub_names import DETAILS_REPO


@dataclass(frozen=True)
class LeaderboardDefaults:
    """Defaults of `vlmrobust leaderboard build|publish` (one place)."""

    jobs: int | None = None  # re-scoring processes; None: the CPUs this process may use


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _dataset_args(p: argparse.ArgumentParser) -> None:
    defaults = LeaderboardDefaults()
    p.add_argument("--jobs", type=_jobs, default=defaults.jobs, metavar="N",
                   help="re-score the submissions in N processes (default: the usable CPUs; "
                   "fewer than 24 submissions are re-scored in this process); the site "
                   "is the same for every N")
    p.add_argument("--datasets", type=Path, nargs="+", default=[], metavar="DIR",
                   help="dataset directories the submissions answer; every submission is "
                   "re-scored from its predictions against them")
    p.add_argument("--dataset-store", type=Path, nargs="+", default=[], metavar="DIR",
                   help="folders of dataset directories, searched by fingerprint (also "
                   "$VLMROBUST_DATASETS and a datasets/ folder beside --submissions)")
    p.add_argument("--reference-runs", type=Path, default=None, metavar="FILE",
                   help="the maintainers' reference-run record: only runs listed there get "
                   "the 'reference' badge and define the reference line (default: the "
                   "packaged leaderboard/reference_runs.yaml)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="render or publish the static leaderboard site")
    lsub = p.add_subparsers(dest="leaderboard_command", metavar="ACTION", required=True)

    b = lsub.add_parser("build", help="render a preview of the site (no new release)")
    b.add_argument("--submissions", type=Path, required=True,
                   help="folder with one sub-folder per model (meta.yaml + scores.json + "
                   "predictions)")
    b.add_argument("--out", type=Path, required=True, help="site folder to (re)write")
    b.add_argument("--baselines", type=Path, default=None,
                   help="baselines YAML (default: the packaged leaderboard/baselines.yaml)")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument("--details", type=Path, default=None, metavar="DIR",
                   help="also write the per-row details dataset there (default: none)")
    _dataset_args(b)
    b.set_defaults(func=run_build)

    q = lsub.add_parser("publish", help="build, check and atomically swap in a new release")
    q.add_argument("--submissions", type=Path, required=True,
                   help="folder with one sub-folder per model (meta.yaml + scores.json + "
                   "predictions)")
    q.add_argument("--site", type=Path, required=True, help="published site folder")
    q.add_argument("--version", dest="release_version", default=None,
                   help="release version (default: previous integer version + 1)")
    q.add_argument("--baselines", type=Path, default=None,
                   help="baselines YAML (default: the packaged leaderboard/baselines.yaml)")
    q.add_argument("--quiet", action="store_true", help="no progress bar")
    q.add_argument("--details", type=Path, default=None, metavar="DIR",
                   help="the per-row details dataset, one config <model>--<dataset> each, "
                   "loadable with datasets.load_dataset (default: details/ beside --site)")
    q.add_argument("--push-details", action="store_true",
                   help=f"upload the details dataset to the hub repo {DETAILS_REPO} and tag it "
                   "v<release> (needs network and a hub token)")
    _dataset_args(q)
    q.set_defaults(func=run_publish)

    r = lsub.add_parser(
        "record-reference", help="add runs you made yourself to the reference-run record",
        description="Maintainers only: record the stored predictions (their sha256) of each "
        "--model-id as a reference run in FILE, after running the model yourself with "
        "`vlmrobust predict` and storing it with `vlmrobust submit`. Only recorded runs get "
        "the 'reference' badge and define the reference line.")
    r.add_argument("--submissions", type=Path, required=True, help="submissions folder")
    r.add_argument("--model-id", nargs="+", required=True, dest="model_ids",
                   help="submission folders to record")
    r.add_argument("--record", type=Path, required=True, metavar="FILE",
                   help="the record to update (e.g. leaderboard/reference_runs.yaml)")
    r.set_defaults(func=run_record)


def run_build(args: argparse.Namespace) -> int:
    from vlmrobust.leaderboard.site.publish import build_site

    index = build_site(args.submissions, args.out, baselines=args.baselines,
                       progress=not args.quiet, datasets=args.datasets,
                       stores=args.dataset_store, reference_runs=args.reference_runs,
                       details=args.details, jobs=args.jobs)
    print(index)
    return 0


def run_publish(args: argparse.Namespace) -> int:
    from vlmrobust.leaderboard.site.details import default_details_dir
    from vlmrobust.leaderboard.site.publish import publish_site

    release = publish_site(args.submissions, args.site, version=args.release_version,
                           baselines=args.baselines, progress=not args.quiet,
                           datasets=args.datasets, stores=args.dataset_store,
                           reference_runs=args.reference_runs, details=args.details,
                           push=args.push_details, jobs=args.jobs)
    print(f"published release {release['version']} ({release['n_models']} models) "
          f"to {Path(args.site) / 'index.html'}")
    d = release.get("details")
    if d:
        where = args.details or default_details_dir(args.site)
        pushed = (f"pushed to {d['repo']} as {d['hub_tag']}" if d["hub_tag"] else
                  f"hub repo {d['repo']}: push with --push-details")
        print(f"per-row details: {where} ({d['configs']} configs); {pushed}")
    return 0


def run_record(args: argparse.Namespace) -> int:
    from vlmrobust.leaderboard.trust.reference_runs import record_reference_runs

    record = record_reference_runs(args.record, args.submissions, args.model_ids)
    print(f"{args.record}: {len(record.runs)} reference run(s) recorded "
          f"({', '.join(sorted(args.model_ids))} added)")
    return 0
