"""The run records behind a failure-discovery source: what settings the
questions were found with, as the card and the manifest state them.

A records file ``R/<name>.jsonl`` has a run record when

- ``R/<name>.run.json`` lies beside it: a copy of the ``discover_run.json`` of
  the ``discover train`` run whose questioner asked its questions (``discover
  sample --questioner RUN`` reads that folder; copy ``RUN/discover_run.json``
  next to the records it wrote), or
- it is a train run's journal read in place (``journal.jsonl`` with
  ``discover_run.json`` in the same folder).

Anything else has none, and the card says so: it never prints the defaults of
``discover train`` as if a run had used them. The record's settings are read
field by field (schema ``vlmrobust.discover.run/1``, evaluation/discover/
train.py); a field the record lacks is "not recorded", a field of the wrong
type is refused in one line naming the file and the field.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import MIB, read_bytes_bounded

RUN_RECORD = "discover_run.json"
RUN_SCHEMA = "vlmrobust.discover.run/1"
SIDECAR_SUFFIX = ".run.json"
JOURNAL = "journal.jsonl"
MAX_RUN_BYTES = 16 * MIB  # settings, GRPO scalars and a per-step curve of small dicts

_NUM = "number"
_INT = "integer"
_STR = "string"
_BOOL = "boolean"
# (key in the kept settings, path in discover_run.json, type); the GRPOConfig
# values TRL saw win over the TrainConfig that asked for them
FIELDS: tuple[tuple[str, tuple[tuple[str, ...], ...], str], ...] = (
    ("questioner", (("settings", "questioner"),), _STR),
    ("answerer", (("settings", "answerer"),), _STR),
    ("verifier", (("settings", "verifier"),), _STR),
    ("embedder", (("settings", "embedder"),), _STR),
    ("k", (("settings", "train", "reward", "k"),), _INT),
    ("prefix_len", (("settings", "train", "reward", "prefix_len"),), _INT),
    ("lambda_scale", (("settings", "train", "reward", "lambda_scale"),), _NUM),
    ("lambda_penalty", (("settings", "train", "reward", "lambda_penalty"),), _NUM),
    ("use_emb", (("settings", "train", "reward", "use_emb"),), _BOOL),
    ("use_ifreq", (("settings", "train", "reward", "use_ifreq"),), _BOOL),
    ("empty_bank_emb", (("settings", "train", "reward", "empty_bank_emb"),), _NUM),
    ("aggregate", (("settings", "train", "reward", "aggregate"),), _STR),
    ("bank", (("settings", "train", "reward", "bank"),), _STR),
    ("steps", (("grpo", "max_steps"), ("settings", "train", "steps")), _INT),
    ("group_size", (("grpo", "num_generations"), ("settings", "train", "group_size")), _INT),
    ("images_per_step", (("settings", "train", "images_per_step"),), _INT),
    ("learning_rate", (("grpo", "learning_rate"), ("settings", "train", "learning_rate")),
     _NUM),
    ("lr_scheduler", (("grpo", "lr_scheduler_type"), ("settings", "train", "lr_scheduler")),
     _STR),
    ("beta", (("grpo", "beta"), ("settings", "train", "beta")), _NUM),
    ("epsilon", (("grpo", "epsilon"), ("settings", "train", "epsilon")), _NUM),
    ("loss_type", (("grpo", "loss_type"), ("settings", "train", "loss_type")), _STR),
    ("scale_rewards", (("grpo", "scale_rewards"), ("settings", "train", "scale_rewards")),
     _STR),
    ("max_completion_length", (("grpo", "max_completion_length"),
                               ("settings", "train", "max_completion_length")), _INT),
    ("temperature", (("grpo", "temperature"), ("settings", "train", "temperature")), _NUM),
    ("seed", (("settings", "train", "seed"),), _INT),
    ("dtype", (("settings", "train", "dtype"),), _STR),
    ("lora", (("settings", "train", "lora"),), _BOOL),
    ("use_vllm", (("settings", "train", "use_vllm"),), _BOOL),
    ("status", (("status",),), _STR),
    # seed 004 Eq. 1 or how the run departs from it (train.objective)
    ("objective", (("objective",),), _STR),
    ("torch_threads", (("torch_threads",),), _INT),
    ("steps_done", (("steps_done",),), _INT),
)
# the prompts a run used: kept whole in the manifest, named by hash in the card
PROMPTS = (("questioner_prompt", ("settings", "prompt")),
           ("answerer_prompt", ("settings", "answerer_prompt")),
           ("verifier_prompt", ("settings", "verifier_prompt")))
MAX_TEXT = 20_000  # characters of one kept string


@dataclass(frozen=True)
class RunInfo:
    """One run record: where it is (relative to --source-root), its sha256,
    and the settings kept (``None``: the record does not say)."""

    path: str
    sha256: str
    settings: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"run_record": self.path, "sha256": self.sha256, "settings": dict(self.settings)}


def run_record_path(records_file: Path) -> Path | None:
    """The run record of a records file (module doc), or None."""
    stem = records_file.name[:-len(".jsonl")] if records_file.name.endswith(".jsonl") \
        else records_file.stem
    candidates = [records_file.with_name(stem + SIDECAR_SUFFIX)]
    if records_file.name == JOURNAL:
        candidates.append(records_file.with_name(RUN_RECORD))
    for c in candidates:
        if c.exists() or c.is_symlink():
            if not c.is_file():
                raise SourceError(f"{c}: the run record of {records_file.name} is not a "
                                  "readable file; fix: put a copy of the run's "
                                  f"{RUN_RECORD} there, or remove it")
            return c
    return None


def _typed(value: Any, kind: str) -> bool:
    if kind == _BOOL:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == _INT:
        return isinstance(value, int)
    if kind == _NUM:
        return isinstance(value, (int, float)) and math.isfinite(value)
    return isinstance(value, str) and len(value) <= MAX_TEXT


def _lookup(obj: Any, path: Sequence[str]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return False, None
        obj = obj[key]
    return True, obj


def read_run(path: Path, root: Path) -> RunInfo:
    """The kept settings of one run record; one SourceError naming the file and
    field on anything malformed."""
    from vlmrobust.core.files.bounded import parse_json_bounded

    data = read_bytes_bounded(path, MAX_RUN_BYTES, "run record", SourceError)
    obj = parse_json_bounded(data, str(path), SourceError)
    fix = f"fix: use the {RUN_RECORD} that `vlmrobust discover train` wrote, unedited"
    if not isinstance(obj, dict) or obj.get("schema") != RUN_SCHEMA:
        raise SourceError(f"{path}: not a run record (schema {RUN_SCHEMA!r} expected); {fix}")
    kept: dict[str, Any] = {}
    for key, paths, kind in FIELDS:
        kept[key] = None
        for p in paths:
            found, value = _lookup(obj, p)
            if not found or value is None:
                continue
            if not _typed(value, kind):
                raise SourceError(f"{path}: {'.'.join(p)} must be a {kind}, got "
                                  f"{str(value)[:60]!r}; {fix}")
            kept[key] = value
            break
    for key, p in PROMPTS:
        found, value = _lookup(obj, p)
        if found and value is not None and not _typed(value, _STR):
            raise SourceError(f"{path}: {'.'.join(p)} must be a string of at most {MAX_TEXT} "
                              f"characters; {fix}")
        kept[key] = value if found else None
    return RunInfo(path.relative_to(root).as_posix(), hashlib.sha256(data).hexdigest(), kept)


@dataclass(frozen=True)
class SourceRuns:
    """Records files grouped by the run record they share (the same bytes), and
    the records files that have none; paths relative to --source-root."""

    runs: tuple[tuple[RunInfo, tuple[str, ...]], ...]
    without: tuple[str, ...]

    def manifest(self) -> list[dict[str, Any]]:
        out = [{**run.as_dict(), "records": list(files)} for run, files in self.runs]
        out += [{"run_record": None, "records": [f]} for f in self.without]
        return out


def source_runs(files: Sequence[Path], root: Path) -> tuple[SourceRuns, list[Path]]:
    """The run records of ``files`` (and the run record paths read, for the
    source fingerprints)."""
    by_sha: dict[str, tuple[RunInfo, list[str]]] = {}
    without: list[str] = []
    read: list[Path] = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        p = run_record_path(f)
        if p is None:
            without.append(rel)
            continue
        if p not in read:
            read.append(p)
        info = read_run(p, root)
        by_sha.setdefault(info.sha256, (info, []))[1].append(rel)
    runs = tuple((info, tuple(recs)) for info, recs in by_sha.values())
    return SourceRuns(runs, tuple(without)), read
