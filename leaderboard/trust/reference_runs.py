"""The maintainers' record of reference runs: which stored predictions the
maintainers produced themselves with ``vlmrobust predict``.

The record is a versioned YAML file kept outside every submission folder
(``leaderboard/reference_runs.yaml`` by default, or ``--reference-runs FILE``)::

    version: "1"
    runs:
      - model_id: efficientnet-lite0
        dataset: imagenet-mcq
        predictions_sha256: 3f1c...   # sha256 of submissions/<id>/<dataset>/predictions.parquet

Nothing a submitter writes can put a run in it: a submission whose predictions'
metadata carries the fields a reference run writes (adapter, batch size, world
size, tool version) is still self-reported unless its (model id, dataset,
predictions sha256) is listed here. The ``reference`` badge and the reference
line's models both come from this record (:mod:`.provenance`,
:mod:`.shift_fits`). A maintainer adds runs with ``vlmrobust leaderboard
record-reference`` (:func:`record_reference_runs`) after running the models
themselves; ``vlmrobust demo`` does the same for the runs it makes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.bounded import parse_yaml_bounded, read_bytes_bounded
from vlmrobust.evaluation.model_meta import is_model_id
from vlmrobust.evaluation.submissions import PREDICTIONS_NAME, SCORES_NAME

DEFAULT_REFERENCE_RUNS = Path(__file__).parents[1] / "reference_runs.yaml"
RECORD_VERSION = "1"
_MAX_BYTES = 8 << 20
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_HOW = "see leaderboard/reference_runs.yaml for the format"


class ReferenceRecordError(VlmrobustError):
    """The reference-run record is malformed or cannot be updated."""


@dataclass(frozen=True)
class ReferenceRun:
    model_id: str
    dataset: str
    predictions_sha256: str

    def __post_init__(self) -> None:
        if not is_model_id(self.model_id):
            raise ValueError(f"model_id {self.model_id!r} is not a valid model id")
        if not self.dataset or "/" in self.dataset or self.dataset.startswith("."):
            raise ValueError(f"dataset {self.dataset!r} is not a dataset folder name")
        if not _SHA_RE.fullmatch(self.predictions_sha256):
            raise ValueError(f"predictions_sha256 {self.predictions_sha256!r} is not a "
                             "lower-case hex sha256")

    def as_record(self) -> dict[str, str]:
        return {"model_id": self.model_id, "dataset": self.dataset,
                "predictions_sha256": self.predictions_sha256}


@dataclass(frozen=True)
class ReferenceRuns:
    """The record: a set of (model id, dataset, predictions sha256).

    >>> r = ReferenceRuns("1", (ReferenceRun("m", "bench-c", "a" * 64),))
    >>> r.covers("m", "bench-c", "a" * 64), r.covers("other", "bench-c", "a" * 64)
    (True, False)
    """

    version: str
    runs: tuple[ReferenceRun, ...] = ()

    def __post_init__(self) -> None:
        keys = [(r.model_id, r.dataset) for r in self.runs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ValueError(f"(model_id, dataset) listed twice: {dup[0]}")

    def covers(self, model_id: str, dataset: str, sha256: str | None) -> bool:
        return sha256 is not None and ReferenceRun(model_id, dataset, sha256) in self.runs

    def as_record(self) -> dict[str, Any]:
        return {"version": self.version, "runs": [r.as_record() for r in self.runs]}

    def to_yaml(self) -> str:
        head = ("# The maintainers' record of reference runs (leaderboard/trust/reference_runs.py):\n"
                "# only runs listed here get the 'reference' badge and define the reference\n"
                "# line. Add runs with `vlmrobust leaderboard record-reference`.\n")
        return head + yaml.safe_dump(self.as_record(), sort_keys=False)


def _parse(path: Path, raw: Any) -> ReferenceRuns:
    if not isinstance(raw, Mapping) or "version" not in raw:
        raise ReferenceRecordError(f"{path}: needs a mapping with 'version' and 'runs'; {_HOW}")
    runs = raw.get("runs") or []
    if not isinstance(runs, list):
        raise ReferenceRecordError(f"{path}: 'runs' must be a list; {_HOW}")
    parsed = []
    for i, item in enumerate(runs):
        if not isinstance(item, Mapping) or set(item) != {"model_id", "dataset",
                                                          "predictions_sha256"}:
            raise ReferenceRecordError(f"{path}: runs[{i}] must have exactly model_id, dataset "
                                       f"and predictions_sha256; {_HOW}")
        try:
            parsed.append(ReferenceRun(str(item["model_id"]), str(item["dataset"]),
                                       str(item["predictions_sha256"])))
        except ValueError as exc:
            raise ReferenceRecordError(f"{path}: runs[{i}]: {exc}; fix the entry") from None
    try:
        return ReferenceRuns(str(raw["version"]), tuple(parsed))
    except ValueError as exc:
        raise ReferenceRecordError(f"{path}: {exc}; keep one entry per model and dataset") from None


def load_reference_runs(path: Path | str | None = None) -> ReferenceRuns:
    """The record at ``path`` (default: the packaged leaderboard/reference_runs.yaml)."""
    path = Path(path) if path is not None else DEFAULT_REFERENCE_RUNS
    if not (path.exists() or path.is_symlink()):
        raise ReferenceRecordError(f"{path}: missing; pass an existing reference-run record "
                                   "(--reference-runs FILE)")
    data = read_bytes_bounded(path, _MAX_BYTES, "reference-run record", ReferenceRecordError)
    return _parse(path, parse_yaml_bounded(data, str(path), ReferenceRecordError))


def _stored_sha256(folder: Path) -> dict[str, str]:
    """dataset -> predictions sha256 as the submission's scores.json records it,
    after checking it against the stored predictions' bytes."""
    import hashlib

    from vlmrobust.core.files.bounded import MAX_SCORES_BYTES, read_json_bounded
    from vlmrobust.evaluation.predictions.read import DEFAULT_MAX_BYTES

    scores = read_json_bounded(folder / SCORES_NAME, MAX_SCORES_BYTES, "scores.json",
                               ReferenceRecordError)
    sections = scores.get("datasets") if isinstance(scores, dict) else None
    if not isinstance(sections, dict) or not sections:
        raise ReferenceRecordError(f"{folder / SCORES_NAME}: no scored datasets to record")
    out = {}
    for key in sorted(sections):
        pred = folder / str(key) / PREDICTIONS_NAME
        if "/" in str(key) or not pred.is_file():
            raise ReferenceRecordError(f"{pred}: missing; record only complete submissions")
        data = read_bytes_bounded(pred, DEFAULT_MAX_BYTES, "predictions file",
                                  ReferenceRecordError)
        out[str(key)] = hashlib.sha256(data).hexdigest()
    return out


def record_reference_runs(record: Path | str, submissions: Path | str,
                          model_ids: Iterable[str]) -> ReferenceRuns:
    """Add every dataset of each ``submissions/<model_id>/`` to the record at
    ``record`` (created when absent; an entry of the same model and dataset is
    replaced), written atomically. A maintainer calls this only for runs they
    made themselves. Returns the new record."""
    from vlmrobust.core.files.output_guard import check_file_output

    record, model_ids = Path(record), list(model_ids)
    # never inside a dataset or a submission folder it reads
    check_file_output(record, "--record", input_dirs=[Path(submissions) / m for m in model_ids
                                                      if is_model_id(m)])
    old = (load_reference_runs(record) if record.exists() or record.is_symlink()
           else ReferenceRuns(RECORD_VERSION))
    new: dict[tuple[str, str], ReferenceRun] = {(r.model_id, r.dataset): r for r in old.runs}
    for model_id in model_ids:
        if not is_model_id(model_id):
            raise ReferenceRecordError(f"invalid model id {model_id!r}")
        folder = Path(submissions) / model_id
        if not folder.is_dir():
            raise ReferenceRecordError(f"{folder}: no such submission folder")
        for dataset, sha in _stored_sha256(folder).items():
            new[(model_id, dataset)] = ReferenceRun(model_id, dataset, sha)
    runs = ReferenceRuns(old.version, tuple(new[k] for k in sorted(new)))
    write_text_atomic(record, runs.to_yaml())
    return runs
