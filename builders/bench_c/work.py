"""The resumable part of a Bench-C build: selector answers cached as small JSON
files under a work directory (``<out>.work/answers``), one per (selector,
question). A killed build finds them and goes on; the corrupted copies are
not cached (they are remade in memory, see :mod:`.copies`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vlmrobust.core.files.atomic import write_text_atomic

CLEAN = ("none", 0)


def variants(corruptions: Sequence[str], severities: Sequence[int]) -> list[tuple[str, int]]:
    """The clean copy first, then corruption-major, severity-minor.

    >>> variants(["fog", "snow"], [1, 2])
    [('none', 0), ('fog', 1), ('fog', 2), ('snow', 1), ('snow', 2)]
    """
    return [CLEAN] + [(c, s) for c in corruptions for s in severities]


def load_predictions(path: Path) -> dict[str, Any] | None:
    """A cached answer file, or None when it is missing or torn (a killed run)."""
    if not path.is_file():
        return None
    try:
        # one selector's answers on ~96 copies: a few kB; anything larger is not ours
        with open(path, encoding="utf-8") as fh:
            text = fh.read(1 << 20)
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return None  # recompute rather than trust it
    return data if isinstance(data, dict) else None


def save_predictions(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, sort_keys=True))
