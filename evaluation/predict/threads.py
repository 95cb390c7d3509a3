"""The torch CPU threads of one prediction run: chosen once, recorded in the
resume journal and the metadata, since the logits' float rounding depends on
the count."""

from __future__ import annotations

from pathlib import Path

from vlmrobust.core.cpus import default_threads
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.distributed import local_world_size
from vlmrobust.evaluation.predictions.write import recorded_run


def choose_threads(threads: int | None, pdir: Path) -> int:
    """The torch CPU threads of one run, chosen once: the float rounding of the
    logits depends on the count, so a resumed run must use its first part's.
    An explicit ``threads`` wins, unless the unfinished run in ``pdir`` used
    another count (refused: its rows would not match an uninterrupted run).
    Otherwise the journal's count, or for a new run
    :func:`vlmrobust.core.cpus.default_threads` (the quota'd CPUs other
    processes leave idle) shared among the processes torchrun put on this host."""
    old = recorded_run(pdir) or {}
    recorded = old.get("threads")
    if not (isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 1):
        recorded = None
    if threads is not None:
        if recorded is not None and recorded != threads:
            raise VlmrobustError(
                f"{pdir} holds an unfinished run computed with --threads {recorded} (the logits' "
                f"rounding depends on it); resume with --threads {recorded} or without "
                "--threads, or pass --overwrite to start over"
            )
        return threads
    if recorded is not None:
        return recorded
    return max(1, default_threads() // local_world_size())


def set_threads(threads: int | None) -> int | None:
    """Set torch's intra-op CPU threads; returns the previous value (None: unchanged)."""
    if threads is None:
        return None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    return previous
