"""The agreement check of stored and recomputed scores (leaderboard/trust/verify.py)
formats field paths only for the field that differs (issue 37.2); its verdicts and
messages are those of the recursive check it replaced, on random nested scores."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from vlmrobust.leaderboard.trust.verify import ABS_TOL, REL_TOL, _disagreement


def _replaced(stored: Any, fresh: Any, where: str) -> str | None:
    """The check as it was: the path of every field formatted on the way down."""
    if isinstance(stored, Mapping):
        if not isinstance(fresh, Mapping):
            return f"{where}: stored {type(stored).__name__}, recomputed {fresh!r}"
        for key, value in stored.items():
            if key not in fresh:
                return f"{where}.{key}: not something the scorer computes"
            found = _replaced(value, fresh[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(stored, list):
        if not isinstance(fresh, list) or len(stored) != len(fresh):
            return f"{where}: stored {stored!r:.80}, recomputed {fresh!r:.80}"
        for i, (a, b) in enumerate(zip(stored, fresh, strict=True)):
            found = _replaced(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    numbers = (int, float)
    if (isinstance(stored, numbers) and isinstance(fresh, numbers)
            and not isinstance(stored, bool) and not isinstance(fresh, bool)):
        if math.isclose(float(stored), float(fresh), rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return None
    elif stored == fresh and type(stored) is type(fresh):
        return None
    return f"{where} is {stored!r}, re-scoring the predictions gives {fresh!r}"


def _value(rng: np.random.Generator, depth: int) -> Any:
    pick = int(rng.integers(0, 8 if depth < 4 else 5))
    if pick == 0:
        return float(rng.normal())
    if pick == 1:
        return int(rng.integers(-3, 4))
    if pick == 2:
        return bool(rng.integers(0, 2))
    if pick == 3:
        return None if rng.random() < 0.5 else f"s{int(rng.integers(0, 3))}"
    if pick == 4:
        return float(rng.integers(0, 3))
    if pick in (5, 6):
        return {f"k{i}": _value(rng, depth + 1) for i in range(int(rng.integers(0, 4)))}
    return [_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(obj, dict):
        return [path] + [p for k, v in obj.items() for p in _leaves(v, (*path, k))]
    if isinstance(obj, list):
        return [path] + [p for i, v in enumerate(obj) for p in _leaves(v, (*path, i))]
    return [path]


MUTATIONS = [
    lambda v, r: v * (1 + 1e-12) if isinstance(v, float) else v,  # within tolerance
    lambda v, r: v + 1e-6 if isinstance(v, float) else v,
    lambda v, r: int(v) if isinstance(v, bool) else (bool(v) if isinstance(v, int) else v),
    lambda v, r: float(v) if isinstance(v, int) and not isinstance(v, bool) else v,
    lambda v, r: tuple(v) if isinstance(v, list) else v,
    lambda v, r: [*v, 1.0] if isinstance(v, list) else v,
    lambda v, r: list(v.values()) if isinstance(v, dict) else v,
    lambda v, r: {k: x for k, x in list(v.items())[1:]} if isinstance(v, dict) else v,
    lambda v, r: {**v, "extra": 1} if isinstance(v, dict) else v,
    lambda v, r: float("nan"),
    lambda v, r: "text",
]


def _mutate(obj: Any, rng: np.random.Generator) -> Any:
    out = copy.deepcopy(obj)
    paths = _leaves(out)
    path = paths[int(rng.integers(0, len(paths)))]
    mutation = MUTATIONS[int(rng.integers(0, len(MUTATIONS)))]
    if not path:
        return mutation(out, rng)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = mutation(parent[path[-1]], rng)
    return out


def test_verdicts_and_messages_are_those_of_the_replaced_check() -> None:
    rng = np.random.default_rng(0)
    disagreeing = 0
    for _ in range(3000):
        stored = {"datasets": {"x": _value(rng, 0)}}
        fresh = _mutate(stored, rng)
        for a, b in ((stored, fresh), (fresh, stored), (stored, stored)):
            want = _replaced(a, b, "datasets")
            assert _disagreement(a, b, "datasets") == want
            disagreeing += want is not None
    assert disagreeing > 1000  # the mutations are seen, not only agreement
