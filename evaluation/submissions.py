"""The ``submissions/`` folder: one folder per model, scored per dataset::

    submissions/<model-id>/meta.yaml                      model metadata (ModelMeta)
    submissions/<model-id>/<dataset>/predictions.parquet  the predictions, their metadata embedded
    submissions/<model-id>/<dataset>/rows.jsonl           per-row results (evaluation.row_results)
    submissions/<model-id>/scores.json                    every dataset's scores + predictions sha256

:func:`add_submission` validates and scores before touching the folder, then
assembles the model's whole new folder beside the old one and swaps it in with
one rename, under a per-model lock: a kill at any point leaves either the old
or the new submission, never a mix, and concurrent submits to one model cannot
lose each other's datasets.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.atomic import atomic_directory
from vlmrobust.core.files.bounded import (
    MAX_SCORES_BYTES,
    parse_json_bounded,
    read_bytes_bounded,
    read_json_bounded,
)
from vlmrobust.core.files.output_guard import (
    check_not_input,
    kind_of,
    lstat_or_none,
    open_lock_file,
    resolve,
)
from vlmrobust.core.files.swap import carry_over, keep_all, recover
from vlmrobust.evaluation.model_meta import (
    META_NAME,
    merge_model_meta,
    read_old_meta,
    validate_model_id,
)
from vlmrobust.evaluation.predictions.meta import PARQUET_META_KEY
from vlmrobust.evaluation.predictions.read import DEFAULT_MAX_BYTES
from vlmrobust.evaluation.predictions.stored import predictions_parquet_bytes
from vlmrobust.evaluation.schemas import check_schema
from vlmrobust.evaluation.scoring.dataset import SCHEMA_VERSION, dumps_scores
from vlmrobust.evaluation.scoring.registration import ScoreOptions, scorer_for
from vlmrobust.evaluation.scoring.rows.results import ROWS_NAME, rows_jsonl
from vlmrobust.evaluation.validate.check import partial_note
from vlmrobust.evaluation.validate.registration import dataset_kind_of, validator_for

__all__ = ["predictions_parquet_bytes"]  # kept here for its callers (now predictions/stored.py)

SCORES_NAME = "scores.json"
PREDICTIONS_NAME = "predictions.parquet"


def read_scores(path: Path, model_id: str) -> dict[str, Any]:
    """An existing scores.json to merge into (a fresh one if absent)."""
    if not (path.exists() or path.is_symlink()):
        return {"schema_version": SCHEMA_VERSION, "model_id": model_id, "datasets": {}}
    data = read_json_bounded(path, MAX_SCORES_BYTES, "scores file", SubmissionError)
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION \
            or not isinstance(data.get("datasets"), dict):
        raise SubmissionError(
            f"{path}: not a schema_version {SCHEMA_VERSION} scores file; remove it to re-score from scratch")
    check_schema(data, "scores", str(path))
    return data


@contextlib.contextmanager
def submission_lock(submissions_dir: Path, model_id: str) -> Iterator[None]:
    """One writer per model folder (others wait); a swap cut short by a kill is
    undone first (vlmrobust.core.files.swap.recover: the old folder is put back)."""
    import fcntl

    submissions_dir.mkdir(parents=True, exist_ok=True)
    fd = open_lock_file(submissions_dir / f".{model_id}.lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        recover(submissions_dir / model_id)
        yield
    finally:
        os.close(fd)


def _is_submission_folder(root: Path) -> bool:
    """An empty folder, or one that a submit wrote (its meta.yaml or scores.json)."""
    names = {e.name for e in os.scandir(root)}
    return not names or any((root / n).is_file() and not (root / n).is_symlink()
                            for n in (META_NAME, SCORES_NAME))


def check_submission_target(submissions_dir: Path, model_id: str, dataset_dir: Path,
                            predictions: Path) -> None:
    """Where a submit may write: ``--submissions`` is (or will be) a folder outside
    the dataset and every dataset, and ``<model-id>`` is absent or a submission
    folder, never a file, a link, a FIFO, a device node or someone else's folder;
    the dataset does not lie inside the folder the submit replaces."""
    st = lstat_or_none(submissions_dir, "--submissions")
    if st is not None and not submissions_dir.is_dir():
        raise SubmissionError(f"--submissions {submissions_dir} is {kind_of(st.st_mode)}, "
                              "not a folder; pass the submissions folder")
    resolve(submissions_dir, "--submissions")
    check_not_input(submissions_dir, "--submissions", [predictions], [dataset_dir])
    root = submissions_dir / model_id
    st = lstat_or_none(root, "--model-id")
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise SubmissionError(f"{root} is {kind_of(st.st_mode)}, not a submission folder; "
                              "vlmrobust never replaces it: choose another --model-id")
    if not _is_submission_folder(root):
        raise SubmissionError(f"{root} exists and is not a submission folder (no {META_NAME} or "
                              f"{SCORES_NAME}); choose another --model-id or move it away")
    if resolve(dataset_dir, "--dataset").is_relative_to(resolve(root, "--model-id")):
        raise SubmissionError(f"--dataset {dataset_dir} lies inside the submission folder {root} "
                              "that this submit replaces; move it out first")


def _check_same_model(root: Path, new_model: Any, dataset_name: str) -> None:
    """A model folder holds predictions of one model: refuse another model's
    predictions under an existing id (misattribution)."""
    import pyarrow.parquet as pq

    if not root.is_dir():
        return
    for child in sorted(root.iterdir()):
        pred = child / PREDICTIONS_NAME
        if child.name == dataset_name or child.name.startswith(".") or not pred.is_file():
            continue
        try:
            raw = (pq.read_schema(pred).metadata or {}).get(PARQUET_META_KEY)
            old_model = parse_json_bounded(raw, str(pred), SubmissionError).get("model") if raw else None
        except Exception:  # an unreadable old file is the leaderboard's to refuse
            continue
        if old_model is not None and old_model != new_model:
            raise SubmissionError(
                f"{root} holds predictions of model {old_model!r} ({child.name}); these are of "
                f"{new_model!r}: submit them under their own --model-id")


def add_submission(submissions_dir: Path | str, model_id: str, dataset_dir: Path | str,
                   predictions: Path | str, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate and score ``predictions`` on ``dataset_dir``, then store them in
    ``submissions_dir/<model_id>/<dataset>/``, merge the dataset's section into
    ``<model_id>/scores.json`` and (re)write ``<model_id>/meta.yaml``, all in one
    swap. Returns the merged scores. ``meta`` overrides model fields of the
    predictions' metadata. On any problem raises SubmissionError and changes nothing."""
    model_id = validate_model_id(model_id)
    predictions = Path(predictions)
    submissions_dir = Path(submissions_dir)
    root = submissions_dir / model_id
    check_submission_target(submissions_dir, model_id, Path(dataset_dir), predictions)
    p_meta, dataset_name, stored, new, rows_text = _prepare(Path(dataset_dir), predictions,
                                                            model_id)
    with submission_lock(submissions_dir, model_id):
        check_submission_target(submissions_dir, model_id, Path(dataset_dir), predictions)
        _check_same_model(root, p_meta["model"], dataset_name)
        scores = read_scores(root / SCORES_NAME, model_id)
        model_meta = merge_model_meta(model_id, read_old_meta(root / META_NAME), dataset_name,
                                      p_meta, meta, str(root / META_NAME))
        scores["model_id"] = model_id
        scores["datasets"].update(new["datasets"])
        with atomic_directory(root, carry=keep_all) as tmp:
            (tmp / dataset_name).mkdir()
            (tmp / dataset_name / PREDICTIONS_NAME).write_bytes(stored)
            (tmp / dataset_name / ROWS_NAME).write_text(rows_text, encoding="utf-8")
            (tmp / SCORES_NAME).write_text(dumps_scores(scores), encoding="utf-8")
            (tmp / META_NAME).write_text(yaml.safe_dump(model_meta.to_dict(), sort_keys=False),
                                         encoding="utf-8")
            _fsync_tree(tmp)
            if root.is_dir():
                # after the new files, which win: every other entry stays, hidden
                # files, links and FIFOs included (as hard links: the same inodes)
                carry_over(root, tmp)
    return scores


def check_dataset_name(dataset_dir: Path, dataset_name: str) -> None:
    if not dataset_name or dataset_name.startswith(".") or "/" in dataset_name \
            or dataset_name in (SCORES_NAME, META_NAME):
        raise SubmissionError(f"{dataset_dir}/manifest.json: dataset name {dataset_name!r} is not a folder name")


def check_submittable(dataset_dir: Path, predictions: Path, meta: Mapping[str, Any],
                      partial: Any, dataset_name: str, model_id: str) -> None:
    """What ``submit`` asks of validated predictions of any kind: a complete run,
    made for ``model_id``, of a dataset whose name can be a folder."""
    if partial is not None:
        raise SubmissionError(f"{predictions}: {partial_note(partial)}; run predict "
                              "again without --limit to submit")
    claimed = meta.get("model_id")
    if claimed is not None and claimed != model_id:
        raise SubmissionError(
            f"{predictions}: its metadata names model_id {claimed!r}, not {model_id!r}; "
            "submit under the id the predictions were made for")
    check_dataset_name(dataset_dir, dataset_name)


def _prepare(dataset_dir: Path, predictions: Path, model_id: str,
             ) -> tuple[Mapping[str, Any], str, bytes, dict[str, Any], str]:
    """(predictions metadata, dataset name, stored bytes, scores, rows JSONL) of
    validated, complete predictions, by the dataset kind's validator and scorer
    (vlmrobust.core.kinds)."""
    kind = dataset_kind_of(dataset_dir)
    report = validator_for(kind)(dataset_dir, predictions, None, None)
    assert report.meta is not None
    dataset_name = report.dataset_name
    check_submittable(dataset_dir, predictions, report.meta, report.partial, dataset_name, model_id)
    scorer = scorer_for(kind)
    stored = (scorer.stored(report, predictions) if scorer.stored is not None
              else read_bytes_bounded(predictions, DEFAULT_MAX_BYTES, "predictions file",
                                      SubmissionError))
    opts = ScoreOptions()
    new = scorer.scores(report, model_id, opts)
    rows_text = rows_jsonl(scorer.rows(report, opts))
    new["datasets"][dataset_name]["predictions_sha256"] = hashlib.sha256(stored).hexdigest()
    return report.meta, dataset_name, stored, new, rows_text


def _fsync_tree(folder: Path) -> None:
    """Flush the new files before the swap makes them the submission."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
