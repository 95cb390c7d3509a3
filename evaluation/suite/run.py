"""``vlmrobust eval``: one model through every dataset of a suite, by the same
functions the chained commands call (``predict_dataset``, ``add_submission``,
``score``), so its numbers are theirs. Leaves in ``--out``::

    predictions/<dataset>/predictions.parquet   predict's file (its journal resumes a kill)
    predictions/<dataset>/timing.json           how long predict took (results.json's timing)
    submissions/<model-id>/                     meta.yaml, scores.json, <dataset>/predictions.parquet
                                                and rows.jsonl: the folder a pull request adds
    scores/<dataset>.json (+ .rows.jsonl)       instead of a submission, on a --limit run (partial)
    results.json                                the run (evaluation/suite/results.py)

A rerun after a kill redoes only what is missing: finished predictions are kept
(checked to be of this model, build, configs and limit), a predict cut short
resumes its journal, and a dataset already in the submission with these
predictions' sha256 is not scored again.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import UnsupportedReaderError, VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.bounded import MAX_SCORES_BYTES, read_json_bounded
from vlmrobust.core.fingerprint import file_sha256
from vlmrobust.evaluation.predict.distributed import init_distributed
from vlmrobust.evaluation.predict.spec import BackendOptions
from vlmrobust.evaluation.scoring.common import DEFAULT_SEED
from vlmrobust.evaluation.suite.plan import Plan, PlanEntry
from vlmrobust.evaluation.suite.results import (
    RESULTS_NAME,
    RESULTS_VERSION,
    git_revision,
    headlines,
    package_versions,
)
from vlmrobust.models.readers.base import ReadOptions

PREDICTIONS_DIR = "predictions"
SUBMISSIONS_DIR = "submissions"
SCORES_DIR = "scores"
TIMING_NAME = "timing.json"


@dataclass(frozen=True)
class EvalOptions:
    """How the model runs and where the run goes (the CLI's defaults live here)."""

    out: Path
    model_id: str
    # where predictions and the submission go (default: OUT/predictions, OUT/submissions);
    # the demo keeps every model's submission in one folder for the leaderboard
    predictions_dir: Path | None = None
    submissions_dir: Path | None = None
    name: str | None = None
    limit: int | None = None
    backend: BackendOptions = field(default_factory=BackendOptions)
    # reaches the datasets whose reader generates (a suite mixes letter and generate)
    read_options: ReadOptions | None = None
    progress: bool = True
    extra_meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def predictions(self) -> Path:
        return self.predictions_dir or self.out / PREDICTIONS_DIR

    @property
    def submissions(self) -> Path:
        return self.submissions_dir or self.out / SUBMISSIONS_DIR

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise VlmrobustError(f"--limit must be >= 1, got {self.limit}")
        if not isinstance(self.backend, BackendOptions):
            raise VlmrobustError(f"backend {self.backend!r}: give a BackendOptions")


def default_model_id(model: str) -> str:
    """A submission folder name from a model name: the part after the family,
    a local path reduced to its folder name, other characters as '-'.

    >>> default_model_id("classifier:efficientnet-lite0"), default_model_id("vlm:Qwen/Qwen2-VL-2B")
    ('efficientnet-lite0', 'Qwen-Qwen2-VL-2B')
    >>> default_model_id("vlm:/models/my tiny vlm/")
    'my-tiny-vlm'
    """
    from vlmrobust.core.text.public_names import looks_like_path

    target = model.partition(":")[2] or model
    if looks_like_path(target):
        target = Path(target).name or target
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", target).strip("-.")
    return re.sub(r"\.\.+", ".", out)[:100] or "model"



def _check_kept(pred: Path, plan: Plan, e: PlanEntry, limit: int | None) -> dict[str, Any]:
    """The metadata of finished predictions a rerun keeps, refused in one line when
    they are of another model, build, config list, limit or reader."""
    from vlmrobust.core.text.public_names import public_name
    from vlmrobust.evaluation.predict.dataset import is_local_path
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    meta = read_prediction_meta(pred)
    public, paths = public_name(plan.model, None, is_local_path)
    stored = str(meta.get("adapter"))
    # a local checkpoint is named <folder>@<content hash> in the metadata
    adapter = stored if paths and stored.partition("@")[0] == public.partition("@")[0] \
        else plan.model
    want = {"adapter": adapter, "fingerprint": e.fingerprint, "configs": list(e.configs),
            "limit": limit}
    have = {"adapter": meta.get("adapter"), "fingerprint": (meta.get("dataset") or {}).get(
        "fingerprint"), "configs": meta.get("configs"), "limit": meta.get("limit")}
    if e.reader.mode is not None:
        want["mode"], have["mode"] = e.reader.mode, meta.get("mode")
    # a file that `vlmrobust.write_predictions` wrote (not predict) names no adapter or
    # configs; the build's fingerprint and the limit are always compared
    bad = [k for k in want if want[k] != have[k]
           and (have[k] is not None or k in ("fingerprint", "limit"))]
    if bad:
        raise VlmrobustError(f"{pred}: predictions of another run ({bad[0]} {have[bad[0]]!r}, "
                             f"this run: {want[bad[0]]!r}); pass another --out or remove "
                             f"{pred.parent}")
    return meta


def _read_options(plan: Plan, e: PlanEntry, opts: EvalOptions) -> ReadOptions | None:
    """--max-new-tokens, --stop, --answer-cue reach the datasets whose reader
    generates (a suite mixes letter and generate entries)."""
    if opts.read_options is None or plan.family not in ("vlm", "endpoint"):
        return None
    from vlmrobust.models.readers import parse_mode

    return opts.read_options if parse_mode(e.reader.mode).decides else None


def _predict(plan: Plan, e: PlanEntry, opts: EvalOptions) -> tuple[Path, float | None]:
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predict.spec import ReaderOptions, RunSpec

    assert e.path is not None  # a runnable entry was found on disk
    pred = opts.predictions / e.name / "predictions.parquet"
    timing = pred.parent / TIMING_NAME
    if not pred.is_file():
        t0 = time.perf_counter()
        predict_dataset(RunSpec(
            plan.model, e.path, pred, configs=tuple(e.configs), limit=opts.limit,
            name=opts.name, progress=opts.progress, backend=opts.backend,
            reader=ReaderOptions(prompt=e.reader.prompt, mode=e.reader.mode,
                                 read_options=_read_options(plan, e, opts),
                                 class_order=e.reader.class_order)))
        if not _is_main():
            return pred, None
        write_text_atomic(timing, json.dumps({"predict_s": round(time.perf_counter() - t0, 3)}))
    recorded = read_json_bounded(timing, 4096, "timing file") if timing.is_file() else {}
    seconds = recorded.get("predict_s") if isinstance(recorded, dict) else None
    return pred, seconds if isinstance(seconds, (int, float)) else None


def _section(scores_file: Path, name: str, sha: str) -> dict[str, Any] | None:
    """The dataset's section of an existing scores.json when it scored exactly
    these predictions (a rerun's shortcut), else None."""
    if not scores_file.is_file():
        return None
    data = read_json_bounded(scores_file, MAX_SCORES_BYTES, "scores file")
    section = (data.get("datasets") or {}).get(name) if isinstance(data, dict) else None
    if isinstance(section, dict) and section.get("predictions_sha256") == sha:
        return section
    return None


def _score(plan: Plan, e: PlanEntry, pred: Path, opts: EvalOptions) -> dict[str, Any]:
    """Validate and score ``pred``: into the submission folder (add_submission,
    as ``submit``), or, on a --limit run, into scores/<dataset>.json (as
    ``score``, which marks it partial; ``submit`` refuses partial runs)."""
    assert e.path is not None
    sha = file_sha256(pred)
    if opts.limit is None:
        from vlmrobust.evaluation.submissions import SCORES_NAME, add_submission

        root = opts.submissions
        found = _section(root / opts.model_id / SCORES_NAME, e.name, sha)
        if found is not None:
            return found
        merged = add_submission(root, opts.model_id, e.path, pred, meta=dict(opts.extra_meta))
        return dict(merged["datasets"][e.name])
    from vlmrobust.evaluation.scoring.dataset import score

    target = opts.out / SCORES_DIR / f"{e.name}.json"
    found = _section(target, e.name, sha)
    if found is not None:
        return found
    target.parent.mkdir(parents=True, exist_ok=True)
    return dict(score(e.path, pred, target, model_id=opts.model_id)["datasets"][e.name])


def _is_main() -> bool:
    """Rank 0 under torchrun (every rank predicts; only rank 0 scores and writes)."""
    return os.environ.get("RANK", "0") == "0"


def _entry(plan: Plan, e: PlanEntry, opts: EvalOptions, pred: Path,
           predict_s: float | None) -> dict[str, Any]:
    """Check and score one dataset's predictions: its record in results.json."""
    meta = _check_kept(pred, plan, e, opts.limit)
    t1 = time.perf_counter()
    section = _score(plan, e, pred, opts)
    return {
        "dataset": e.name, "status": "done", "source": e.dataset.where(), "path": str(e.path),
        "version": e.version, "fingerprint": e.fingerprint, "configs": list(e.configs),
        "rows": e.rows_run(opts.limit),
        "reader": {"mode": meta.get("mode"), "prompt": meta.get("prompt_id"),
                   "backend": meta.get("backend"), "class_order": e.reader.class_order},
        "predictions": _shown(pred, opts.out),
        "predictions_sha256": section.get("predictions_sha256"),
        "partial": section.get("partial"),
        "headlines": headlines(section),
        "timing": {"predict_s": predict_s, "score_s": round(time.perf_counter() - t1, 3)},
    }


def _shown(path: Path, out: Path) -> str:
    """A path as results.json records it: relative to --out when inside it."""
    return str(path.relative_to(out)) if path.is_relative_to(out) else str(path)


def _backend_record(opts: EvalOptions) -> dict[str, Any]:
    b = opts.backend
    endpoint = {k: str(v) if isinstance(v, Path) else v for k, v in (b.endpoint or {}).items()}
    return {"device": b.device, "device_map": b.device_map, "batch_size": b.batch_size,
            "threads": b.threads, "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "endpoint": endpoint or None,
            "read_options": None if opts.read_options is None else opts.read_options.record()}


def run_suite(plan: Plan, opts: EvalOptions) -> dict[str, Any] | None:
    """Run every runnable entry of ``plan``, then write ``results.json``; returns
    the results (None on a torchrun rank other than 0, which only predicts)."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    date = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    opts.out.mkdir(parents=True, exist_ok=True)
    runnable = plan.runnable
    bar = tqdm(total=sum(e.rows_run(opts.limit) for e in runnable), unit="row",
               desc=f"eval {plan.suite.name}", disable=not (opts.progress and _is_main()),
               dynamic_ncols=True)
    # every dataset is predicted first, then rank 0 scores them all: the other ranks
    # are done once the last predict has merged
    predicted: dict[str, tuple[Path, float | None]] = {}
    done: dict[str, dict[str, Any]] = {}
    # one process group for the whole run, which every predict reuses (a group per
    # predict made a rank that arrived early fail to connect to a busy rank 0)
    ctx = init_distributed(opts.backend.device)
    try:
        for e in runnable:
            bar.set_postfix_str(e.name)
            try:
                predicted[e.name] = _predict(plan, e, opts)
            except UnsupportedReaderError as exc:  # e.g. a server without logprobs, for letter
                done[e.name] = {"dataset": e.name, "status": "skipped", "reason": str(exc)}
            bar.update(e.rows_run(opts.limit))
    finally:
        bar.close()
        ctx.close()
    if not _is_main():
        return None
    for e in runnable:
        if e.name in predicted:
            done[e.name] = _entry(plan, e, opts, *predicted[e.name])
    entries = [done.get(e.name) or {"dataset": e.name, "status": "skipped", "reason": e.skip}
               for e in plan.entries]
    submitted = opts.limit is None and any(r["status"] == "done" for r in done.values())
    submission = _shown(opts.submissions / opts.model_id, opts.out) if submitted else None
    results = {
        "results_version": RESULTS_VERSION,
        "suite": {"name": plan.suite.name, "version": plan.suite.version,
                  "file": str(plan.suite.path) if plan.suite.path else None},
        "model": plan.model, "model_id": opts.model_id, "family": plan.family,
        # a --limit run is a smoke run: never submitted, so partial even where a
        # config had no more rows than the limit
        "limit": opts.limit, "partial": opts.limit is not None,
        "seed": DEFAULT_SEED, "backend": _backend_record(opts),
        "submission": submission,
        "packages": package_versions(),
        "git_revision": git_revision(Path(__file__).resolve().parent),
        "entries": entries,
        "timing": {"started": date, "this_run_s": round(time.perf_counter() - started, 3)},
    }
    write_text_atomic(opts.out / RESULTS_NAME,
                      json.dumps(results, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return results
