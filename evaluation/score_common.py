"""What every scoring module shares: the derived per-item seeds (no global RNG)
and the JSON number convention (null where a metric is undefined)."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np

DEFAULT_SEED = 0


def derived_seed(seed: int, *parts: str) -> int:
    """A per-item seed from a hash of (seed, parts): no global RNG, stable across runs.

    >>> derived_seed(0, "cfg") == derived_seed(0, "cfg") != derived_seed(1, "cfg")
    True
    """
    digest = hashlib.sha256(json.dumps([seed, *parts]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def json_num(x: float | np.floating[Any]) -> float | None:
    """JSON number, or null where undefined (NaN)."""
    v = float(x)
    return None if math.isnan(v) else v


