"""The reference evaluator's inner loop: planned rows streamed config by config
from the dataset, images decoded one batch ahead in a thread, each batch read
by the adapter (option logits, or a reader's logits + audit trail) and
appended to the resume journal, in order. A backend that keeps N requests in
flight (endpoint) has several batches read at once, so that its N slots stay
full across batch boundaries: a sliding window over the whole run, whatever
--batch-size is (issue 39.3)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import LabelSpace
from vlmrobust.core.ordered_threads import stream_groups_in_order
from vlmrobust.evaluation.predict.rows import DatasetReader, PlannedRow
from vlmrobust.evaluation.predictions.jsonl import MAX_TEXT_CHARS
from vlmrobust.evaluation.predictions.write import JOURNAL_EXTRAS, LOGP_COLUMNS, JournalWriter
from vlmrobust.models.base import Adapter
from vlmrobust.models.runtime import to_pil


def _batches(reader: DatasetReader, todo: Sequence[PlannedRow],
             batch_size: int) -> Iterator[list[tuple[PlannedRow, dict[str, Any]]]]:
    batch: list[tuple[PlannedRow, dict[str, Any]]] = []
    by_config: dict[str, dict[int, PlannedRow]] = {}
    for p in todo:
        by_config.setdefault(p.config, {})[p.row] = p
    # plan order is config-major, so streaming config by config keeps it
    for config, rows in by_config.items():
        for r, row in reader.iter_rows(config, set(rows)):
            batch.append((rows[r], row))
            if len(batch) == batch_size:
                yield batch
                batch = []
    if batch:
        yield batch


def _decoded(reader: DatasetReader, todo: Sequence[PlannedRow], batch_size: int
             ) -> Iterator[list[tuple[PlannedRow, dict[str, Any]]]]:
    """Batches with their images decoded (PIL, pixels loaded)."""
    for batch in _batches(reader, todo, batch_size):
        for p, row in batch:
            image = to_pil(row["image"], f"{reader.where(p.config)} row {p.row}")
            image.load()
            row["image"] = image
        yield batch


def _prefetched(batches: Iterator[Any]) -> Iterator[Any]:
    """``batches`` produced one ahead in a thread: reading parquet and decoding
    images (which release the GIL) overlap the adapter's forward pass. Errors
    surface at the batch that raised them, in order."""
    from concurrent.futures import ThreadPoolExecutor

    done = object()
    with ThreadPoolExecutor(1, thread_name_prefix="vlmrobust-prefetch") as pool:
        pending = pool.submit(next, batches, done)
        while True:
            batch = pending.result()
            if batch is done:
                return
            pending = pool.submit(next, batches, done)
            yield batch


def refuse_non_finite(model: str, out: Sequence[tuple[int, str, Any, Mapping[str, Any]]]) -> None:
    """Refuse a NaN or infinite logit (or CFG log-prob) from any backend before it
    is journaled, naming the row, the model or server and the field (issue 41.3:
    a server's NaN / -inf log-probs were written as logits, exit 0). A -inf that
    means "not among the server's top log-probs" is the letter reader's to mark
    truncated (readers/letter.py); one that still arrives here is refused."""
    for _, rid, logits, extras in out:
        fields = {"logits": logits, **{k: v for k, v in extras.items()
                                       if k in LOGP_COLUMNS}}
        for field, values in fields.items():
            if values is None:
                continue
            arr = np.asarray(values, dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(arr))
            if bad.size:
                raise VlmrobustError(
                    f"{model} gave {arr[bad[0]]} for row {rid!r}, field {field}, option "
                    f"{int(bad[0])}: a non-finite value is no score; check the server or "
                    "model (nothing was written for this batch)")


def run_batches(adapter: Adapter, reader: DatasetReader, todo: Sequence[PlannedRow],
                 batch_size: int, journal: Path, progress: bool, total: int,
                 after_batch: Callable[[int], None] | None, desc: str,
                 spaces: Mapping[str, LabelSpace] | None = None) -> None:
    """Read ``todo`` in batches and journal each; ``spaces`` (config -> label
    space) for a label-space kind, whose rows are answered over their space."""
    from tqdm.auto import tqdm

    def read(batch: list[tuple[PlannedRow, dict[str, Any]]]) -> tuple[Any, Any]:
        return batch, (read_batch(adapter, batch) if spaces is None
                       else read_label_batch(adapter, batch, spaces))

    writer = JournalWriter(journal)
    bar = tqdm(total=total, initial=total - len(todo), disable=not progress, desc=desc,
               unit="row", dynamic_ncols=True)
    batches = _prefetched(_decoded(reader, todo, batch_size))
    width = batches_in_flight(adapter, batch_size)
    # requests queued for batches that will not be journaled do not start; those
    # in flight end before the error reaches the caller (who may run again)
    stop = getattr(getattr(adapter, "backend", None), "stop_queued", None)
    groups = (stream_groups_in_order(read, batches, width, settle=True, on_stop=stop)
              if width > 1 else ([read(b)] for b in batches))
    n = 0
    try:
        for group in groups:
            done: list[tuple[int, list[Any]]] = []
            error: VlmrobustError | None = None
            for batch, got in group:
                out = [(p.index, p.id, logits, extras)
                       for (p, _), (logits, extras) in zip(batch, got, strict=True)]
                try:
                    refuse_non_finite(adapter.name, out)
                except VlmrobustError as exc:  # the batches before it are journaled
                    error = exc
                    break
                done.append((len(batch), out))
            if done:  # batches that finished together: one line, one fsync (~20 ms here)
                writer.append([row for _, out in done for row in out])
            for size, _ in done:
                n += 1
                bar.update(size)
                if after_batch is not None:
                    after_batch(n)
            if error is not None:
                raise error
    except BaseException:  # here (a bad value, Ctrl-C in after_batch) or in a batch
        if width > 1 and callable(stop):
            stop()
        raise
    finally:
        bar.close()
        writer.close()


def batches_in_flight(adapter: Adapter, batch_size: int) -> int:
    """Batches read at once: 1, or for a backend that keeps ``in_flight`` = N
    requests going, enough that N requests are always waiting for a slot while
    the oldest batch finishes: ceil(N / batch_size) + 1.

    >>> class Backend: in_flight = 64
    >>> class Adapter: backend = Backend()
    >>> batches_in_flight(Adapter(), 16), batches_in_flight(Adapter(), 1)
    (5, 65)
    """
    n = getattr(getattr(adapter, "backend", None), "in_flight", None)
    if not isinstance(n, int) or isinstance(n, bool) or n <= 1:
        return 1
    return -(-n // batch_size) + 1


def _extras(r: Any) -> dict[str, Any]:
    pairs = [("prompt_text", r.prompt_text), ("text", r.text), ("prediction", r.prediction),
             *((name, getattr(r, name, None)) for name in (*LOGP_COLUMNS, *JOURNAL_EXTRAS))]
    out = {k: v for k, v in pairs if v is not None}
    if "reasoning" in out:  # a column bounded as text is: validate refuses longer values
        out["reasoning_chars"] = len(out["reasoning"])
        out["reasoning"] = out["reasoning"][:MAX_TEXT_CHARS]
    return out


def read_label_batch(adapter: Adapter, batch: Sequence[tuple[PlannedRow, dict[str, Any]]],
                     spaces: Mapping[str, LabelSpace]
                     ) -> list[tuple[np.ndarray | None, dict[str, Any]]]:
    """Per row: its logits over its config's label space (or its candidates)
    and its audit trail. A batch may span two configs: each part is read over
    its own space."""
    out: list[tuple[np.ndarray | None, dict[str, Any]]] = [(None, {})] * len(batch)
    parts: dict[str, list[int]] = {}
    for i, (p, _) in enumerate(batch):
        parts.setdefault(p.config, []).append(i)
    read = getattr(adapter, "read_labels", None)
    for config, idx in parts.items():
        space = spaces[config]
        rows = [batch[i][1] for i in idx]
        if read is not None:
            readings = read(rows, space)
            got = [(None if r.logits is None else np.asarray(r.logits, np.float32), _extras(r))
                   for r in readings]
        else:
            label_logits = getattr(adapter, "label_logits")  # noqa: B009 (not in the protocol)
            got = [(np.asarray(v, np.float32), {}) for v in label_logits(rows, space)]
        if len(got) != len(idx):
            raise VlmrobustError(f"adapter {adapter.name} answered {len(got)} of {len(idx)} rows")
        for i, row, (vec, extra) in zip(idx, rows, got, strict=True):
            cands = row.get("candidates")
            k = len(cands) if cands else len(space)  # empty: the whole space
            if vec is not None and vec.shape != (k,):
                raise VlmrobustError(f"adapter {adapter.name} gave {vec.shape[0]} logits for row "
                                     f"{batch[i][0].id!r}, which answers over {k} classes")
            out[i] = (vec, extra)
    return out


def read_batch(adapter: Adapter, batch: Sequence[tuple[PlannedRow, dict[str, Any]]]
                ) -> list[tuple[np.ndarray | None, dict[str, Any]]]:
    """Per row: its K logits (None: a generating reader without an answer cue)
    and its audit trail (the prompt text, the raw output, the matched answer)."""
    rows = [row for _, row in batch]
    read = getattr(adapter, "read", None)
    if read is None:
        logits = np.asarray(adapter.option_logits(rows), dtype=np.float32)
        if logits.ndim != 2 or logits.shape[0] != len(rows):
            raise VlmrobustError(
                f"adapter {adapter.name} returned shape {logits.shape} for {len(rows)} rows"
            )
        per_row: list[np.ndarray | None] = list(logits)
        extras: list[dict[str, Any]] = [{} for _ in rows]
    else:
        readings = read(rows)
        per_row = [None if r.logits is None else np.asarray(r.logits, np.float32)
                   for r in readings]
        extras = [_extras(r) for r in readings]
    out: list[tuple[np.ndarray | None, dict[str, Any]]] = []
    for (p, row), vec, extra in zip(batch, per_row, extras, strict=True):
        k = len(row["options"])
        if vec is not None and vec.shape[0] < k:
            raise VlmrobustError(
                f"adapter {adapter.name} gave {vec.shape[0]} logits for row {p.id!r} "
                f"with {k} options"
            )
        out.append((None if vec is None else vec[:k], extra))
    return out
