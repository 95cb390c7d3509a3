"""What every scoring module shares: the derived per-item seeds (no global RNG),
the JSON number convention (null where a metric is undefined), and the frame of
a scores.json (its envelope and each section's ``dataset`` entry), whatever the
dataset's kind."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

DEFAULT_SEED = 0
SCHEMA_VERSION = 1


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




def dataset_entry(name: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A section's ``dataset``: the build its predictions were scored against.

    >>> dataset_entry("d", {"spec": {"version": 2}, "fingerprint": "f"})
    {'name': 'd', 'version': '2', 'fingerprint': 'f', 'sample': False}
    """
    return {"name": name, "version": str(manifest.get("spec", {}).get("version", "")),
            "fingerprint": manifest.get("fingerprint"), "sample": bool(manifest.get("sample", False))}


def scores_document(name: str, section: Mapping[str, Any], model_id: str | None,
                    meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """scores.json content of one dataset section; the model id is the one given,
    else the predictions metadata's ``model_id``, else its ``model``.

    >>> scores_document("d", {}, None, {"model": "m"})
    {'schema_version': 1, 'model_id': 'm', 'datasets': {'d': {}}}
    """
    if model_id is None and meta is not None:
        found = meta.get("model_id", meta.get("model"))
        model_id = str(found) if found is not None else None
    return {"schema_version": SCHEMA_VERSION, "model_id": model_id, "datasets": {name: section}}
