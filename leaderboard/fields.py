"""Typed field reads out of parsed ``meta.yaml``/``scores.json`` content: every
wrong type, range or key becomes a :class:`LeaderboardInputError` that names the
file, the field and the fix."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.text.display import short_repr
from vlmrobust.leaderboard.submission import LeaderboardInputError

# Counts in scores.json (rows, questions, quadrants) are far below this.
MAX_COUNT = 10 ** 12


class Where:
    """Builds error messages that name the file and the field at fault."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str, fix: str) -> LeaderboardInputError:
        loc = f"{self.path}: {where}: " if where else f"{self.path}: "
        return LeaderboardInputError(f"{loc}{problem}; {fix}")

    def mapping(self, obj: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(obj, Mapping):
            raise self.fail(where, f"expected a mapping, got {type(obj).__name__}",
                            "see docs/internals.md for the layout")
        return obj

    def number(self, obj: Mapping[str, Any], key: str, where: str, *, required: bool = False,
               lo: float | None = None, hi: float | None = None) -> float | None:
        if key not in obj or obj[key] is None:
            if required:
                raise self.fail(f"{where}.{key}", "missing", "write the value as a JSON number")
            return None
        v = obj[key]
        # bool is an int subclass; a true/false here is a schema error, not 1/0.
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(f"{where}.{key}", f"expected a number, got {short_repr(v)}",
                            "write numbers as JSON numbers, not strings")
        if isinstance(v, int) and abs(v) > 2 ** 53:  # float(v) would round or overflow
            raise self.fail(f"{where}.{key}", f"{short_repr(v)} is out of range",
                            "rescore the submission with `vlmrobust score`")
        if not math.isfinite(v):
            raise self.fail(f"{where}.{key}", f"{v!r} is not finite", "use null for undefined")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise self.fail(f"{where}.{key}", f"{v!r} is outside [{lo}, {hi}]",
                            "rescore the submission with `vlmrobust score`")
        return float(v)

    def integer(self, obj: Mapping[str, Any], key: str, where: str, *, required: bool = True,
                ) -> int | None:
        v = obj.get(key)
        if v is None and not required:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_COUNT:
            raise self.fail(f"{where}.{key}", f"expected an integer from 0 to {MAX_COUNT:.0e}, "
                            f"got {short_repr(v)}", "write counts as JSON integers")
        return int(v)

    def text(self, obj: Mapping[str, Any], key: str, where: str, *, required: bool = False,
             ) -> str | None:
        v = obj.get(key)
        if v is None:
            if required:
                raise self.fail(f"{where}.{key}" if where else key, "missing",
                                f"add '{key}' to the file")
            return None
        if isinstance(v, _dt.date):
            return v.isoformat()
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise self.fail(f"{where}.{key}" if where else key,
                            f"expected text, got {type(v).__name__}", "write it as a string")
        return str(v)

    def counts(self, obj: Mapping[str, Any], key: str, names: tuple[str, ...], where: str,
               ) -> dict[str, int]:
        raw = obj.get(key)
        if raw is None:
            return {}
        m = self.mapping(raw, f"{where}.{key}")
        # Fast path for the common valid case (38k count maps in a 200-model board).
        if all(type(v) is int and v >= 0 for v in m.values()) and m.keys() <= set(names):
            return {n: m[n] for n in names if n in m}
        unknown = sorted(set(m) - set(names))
        if unknown:
            raise self.fail(f"{where}.{key}", f"unknown keys {unknown}", f"use only {list(names)}")
        return {n: int(self.integer(m, n, f"{where}.{key}") or 0) for n in names if n in m}
