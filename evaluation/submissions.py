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
import datetime as dt
import hashlib
import io
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from vlmrobust import __version__
from vlmrobust.core.atomic import atomic_directory
from vlmrobust.core.bounded import (
    MAX_SCORES_BYTES,
    parse_json_bounded,
    read_bytes_bounded,
    read_json_bounded,
)
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.output_guard import (
    check_not_input,
    kind_of,
    lstat_or_none,
    open_lock_file,
    resolve,
)
from vlmrobust.core.public_names import publishable_meta
from vlmrobust.core.swap import carry_over, recover
from vlmrobust.core.text import check_text_fields, short_repr
from vlmrobust.core.writer import WRITE_CHECKSUMS
from vlmrobust.evaluation.predictions_meta import PARQUET_META_KEY, attach_meta
from vlmrobust.evaluation.predictions_read import DEFAULT_MAX_BYTES, TEXT_COLUMNS, PredictionsFile
from vlmrobust.evaluation.row_results import ROWS_NAME, row_results, rows_jsonl
from vlmrobust.evaluation.schemas import check_schema
from vlmrobust.evaluation.score import SCHEMA_VERSION, dumps_scores, score_report
from vlmrobust.evaluation.validate import ValidationReport, partial_note, validate

# Matched whole (re.fullmatch): "abc\n" must fail, which "^...$" with re.match lets through.
MODEL_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MODEL_FAMILIES = ("vlm", "clip", "classifier", "other")
SCORES_NAME = "scores.json"
LINK_FIELDS = ("paper_url", "code_url", "weights_url")
MAX_BIBTEX = 20_000
_LINK_RE = re.compile(r"^https?://[^\s/?#]+[^\s]*$", re.IGNORECASE)
META_NAME = "meta.yaml"
PREDICTIONS_NAME = "predictions.parquet"
# A parameter count beyond this is a typo or an attack (formatting it overflowed
# a float: issue 28.14); the largest published models have ~2e12.
MAX_PARAMS = 10 ** 15
# Text shown on pages and charts: no control characters (vlmrobust.core.text).
TEXT_FIELDS = ("name", "vision_encoder", "prompt_id", "date", "tool_version", "adapter", "bibtex")
# Folders of the submissions tree that are not models: the published JSON
# Schemas, and dataset directories shipped with the submissions (searched by
# fingerprint when the leaderboard re-scores them).
RESERVED = frozenset({"schemas", "datasets"})


def is_model_id(model_id: object) -> bool:
    r"""Whether ``model_id`` is a safe folder name (full-string match).

    >>> is_model_id("efficientnet-lite0"), is_model_id("x\n"), is_model_id("a..b")
    (True, False, False)
    """
    return (isinstance(model_id, str) and MODEL_ID_RE.fullmatch(model_id) is not None
            and ".." not in model_id and model_id not in RESERVED)


def validate_model_id(model_id: str) -> str:
    """Return ``model_id`` if it is a safe folder name, else raise SubmissionError.

    >>> validate_model_id("efficientnet-lite0")
    'efficientnet-lite0'
    >>> validate_model_id("../etc")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.SubmissionError: invalid model id '../etc': use 1-100 characters from A-Z a-z 0-9 . _ -, starting with a letter or digit, without '..'
    """
    if not is_model_id(model_id):
        raise SubmissionError(
            f"invalid model id {model_id!r}: use 1-100 characters from A-Z a-z 0-9 . _ -, "
            "starting with a letter or digit, without '..'" + (
                f" ({model_id!r} is reserved)" if model_id in RESERVED else "")
        )
    return model_id


def check_link(url: object, where: str) -> None:
    """Links in model metadata are absolute http(s) URLs: no ``javascript:`` or
    ``data:`` scheme can reach a page through them.

    >>> check_link("https://arxiv.org/abs/2103.00020", "x")
    >>> check_link("javascript:alert(1)", "paper_url")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.SubmissionError: paper_url: 'javascript:alert(1)' is not an http(s) URL; give e.g. https://arxiv.org/abs/...
    """
    if url is None:
        return
    if not isinstance(url, str) or len(url) > 2000 or not _LINK_RE.fullmatch(url) \
            or any(ord(c) < 0x20 or c in "<>\"'`" for c in url):
        raise SubmissionError(f"{where}: {url!r} is not an http(s) URL; give e.g. https://arxiv.org/abs/...")


@dataclass(frozen=True)
class ModelMeta:
    """submissions/<model-id>/meta.yaml."""

    model_id: str
    name: str
    family: str = "other"
    vision_encoder: str | None = None
    params: int | None = None
    prompt_id: str | None = None
    date: str | None = None
    tool_version: str | None = None
    adapter: str | None = None
    # Optional citation links shown on the model page (https/http only) and BibTeX.
    paper_url: str | None = None
    code_url: str | None = None
    weights_url: str | None = None
    bibtex: str | None = None
    # how a VLM was read (letter, likelihood:sum, generate, ...): its own leaderboard line
    mode: str | None = None
    # The prompt of each dataset the model answers (a model may be run with a
    # different prompt per dataset); prompt_id is their common value, if any.
    prompts: dict[str, str | None] | None = None

    def __post_init__(self) -> None:
        validate_model_id(self.model_id)
        if self.prompts is not None and (
                not isinstance(self.prompts, dict)
                or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                           for k, v in self.prompts.items())):
            raise SubmissionError(f"model {self.model_id}: prompts must map dataset names to "
                                  "prompt ids")
        for key in LINK_FIELDS:
            check_link(getattr(self, key), f"model {self.model_id}: {key}")
        if self.bibtex is not None and (not isinstance(self.bibtex, str) or len(self.bibtex) > MAX_BIBTEX):
            raise SubmissionError(f"model {self.model_id}: bibtex must be text of at most {MAX_BIBTEX} characters")
        if not self.name:
            raise SubmissionError(f"model {self.model_id}: name must not be empty")
        if self.family not in MODEL_FAMILIES:
            raise SubmissionError(
                f"model {self.model_id}: family {self.family!r} is not one of {', '.join(MODEL_FAMILIES)}")
        if self.params is not None and (isinstance(self.params, bool) or not isinstance(self.params, int)
                                        or not 0 <= self.params <= MAX_PARAMS):
            shown = short_repr(self.params)
            raise SubmissionError(
                f"model {self.model_id}: params must be an integer count from 0 to {MAX_PARAMS:.0e} "
                f"(the largest models have ~2e12), got {shown}")
        for key in TEXT_FIELDS:
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise SubmissionError(f"model {self.model_id}: {key} must be text, got "
                                      f"{type(value).__name__}")
        check_text_fields({k: getattr(self, k) for k in TEXT_FIELDS}, f"model {self.model_id}",
                          SubmissionError, multiline=("bibtex",))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


def _params(v: Any, source: str) -> int | None:
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    try:
        f = float(str(v).replace("_", ""))
    except ValueError:
        raise SubmissionError(f"{source}: params {v!r} is not a number (give a parameter count such as 5300000)") from None
    if not f.is_integer() or f < 0:
        raise SubmissionError(f"{source}: params {v!r} is not a non-negative integer count")
    return int(f)


def model_meta_from(model_id: str, prediction_meta: Mapping[str, Any] | None,
                    overrides: Mapping[str, Any] | None = None) -> ModelMeta:
    """Model metadata from the predictions' metadata, overridden by non-None
    ``overrides`` (e.g. command-line flags or a --meta file). A local path in the
    predictions' model name or vision encoder is replaced by its folder name and
    a hash (:mod:`vlmrobust.core.public_names`); only an explicit name is kept as given."""
    pm = publishable_meta(prediction_meta or {})
    merged: dict[str, Any] = {
        "name": pm.get("name") or pm.get("model"),
        "family": pm.get("family"),
        "vision_encoder": pm.get("vision_encoder"),
        "params": pm.get("params"),
        "prompt_id": pm.get("prompt_id"),
        "date": pm.get("date"),
        "tool_version": pm.get("tool_version"),
        "adapter": pm.get("adapter") or pm.get("model"),
        "mode": pm.get("mode"),
        **{k: pm.get(k) for k in (*LINK_FIELDS, "bibtex")},
    }
    merged.update({k: v for k, v in (overrides or {}).items() if v is not None and k != "model_id"})
    return ModelMeta(
        model_id=model_id,
        name=str(merged["name"] or model_id),
        family=str(merged["family"] or "other"),
        vision_encoder=_str_or_none(merged["vision_encoder"]),
        params=_params(merged["params"], "model metadata"),
        prompt_id=_str_or_none(merged["prompt_id"]),
        date=_str_or_none(merged["date"]) or dt.datetime.now(dt.timezone.utc).date().isoformat(),
        tool_version=_str_or_none(merged["tool_version"]) or __version__,
        adapter=_str_or_none(merged["adapter"]),
        mode=_str_or_none(merged["mode"]),
        paper_url=_str_or_none(merged["paper_url"]),
        code_url=_str_or_none(merged["code_url"]),
        weights_url=_str_or_none(merged["weights_url"]),
        bibtex=_str_or_none(merged["bibtex"]),
    )


def _old_meta(path: Path) -> dict[str, Any] | None:
    if not (path.exists() or path.is_symlink()):
        return None
    from vlmrobust.core.bounded import MAX_META_BYTES, parse_yaml_bounded

    data = parse_yaml_bounded(read_bytes_bounded(path, MAX_META_BYTES, "meta.yaml", SubmissionError),
                              str(path), SubmissionError)
    if not isinstance(data, dict):
        raise SubmissionError(f"{path}: expected a mapping of model fields; fix or remove it")
    return data


def merge_model_meta(model_id: str, old: Mapping[str, Any] | None, dataset: str,
                     prediction_meta: Mapping[str, Any] | None,
                     overrides: Mapping[str, Any] | None = None, where: str = META_NAME,
                     ) -> ModelMeta:
    """The model's metadata after submitting ``dataset``. The first submit sets
    every field; later ones keep them (the first name wins unless ``overrides``
    gives one; an override replaces any field), fill fields still empty, and set
    this dataset's prompt in ``prompts`` only. A family or adapter other than
    the stored one is refused: those predictions come from another model."""
    ov = {k: v for k, v in (overrides or {}).items() if v is not None and k != "model_id"}
    new = model_meta_from(model_id, prediction_meta, ov)
    pm = prediction_meta or {}
    prompt = ov.get("prompt_id", pm.get("prompt_id"))
    if old is None:
        prompts = {dataset: _str_or_none(prompt)}
        return ModelMeta(**{**new.to_dict(), "prompts": prompts})
    stated_family = ov.get("family") or pm.get("family")
    if stated_family is not None and old.get("family") is not None \
            and str(stated_family) != str(old["family"]):
        raise SubmissionError(
            f"{where}: family is {old['family']!r}, these predictions are {stated_family!r}; "
            "submit them under their own --model-id")
    if new.adapter is not None and old.get("adapter") is not None and new.adapter != old["adapter"]:
        raise SubmissionError(
            f"{where}: adapter is {old['adapter']!r}, these predictions come from "
            f"{new.adapter!r}; submit them under their own --model-id")
    merged = new.to_dict()
    for key, value in old.items():
        if key in merged and key not in ("model_id", "prompts", "prompt_id") \
                and key not in ov and value is not None:
            merged[key] = value
    old_prompts = old.get("prompts")
    prompts = dict(old_prompts) if isinstance(old_prompts, dict) else {}
    prompts[dataset] = _str_or_none(prompt)
    merged["prompts"] = prompts
    values = set(prompts.values())
    merged["prompt_id"] = values.pop() if len(values) == 1 else None
    merged["params"] = _params(merged["params"], str(where))
    return ModelMeta(**merged)


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


def predictions_parquet_bytes(pf: PredictionsFile, meta: Mapping[str, Any]) -> bytes:
    """The stored form of any valid predictions: parquet with the metadata embedded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, Any] = {"id": pa.array(pf.ids.tolist(), pa.string())}
    if pf.has_logits:
        assert pf.logits_flat is not None
        cols["logits"] = pa.ListArray.from_arrays(pa.array(pf.offsets.astype("int64"), pa.int64()),
                                                  pa.array(pf.logits_flat, pa.float64())
                                                  ).cast(pa.list_(pa.float64()))
    if pf.prediction is not None and not pf.has_logits:
        cols["prediction"] = pa.array([None if v != v else int(v) for v in pf.prediction.tolist()],
                                      pa.int64())
    for name in TEXT_COLUMNS:  # the audit trail travels with the stored file
        values = getattr(pf, name)
        if values is not None:
            cols[name] = pa.array(values.tolist(), pa.string())
    buf = io.BytesIO()
    pq.write_table(attach_meta(pa.table(cols), meta), buf, compression="zstd", **WRITE_CHECKSUMS)
    return buf.getvalue()


@contextlib.contextmanager
def submission_lock(submissions_dir: Path, model_id: str) -> Iterator[None]:
    """One writer per model folder (others wait); a swap cut short by a kill is
    undone first (vlmrobust.core.swap.recover: the old folder is put back)."""
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


def _check_same_model(root: Path, report: ValidationReport, dataset_name: str) -> None:
    """A model folder holds predictions of one model: refuse another model's
    predictions under an existing id (misattribution)."""
    import pyarrow.parquet as pq

    assert report.meta is not None
    new_model = report.meta["model"]
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
    report = validate(dataset_dir, predictions)
    assert report.meta is not None
    if report.partial is not None:
        raise SubmissionError(f"{predictions}: {partial_note(report.partial)}; run predict "
                              "again without --limit to submit")
    claimed = report.meta.get("model_id")
    if claimed is not None and claimed != model_id:
        raise SubmissionError(
            f"{predictions}: its metadata names model_id {claimed!r}, not {model_id!r}; "
            "submit under the id the predictions were made for")
    dataset_name = report.index.name
    if not dataset_name or dataset_name.startswith(".") or "/" in dataset_name \
            or dataset_name in (SCORES_NAME, META_NAME):
        raise SubmissionError(f"{dataset_dir}/manifest.json: dataset name {dataset_name!r} is not a folder name")
    if report.file.format == "parquet" and report.file.embedded_meta is not None:
        stored = read_bytes_bounded(predictions, DEFAULT_MAX_BYTES, "predictions file",
                                    SubmissionError)
        if hashlib.sha256(stored).hexdigest() != report.sha256:
            raise SubmissionError(f"{predictions} changed while it was being submitted; submit again")
    else:
        stored = predictions_parquet_bytes(report.file, report.meta)
    new = score_report(report, model_id)
    rows_text = rows_jsonl(row_results(report))
    new["datasets"][dataset_name]["predictions_sha256"] = hashlib.sha256(stored).hexdigest()
    with submission_lock(submissions_dir, model_id):
        check_submission_target(submissions_dir, model_id, Path(dataset_dir), predictions)
        _check_same_model(root, report, dataset_name)
        scores = read_scores(root / SCORES_NAME, model_id)
        model_meta = merge_model_meta(model_id, _old_meta(root / META_NAME), dataset_name,
                                      report.meta, meta, str(root / META_NAME))
        scores["model_id"] = model_id
        scores["datasets"].update(new["datasets"])
        with atomic_directory(root) as tmp:
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


def _fsync_tree(folder: Path) -> None:
    """Flush the new files before the swap makes them the submission."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
