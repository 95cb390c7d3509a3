"""`vlmrobust demo --out DIR`: the whole pipeline on the embedded sample.

build (imagenet-mcq, bench-c, imagewikiqa, classification, the cue-conflict
stand-in, ood and 31 captioned photos for retrieval from the sample) -> a few
GRPO steps of seed 004's questioner in the planted world and the
failure-discovery dataset built from its records (demo_discover.py) ->
each of the real EfficientNet-Lite0/1/2 classifiers (and the Lite0 + MiniLM
pipelines for ImageWikiQA, failure-discovery's mcq config and retrieval) through
`vlmrobust eval --suite sample` (predict, score, submit: evaluation/suite/) ->
static site. The sample suite lists the classification configs (the sample's
photos and renditions over the 1,000 ImageNet classes, and their K-configs)
right after ImageNet-MCQ: the same images, so the classifiers' logits come from
the in-process cache (~12 s a model instead of ~90 s).
Leaves DIR/datasets/<family>/, DIR/predictions/<model-id>/, DIR/eval/<model-id>/results.json,
DIR/submissions/<model-id>/, DIR/discover/,
DIR/reference-runs.yaml (the demo's own runs, recorded as a maintainer records
reference runs) and DIR/site/index.html. Stages whose output is already complete are reused, so a
killed demo resumes where it stopped (use --fresh to rebuild everything)."""

from __future__ import annotations

import argparse
import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.output_guard import refuse_non_folder, resolve


@dataclass(frozen=True)
class DemoOptions:
    """Defaults of the demo (one place)."""

    # (adapter name, submission id, display name), each taken through the `sample`
    # suite (benchmarks/suites/sample.yaml) by `vlmrobust eval`, whose readers say
    # what each family answers: the classifiers need option_class_ids (or a label
    # space with ImageNet ids), so they answer ImageNet-MCQ, classification,
    # cue-conflict, Bench-C and OOD; the recognise-then-answer pipeline takes
    # ImageWikiQA and the MCQ config of failure-discovery (built by the demo's
    # discover stage, not from the sample).
    models: tuple[tuple[str, str, str], ...] = (
        ("classifier:efficientnet-lite0", "efficientnet-lite0", "EfficientNet-Lite0"),
        ("classifier:efficientnet-lite1", "efficientnet-lite1", "EfficientNet-Lite1"),
        ("classifier:efficientnet-lite2", "efficientnet-lite2", "EfficientNet-Lite2"),
        ("pipeline:efficientnet-lite0+minilm", "efficientnet-lite0-minilm",
         "EfficientNet-Lite0 → MiniLM (recognise, then answer)"),
        # no CLIP weights ship: retrieval's image and caption embeddings come from
        # Lite0's top-5 classes as MiniLM sentences (models/describe.py);
        # retrieval: 31 photos, 62 captions; ~25 s (predict + score)
        ("describe:efficientnet-lite0+minilm", "efficientnet-lite0-minilm-describe",
         "EfficientNet-Lite0 → MiniLM (recognise, then describe)"),
    )
    suite: str = "sample"
    # ood: 101 photos + 35 scikit-image OOD rows, ~10 s per classifier (predict + score)
    families: tuple[str, ...] = ("imagenet-mcq", "bench-c", "imagewikiqa", "classification",
                                 "cue-conflict", "ood", "retrieval")
    batch_size: int = 16
    workers: int = 2
    # None: every sample image (101 photos, 555 renditions). A number draws a
    # seeded subset per variant (the same one on every run) for quicker trials.
    mcq_questions_per_variant: int | None = None

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.mcq_questions_per_variant is not None and self.mcq_questions_per_variant < 1:
            raise ValueError("mcq_questions_per_variant must be >= 1, got "
                             f"{self.mcq_questions_per_variant}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="run the whole pipeline on the embedded sample",
        description="Build the sample datasets, run the EfficientNet-Lite models, score "
        "them and render the leaderboard site.",
    )
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--workers", type=int, default=DemoOptions.workers, help="CPU workers")
    p.add_argument("--batch-size", type=int, default=DemoOptions.batch_size)
    p.add_argument("--questions", type=int, default=DemoOptions.mcq_questions_per_variant,
                   help="ImageNet-MCQ questions per sample variant (seeded subset; "
                   "default: all sample images)")
    p.add_argument("--fresh", action="store_true", help="rebuild every stage from scratch "
                   "(removes what earlier demos wrote in --out, listed in its "
                   ".vlmrobust-demo.json, and refuses when datasets/, predictions/, "
                   "eval/, submissions/, site/, discover/, details/ or reference-runs.yaml hold anything "
                   "else)")
    p.set_defaults(func=run)


def _stage(title: str) -> float:
    print(f"\n==> {title}", flush=True)
    return time.perf_counter()


def _done(t0: float) -> None:
    print(f"    done in {time.perf_counter() - t0:.1f} s", flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        opts = DemoOptions(batch_size=args.batch_size, workers=args.workers,
                           mcq_questions_per_variant=args.questions)
    except ValueError as exc:
        raise VlmrobustError(str(exc)) from None
    out: Path = resolve(args.out, "--out")
    refuse_non_folder(out, "--out")
    from vlmrobust.cli.demo.ledger import Ledger, remove_own

    if args.fresh:
        remove_own(out)
    out.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out)  # what this run writes, for a later --fresh
    started = time.perf_counter()

    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.builders.families import BuildOptions, get_builder
    from vlmrobust.core.datadir import read_manifest

    datasets_dir = out / "datasets"
    built: dict[str, Path] = {}
    for family in opts.families:
        target = datasets_dir / family
        t0 = _stage(f"build {family} from the embedded sample -> {target}")
        if (target / "manifest.json").is_file():
            print("    already built; reusing (pass --fresh to rebuild)")
        else:
            path = resolve_spec(family)
            get_builder(family)(
                load_spec_yaml(path), path,
                BuildOptions(
                    out=target, sample=True, workers=opts.workers,
                    limit=opts.mcq_questions_per_variant if family == "imagenet-mcq" else None,
                ),
            )
        m = read_manifest(target)
        print(f"    {m['num_rows']} rows, configs: {', '.join(m['configs'])}")
        built[family] = target
        ledger.save()
        _done(t0)

    from vlmrobust.cli.demo import discover_stage as demo_discover

    discover = out / "discover"
    t0 = _stage(f"discover: {demo_discover.DemoDiscover.steps} GRPO steps of the tiny questioner "
                f"against the planted answerer -> {discover}")
    if demo_discover.complete(discover):
        print("    already done; reusing (pass --fresh to redo)")
    elif importlib.util.find_spec("trl") is None:
        print("    skipped: GRPO needs TRL; fix: pip install 'vlmrobust[discover]'")
    else:
        demo_discover.run_discover(discover)
    ledger.save()
    if demo_discover.complete(discover):
        for line in demo_discover.summary(discover):
            print(f"    {line}")
    _done(t0)
    if demo_discover.complete(discover):
        target = datasets_dir / "failure-discovery"
        t0 = _stage(f"build failure-discovery from {discover}/records -> {target}")
        if (target / "manifest.json").is_file():
            print("    already built; reusing (pass --fresh to rebuild)")
        else:
            demo_discover.build_dataset(discover, target)
        m = read_manifest(target)
        print(f"    {m['num_rows']} rows, configs: {', '.join(m['configs'])}")
        built["failure-discovery"] = target
        ledger.save()
        _done(t0)

    from vlmrobust.evaluation.predict.spec import BackendOptions
    from vlmrobust.evaluation.suite.plan import make_plan
    from vlmrobust.evaluation.suite.results import results_table
    from vlmrobust.evaluation.suite.run import EvalOptions, run_suite
    from vlmrobust.evaluation.suite.spec import load_suite

    # each model goes through the command a user runs (`vlmrobust eval`), with its
    # predictions and its submission where the demo keeps every model's
    suite = load_suite(opts.suite)
    submissions = out / "submissions"
    for model, model_id, display_name in opts.models:
        t0 = _stage(f"vlmrobust eval --model {model} --suite {suite.name} --dataset-store "
                    f"{datasets_dir} --out {out / 'eval' / model_id}")
        plan = make_plan(suite, model, [datasets_dir], datasets=list(built))
        results = run_suite(plan, EvalOptions(
            out=out / "eval" / model_id, model_id=model_id,
            predictions_dir=out / "predictions" / model_id, submissions_dir=submissions,
            backend=BackendOptions(batch_size=opts.batch_size),
            extra_meta={"name": display_name}))
        assert results is not None  # one process: rank 0
        for line in results_table(results):
            print(f"    {line}")
        ledger.save()
        _done(t0)

    from vlmrobust.leaderboard.site.publish import build_site
    from vlmrobust.leaderboard.trust.reference_runs import record_reference_runs

    # The demo ran these models itself with the reference evaluator, so it records
    # them as a maintainer would (`vlmrobust leaderboard record-reference`): in a
    # record beside the submissions, never inside a submission folder.
    record = out / "reference-runs.yaml"
    record_reference_runs(record, submissions, [m for _, m, _ in opts.models
                                                if (submissions / m).is_dir()])
    site = out / "site"
    t0 = _stage(f"render the leaderboard -> {site}")
    # the per-row details dataset a published site links (load_dataset(DIR, "<model>--<dataset>"))
    details = out / "details"
    build_site(submissions, site, datasets=list(built.values()), reference_runs=record, details=details)
    ledger.save()
    _done(t0)

    print(f"\nDemo finished in {time.perf_counter() - started:.0f} s.")
    print(f"  datasets:    {datasets_dir}/<family>  (datasets.load_dataset(DIR, CONFIG))")
    for path in built.values():
        print(f"               {path}")
    print(f"  submissions: {submissions}/<model-id>/scores.json")
    print(f"  eval runs:   {out / 'eval'}/<model-id>/results.json  (vlmrobust eval)")
    print(f"  reference:   {record}  (the demo's runs, as a maintainer records them)")
    if demo_discover.complete(discover):
        print(f"  discover:    {discover}/records/*.jsonl (questions, answers, verdicts), "
              "metrics.json (QVR, FDR, SD, LD), run/ (the GRPO run)")
    print(f"  details:     {details}  (per-row results, one config per model--dataset)")
    print(f"  site:        {site / 'index.html'}")
    return 0
