"""Where a corruption's randomness comes from, and how a call is seeded.

Every random corruption takes a ``Draws`` object and asks it for exactly the
numbers, in exactly the order, that the ImageNet-C reference asks ``np.random``
for; the builder passes a ``numpy.random.Generator`` seeded from
(seed, item id, corruption, severity), the fidelity tests pass the legacy
stream the reference sees (``reference.LegacyDraws``). No global RNG state is
read or written.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

import numpy as np


class Draws(Protocol):
    """The subset of ``numpy.random.Generator`` the corruptions use."""

    def normal(self, loc: Any = ..., scale: Any = ..., size: Any = ...) -> Any: ...

    def uniform(self, low: Any = ..., high: Any = ..., size: Any = ...) -> Any: ...

    def poisson(self, lam: Any = ..., size: Any = ...) -> Any: ...

    def integers(self, low: int, high: int | None = ..., size: Any = ...) -> Any: ...

    def random(self, size: Any = ...) -> Any: ...


def derive_seed(seed: int, item_id: str, corruption: str, severity: int) -> int:
    """A 64-bit seed from (seed, item id, corruption, severity), the same on every
    machine and in every process (sha256, not Python's salted ``hash``).

    >>> derive_seed(0, "q1", "fog", 3) == derive_seed(0, "q1", "fog", 3)
    True
    >>> derive_seed(0, "q1", "fog", 3) != derive_seed(0, "q1", "fog", 4)
    True
    """
    key = json.dumps([int(seed), str(item_id), str(corruption), int(severity)],
                     separators=(",", ":"), ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def draws_for(seed: int, item_id: str, corruption: str, severity: int) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, item_id, corruption, severity))
