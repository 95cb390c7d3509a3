"""Failure-discovery records: one JSON object per line, one line per question
slot (a completion of k questions gives k lines). Written by ``discover
sample`` and by ``discover train`` (its journal, which adds the reward terms);
read by ``discover evaluate`` and ``discover taxonomy``. docs/discover.md
documents every field; a reader checks each one and names the file and line
of the first bad one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import atomic_file
from vlmrobust.core.files.bounded import MIB, open_bounded, parse_json_bounded

SCHEMA = "vlmrobust.discover.record/1"
MAX_RECORDS_BYTES = 4096 * MIB
MAX_LINE_BYTES = 1 * MIB
FIX = "fix the line or regenerate the file with `vlmrobust discover sample`"
METHODS = ("rl", "zero-shot", "conme", "untrained")
_STR = str
_OPT_STR = (str, type(None))


@dataclass(frozen=True)
class DiscoveryRecord:
    """One question slot: where it came from, what was asked and answered, and
    the verifier's verdict. ``question``/``answer`` are None for a slot missing
    from a malformed completion (then ``valid`` is False)."""

    image: str
    image_sha256: str
    completion_id: str
    slot: int
    question: str | None
    answer: str | None
    valid: bool
    correct: bool
    valid_reason: str
    correct_reason: str
    verifier_parsed: bool
    method: str
    questioner: str
    answerer: str
    verifier: str
    seed: int
    step: int = 0
    skills: tuple[str, ...] = ()
    meta_skill: str | None = None
    reward: float | None = None
    delta_emb: float | None = None
    delta_ifreq: float | None = None
    schema: str = field(default=SCHEMA)

    def __post_init__(self) -> None:
        for name in ("image", "image_sha256", "completion_id", "valid_reason", "correct_reason",
                     "method", "questioner", "answerer", "verifier", "schema"):
            if not isinstance(getattr(self, name), _STR):
                raise ValueError(f"{name} must be a string")
        for name in ("question", "answer", "meta_skill"):
            if not isinstance(getattr(self, name), _OPT_STR):
                raise ValueError(f"{name} must be a string or null")
        for name in ("valid", "correct", "verifier_parsed"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false")
        for name in ("slot", "seed", "step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0")
        if self.schema != SCHEMA:
            raise ValueError(f"schema must be {SCHEMA!r}")
        if self.slot < 1:
            raise ValueError("slot is 1-based")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}")
        if self.correct and not self.valid:
            raise ValueError("correct = true needs valid = true")
        if self.question is None and self.valid:
            raise ValueError("a missing question (null) cannot be valid")
        # the writers store a missing or empty slot as null and never answer it,
        # and an unreadable verdict is V = C = false (docs/discover.md)
        if self.question is not None and not self.question.strip():
            raise ValueError("question is empty or whitespace; a missing question is null")
        if self.question is None and self.answer is not None:
            raise ValueError("answer must be null when question is null (nothing was asked)")
        if not self.verifier_parsed and (self.valid or self.correct):
            raise ValueError("verifier_parsed = false (an unreadable verdict) needs "
                             "valid = false and correct = false")
        if not isinstance(self.skills, tuple) or not all(isinstance(s, str) for s in self.skills):
            raise ValueError("skills must be a list of strings")
        for name in ("reward", "delta_emb", "delta_ifreq"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number or null")

    @property
    def identity(self) -> tuple[str, ...]:
        """What makes the slot unique (the failure-discovery builder's record
        key): the same completion's slot asked of another answerer, sampled
        with another seed or at another step is another record."""
        return (self.method, self.questioner, self.answerer, self.verifier, str(self.seed),
                str(self.step), self.completion_id, str(self.slot))

    @property
    def failure(self) -> bool:
        """V = 1 and C = 0: a discovered failure."""
        return self.valid and not self.correct

    def to_json(self) -> str:
        d = asdict(self)
        d["skills"] = list(self.skills)
        return json.dumps(d, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_mapping(cls, obj: Mapping[str, Any]) -> DiscoveryRecord:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(obj) - names)
        if unknown:
            raise ValueError(f"unknown fields {unknown}")
        d = dict(obj)
        skills = d.get("skills", [])
        if not isinstance(skills, list):
            raise ValueError("skills must be a list of strings")
        d["skills"] = tuple(skills)
        try:
            return cls(**d)
        except TypeError as exc:  # a required field is missing
            raise ValueError(str(exc).split(") ", 1)[-1]) from None


class _BadJson(VlmrobustError):
    pass


def _parse_line(raw: bytes, where: str) -> DiscoveryRecord:
    """One record from one line; every failure is a ValueError naming what is
    wrong (JSON nested past the stack included: bounded.parse_json_bounded)."""
    try:
        obj = parse_json_bounded(raw, where, error=_BadJson)
    except _BadJson as exc:
        raise ValueError(str(exc).removeprefix(f"{where}: ").split("; ")[0]) from None
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return DiscoveryRecord.from_mapping(obj)


def iter_lines(path: Path, max_bytes: int = MAX_RECORDS_BYTES,
               ) -> Iterator[tuple[int, DiscoveryRecord]]:
    """(line number, record) of a JSONL file, streamed; the first bad line
    raises one VlmrobustError naming the file, the line and what to fix."""
    with open_bounded(path, max_bytes, "records file (JSONL)") as fh:
        read = 0
        for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""),
                                     start=1):
            read += len(raw)
            where = f"{path} line {lineno}"
            if read > max_bytes:
                raise VlmrobustError(f"{path}: more than {max_bytes} bytes")
            if len(raw) > MAX_LINE_BYTES:
                raise VlmrobustError(f"{where}: longer than {MAX_LINE_BYTES} bytes; "
                                     "one record per line")
            if not raw.strip():
                continue
            try:
                rec = _parse_line(raw, where)
            except ValueError as exc:
                msg = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                raise VlmrobustError(
                    f"{where}: not a discover record ({msg}); {FIX}") from None
            yield lineno, rec


def iter_records(path: Path, max_bytes: int = MAX_RECORDS_BYTES) -> Iterator[DiscoveryRecord]:
    """The records of a JSONL file, streamed (see :func:`iter_lines`)."""
    for _, rec in iter_lines(path, max_bytes):
        yield rec


def read_many(paths: Sequence[Path], max_bytes: int = MAX_RECORDS_BYTES,
              ) -> list[DiscoveryRecord]:
    """The records of several files in order; a record given twice (the same
    :attr:`DiscoveryRecord.identity`, within a file or across files) is refused
    naming both places, since it would count one question twice."""
    seen: dict[tuple[str, ...], tuple[int, int]] = {}
    out: list[DiscoveryRecord] = []
    for i, path in enumerate(paths):
        n = len(out)
        for lineno, rec in iter_lines(path, max_bytes):
            first = seen.setdefault(rec.identity, (i, lineno))
            if first != (i, lineno):
                raise VlmrobustError(
                    f"{path} line {lineno}: the record of completion {rec.completion_id!r} "
                    f"slot {rec.slot} ({rec.method}, answerer {rec.answerer}, seed {rec.seed}, "
                    f"step {rec.step}) is already at {paths[first[0]]} line {first[1]}; it would "
                    "be counted twice; fix: give each records file once and drop the repeated "
                    "line")
            out.append(rec)
        if len(out) == n:
            raise VlmrobustError(f"{path}: no records; run `vlmrobust discover sample` first")
    return out


def read_records(path: Path, max_bytes: int = MAX_RECORDS_BYTES) -> list[DiscoveryRecord]:
    out = list(iter_records(path, max_bytes))
    if not out:
        raise VlmrobustError(f"{path}: no records; run `vlmrobust discover sample` first")
    return out


def write_records(path: Path, records: Iterable[DiscoveryRecord]) -> int:
    """Write the records atomically (the file appears complete or not at all)."""
    n = 0
    with atomic_file(path, "w") as fh:
        for r in records:
            fh.write(r.to_json() + "\n")
            n += 1
    return n
