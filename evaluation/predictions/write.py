"""Writing predictions: the append-only journal that makes runs resumable, and
the final predictions file (parquet with its metadata embedded, or JSONL by
suffix with a ``<file>.meta.yaml`` sidecar; see predictions_meta).

Journal: ``<out dir>/.<out name>.partial/`` holds ``run.json`` (the arguments
that determine the result) and one ``rank-R-of-W.jsonl`` per process; each line
is one finished batch ``{"rows": [[index, id, logits or null, {extras}], ...]}``
(extras, optional: the row's prompt_text, raw output text, matched prediction), flushed and
fsynced. A line cut short by a crash has no trailing newline: it is dropped on
read and truncated away before appending, so a restart redoes exactly that
batch. Logits are ``{"f32": "<base64 of the little-endian float32 bytes>"}``:
exact, and 5.3 bytes a logit where a decimal list took ~12 and, read back as
Python floats, ~32 (1,000 logits a row over 50,000 rows would not fit in
2 GB); journals of earlier versions hold a list of numbers, still read.

The final parquet file is written in row groups of at most
:data:`ROW_GROUP_BYTES` of logits straight into its temporary file (no
in-memory copy of the whole file); a JSONL file line batch by line batch.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.bounded import MAX_META_BYTES, read_json_bounded
from vlmrobust.core.writer import WRITE_CHECKSUMS
from vlmrobust.evaluation.predictions.parquet import LOGP_COLUMNS

RUN_FILE = "run.json"
ROW_GROUP_BYTES = 64 * 2**20
FLOAT_LISTS = ("logits", *LOGP_COLUMNS)
# per-row extras journaled beside the audit trail: the letters a server did not
# list (a predictions column), a reasoning model's reasoning text (a column, cut
# at the text bound; reasoning_chars its full length) and its reasoning tokens
# as the server counted them (journal only: the server record's totals are
# summed from the journal, so a resumed run counts every row: reasoning_totals)
JOURNAL_EXTRAS = ("truncated", "reasoning", "reasoning_tokens")


def reasoning_totals(rows: Sequence[JournalRow]) -> dict[str, int] | None:
    """The run's reasoning: rows whose answer carried reasoning text, its
    characters, and the reasoning tokens the server counted (None: none).

    >>> reasoning_totals([("a", None, {"reasoning": "hm", "reasoning_chars": 2,
    ...                                "reasoning_tokens": 64}), ("b", None, {})])
    {'rows': 1, 'chars': 2, 'tokens': 64}
    """
    with_text = [r[2] for r in rows if r[2].get("reasoning")]
    out = {"rows": len(with_text),
           "chars": sum(int(e.get("reasoning_chars", len(e["reasoning"]))) for e in with_text),
           "tokens": sum(int(r[2].get("reasoning_tokens") or 0) for r in rows)}
    return out if any(out.values()) else None
# (id, float32 logits or None, audit trail: prompt_text / text / prediction)
JournalRow = tuple[str, np.ndarray | None, dict[str, Any]]


def _encode_logits(logits: Any) -> dict[str, str]:
    data = np.ascontiguousarray(np.asarray(logits, dtype="<f4")).tobytes()
    return {"f32": base64.b64encode(data).decode("ascii")}


def _decode_logits(value: Any) -> np.ndarray:
    """float32 logits from a journal entry: ``{"f32": base64}`` or, from older
    journals, a list of numbers."""
    if isinstance(value, dict):
        raw = base64.b64decode(value["f32"], validate=True)
        if len(raw) % 4:
            raise ValueError("float32 bytes of odd length")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not isinstance(value, list):
        raise TypeError("logits must be a list or an f32 record")
    return np.asarray([float(x) for x in value], dtype=np.float32)


def partial_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.partial"


def journal_path(pdir: Path, rank: int, world: int) -> Path:
    return pdir / f"rank-{rank}-of-{world}.jsonl"


def check_journal(pdir: Path, run_key: Mapping[str, Any]) -> None:
    """Refuse an existing journal of a different run (read-only, so that it
    runs before a model is loaded); a different run must not mix its rows in."""
    old = recorded_run(pdir)
    if old is None:
        return
    new = json.loads(json.dumps(dict(run_key)))
    if old != new:
        diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise VlmrobustError(
            f"{pdir} holds an unfinished run with different {', '.join(diff)}; rerun with the "
            "same arguments to resume, or pass --overwrite to discard it and start over"
        )


def recorded_run(pdir: Path) -> dict[str, Any] | None:
    """The run key an unfinished run saved in ``pdir`` (None: no journal there);
    an unreadable run.json reads as a key that matches no run."""
    run_file = pdir / RUN_FILE
    if not run_file.exists():
        return None
    try:
        old = read_json_bounded(run_file, MAX_META_BYTES, "resume journal run.json")
    except VlmrobustError:
        old = None
    return old if isinstance(old, dict) else {"(unreadable run.json)": True}


def start_journal(pdir: Path, run_key: Mapping[str, Any]) -> None:
    """Create ``pdir`` with ``run.json`` (called once the model has loaded, so
    that a model that fails to load leaves nothing behind), or check that an
    existing one is for the same run (a resume)."""
    check_journal(pdir, run_key)
    pdir.mkdir(parents=True, exist_ok=True)
    run_file = pdir / RUN_FILE
    if not run_file.exists():
        write_text_atomic(run_file, json.dumps(dict(run_key), sort_keys=True, indent=1) + "\n")


def read_journal(pdir: Path) -> dict[int, tuple[str, list[float]]]:
    """All finished rows of every rank file: plan index -> (id, logits); a row
    read without logits (generation) has an empty list."""
    return {i: (rid, [] if logits is None else [float(x) for x in logits])
            for i, (rid, logits, _) in read_journal_rows(pdir).items()}


def read_journal_rows(pdir: Path) -> dict[int, JournalRow]:
    """All finished rows: plan index -> (id, logits or None, extras), extras
    being the row's audit trail (``prompt_text``, ``text``, ``prediction``)."""
    done: dict[int, JournalRow] = {}
    for path in sorted(pdir.glob("rank-*.jsonl")):
        data = path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        for lineno, line in enumerate(complete.splitlines(), start=1):
            try:
                batch = json.loads(line)
                for index, rid, logits, *rest in batch["rows"]:
                    extras = dict(rest[0]) if rest else {}
                    for name in LOGP_COLUMNS:
                        if name in extras:
                            extras[name] = _decode_logits(extras[name])
                    done.setdefault(int(index), (
                        str(rid), None if logits is None else _decode_logits(logits), extras))
            except (ValueError, KeyError, TypeError):
                raise VlmrobustError(
                    f"{path} line {lineno}: corrupt journal line; delete {pdir} to start over"
                ) from None
    return done


def _encoded_extras(extras: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _encode_logits(v) if k in LOGP_COLUMNS else v for k, v in extras.items()}


class JournalWriter:
    """Appends one line per finished batch to this rank's journal file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = path.open("ab")
        try:
            # two runs of the same command at once would interleave batches
            fcntl.flock(self._f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._f.close()
            raise VlmrobustError(
                f"{path} is being written by another running predict; wait for it or stop it"
            ) from None
        if path.stat().st_size:
            # drop a line cut short by a crash so the next append starts clean
            data = path.read_bytes()
            keep = data.rfind(b"\n") + 1
            if keep != len(data):
                os.truncate(path, keep)

    def append(self, rows: Sequence[tuple[int, str, np.ndarray | None]
                                    | tuple[int, str, np.ndarray | None, Mapping[str, Any]]]
               ) -> None:
        """Rows (index, id, logits or None[, extras]) of one finished batch."""
        payload = {"rows": [[r[0], r[1], None if r[2] is None else _encode_logits(r[2]),
                             *([_encoded_extras(r[3])] if len(r) > 3 else [])]
                            for r in rows]}
        self._f.write(json.dumps(payload, separators=(",", ":")).encode("utf-8") + b"\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


@dataclass(frozen=True)
class ServedColumns:
    """The columns only a served model fills, one entry per row when given."""

    truncated: Sequence[int | None] | None = None
    reasoning: Sequence[str | None] | None = None


def predictions_table(ids: Sequence[str], configs: Sequence[str],
                      logits: Sequence[Sequence[float]] | None, *,
                      text: Sequence[str | None] | None = None,
                      prompt_text: Sequence[str | None] | None = None,
                      prediction: Sequence[int | None] | None = None,
                      logp: Mapping[str, Sequence[Sequence[float]]] | None = None,
                      served: ServedColumns | None = None) -> Any:
    """The predictions table: ``id``, ``config`` and the answer columns given:
    ``logits`` (float32 lists), ``text`` (raw model output), ``prompt_text``
    (the exact text sent to the model) and ``prediction`` (option index, None
    where the text answers none); None entries are nulls. ``logp``: the
    :data:`LOGP_COLUMNS` lists of a CFG run (float32, one per option).
    ``served`` (:class:`ServedColumns`): ``truncated``, per row the number of options whose log-prob the server did
    not list (null: all listed); ``reasoning``: a reasoning model's reasoning
    text. Every column given must have one entry per id."""
    import pyarrow as pa

    n = len(ids)
    truncated, reasoning = (served.truncated, served.reasoning) if served else (None, None)
    logp = dict(logp or {})
    if set(logp) - set(LOGP_COLUMNS):
        raise ValueError(f"predictions_table: logp holds {sorted(set(logp) - set(LOGP_COLUMNS))}, "
                         f"not among {LOGP_COLUMNS}")
    given = {"configs": configs, "logits": logits, "text": text, "prompt_text": prompt_text,
             "prediction": prediction, "truncated": truncated, "reasoning": reasoning, **logp}
    for name, col in given.items():
        if col is not None and len(col) != n:
            raise ValueError(f"predictions_table: {name} has {len(col)} entries for {n} ids")
    if logits is None and text is None and prediction is None:
        raise ValueError("predictions_table: give logits, text or prediction")
    cols: dict[str, Any] = {"id": pa.array(list(ids), pa.string())}
    if logits is not None:
        cols["logits"] = _list_column(logits)
    for name in LOGP_COLUMNS:
        if name in logp:
            cols[name] = _list_column(logp[name])
    if prediction is not None:
        cols["prediction"] = pa.array([None if v is None else int(v) for v in prediction], pa.int64())
    if truncated is not None:
        cols["truncated"] = pa.array([None if v is None else int(v) for v in truncated], pa.int64())
    for name, col in (("text", text), ("prompt_text", prompt_text), ("reasoning", reasoning)):
        if col is not None:
            cols[name] = pa.array(list(col), pa.string())
    cols["config"] = pa.array(list(configs), pa.string())
    return pa.table(cols)


def journal_table(ids: Sequence[str], configs: Sequence[str], rows: Sequence[JournalRow]) -> Any:
    """The predictions table of journalled rows (in plan order): logits when
    every row has them, text / prediction when a generating reader wrote them,
    prompt_text where given, CFG's :data:`LOGP_COLUMNS` when every row has them,
    ``truncated`` / ``reasoning`` where a row has one."""

    def column(key: str) -> list[Any] | None:
        values = [r[2].get(key) for r in rows]
        return values if any(v is not None for v in values) else None

    decided = any("text" in r[2] for r in rows)
    logp = {k: [r[2][k] for r in rows] for k in LOGP_COLUMNS if all(k in r[2] for r in rows)}
    logits: list[Any] | None = [r[1] for r in rows]
    return predictions_table(
        ids, configs, logits if all(r[1] is not None for r in rows) else None,
        text=column("text") if decided else None, prompt_text=column("prompt_text"),
        prediction=[r[2].get("prediction") for r in rows] if decided else None, logp=logp,
        served=ServedColumns(truncated=column("truncated"), reasoning=column("reasoning")))


def _list_column(logits: Sequence[Sequence[float]]) -> Any:
    """list<float32> from one vector per row, built on one flat float32 buffer
    (pa.array over a list of arrays would hold a second copy per row)."""
    import pyarrow as pa

    rows = [np.asarray(v, np.float32).reshape(-1) for v in logits]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in rows], out=offsets[1:])
    flat = np.concatenate(rows) if rows else np.zeros(0, np.float32)
    del rows
    if offsets[-1] < 2**31:
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(flat))
    return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat))


def write_predictions(out: Path, table: Any, meta: Mapping[str, Any]) -> None:
    """Atomically write the predictions table with its metadata: JSONL plus a
    ``<out>.meta.yaml`` sidecar when ``out`` ends in .jsonl, else parquet with
    the metadata embedded (one file that cannot lose it)."""
    write_predictions_file(out, table, meta)


def write_predictions_file(out: Path, table: Any, meta: Mapping[str, Any]) -> None:
    """As write_predictions, for any table of id + logits, text and/or prediction
    (+ prompt_text, config)."""
    from vlmrobust.evaluation.predictions.meta import attach_meta, sidecar_path

    out = Path(out)
    if out.suffix == ".jsonl":
        _write_jsonl(out, table, meta)
        return
    import pyarrow.parquet as pq

    from vlmrobust.core.files.atomic import atomic_file

    table = attach_meta(table, meta)
    per_row = 4 * _logit_count(table) // max(table.num_rows, 1) + 64
    group = max(1, min(2**20, ROW_GROUP_BYTES // per_row))  # 2**20: pyarrow's default
    with atomic_file(out) as f, pq.ParquetWriter(f, table.schema, compression="zstd",
                                                 **WRITE_CHECKSUMS) as writer:
        writer.write_table(table, row_group_size=group)
    stale = sidecar_path(out)
    if stale.is_file():
        stale.unlink()


def _logit_count(table: Any) -> int:
    if "logits" not in table.column_names:
        return 0
    import pyarrow.compute as pc

    return int(pc.sum(pc.list_value_length(table.column("logits"))).as_py() or 0)


def _write_jsonl(out: Path, table: Any, meta: Mapping[str, Any]) -> None:
    """Lines written batch by batch into the temporary file, hashed as they go;
    the sidecar records that sha256 and is renamed first: a kill between the
    two renames leaves a pair that is refused on read, never one model's
    metadata on another model's rows."""
    from vlmrobust.core.files.atomic import atomic_file
    from vlmrobust.evaluation.predictions.meta import DATA_SHA256, sidecar_path, sidecar_text

    digest = hashlib.sha256()
    with atomic_file(out) as f:
        for batch in table.to_batches(max_chunksize=1024):
            lines = [json.dumps({k: ([float(x) for x in v] if k in FLOAT_LISTS and v is not None
                                     else v) for k, v in r.items()}, allow_nan=False)
                     for r in batch.to_pylist()]
            data = "".join(line + "\n" for line in lines).encode("utf-8")
            digest.update(data)
            f.write(data)
        write_text_atomic(sidecar_path(out), sidecar_text({**dict(meta),
                                                           DATA_SHA256: digest.hexdigest()}))


def remove_partial(pdir: Path) -> None:
    shutil.rmtree(pdir, ignore_errors=True)
