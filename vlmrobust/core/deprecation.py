"""Old import paths that still resolve, with a warning, for one minor version."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def deprecated_forward(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the moved module ``old``: names of ``new``
    resolve there with a ``DeprecationWarning`` naming the new path; any other
    name (and any dunder, which import machinery probes) is an AttributeError.

    >>> import warnings
    >>> get = deprecated_forward("old.place", "json")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     import json
    ...     get("dumps") is json.dumps, str(caught[0].message)
    (True, 'old.place.dumps moved to json.dumps; the old path goes in the next minor version')
    >>> get("no_such_name")
    Traceback (most recent call last):
    ...
    AttributeError: module 'old.place' has no attribute 'no_such_name'
    """
    if not old or not new or old == new:
        raise ValueError(f"deprecated_forward needs two different module names, got {old!r} -> {new!r}")

    def __getattr__(name: str) -> Any:
        if not name.startswith("__"):
            module = importlib.import_module(new)
            if hasattr(module, name):
                warnings.warn(
                    f"{old}.{name} moved to {new}.{name}; the old path goes in the next minor version",
                    DeprecationWarning,
                    stacklevel=2,
                )
                return getattr(module, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
