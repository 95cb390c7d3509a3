"""A run's CPU micro-batch (issue 39.2): probed once for a new run long enough
to repay the probe, recorded in the resume journal and the metadata, and
reused by a resumed run (the logits' float rounding depends on it, ~1e-6, as
on the thread count)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlmrobust.evaluation.predictions.write import recorded_run
from vlmrobust.models.classifiers.micro_batch import CPU_MICRO_BATCH, PROBE_MIN_ROWS

RUN_KEY = "micro_batch"


def recorded_micro_batch(pdir: Path) -> int | None:
    """The micro-batch an unfinished run in ``pdir`` recorded (None: none)."""
    value = (recorded_run(pdir) or {}).get(RUN_KEY)
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return value if ok else None


def settle_micro_batch(adapter: Any, recorded: int | None, rows: int) -> int | None:
    """The micro-batch ``adapter`` runs with, set on it: ``recorded`` (a
    resumed run), else a probe's choice when ``rows`` reach
    :data:`PROBE_MIN_ROWS`, else :data:`CPU_MICRO_BATCH`. None for an adapter without
    CPU micro-batches (a GPU, or another family)."""
    if getattr(adapter, "micro_batch", None) is None:
        return None
    if recorded is not None:
        adapter.micro_batch = recorded
    elif rows >= PROBE_MIN_ROWS:
        adapter.probe_micro_batch()
    else:  # not what an earlier run of this adapter object probed
        adapter.micro_batch = CPU_MICRO_BATCH
    return int(adapter.micro_batch)
