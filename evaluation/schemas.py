"""The JSON Schemas of the submission contract (evaluation/schemas/, copied to
the repository's submissions/schemas/ for submitters) and one-line checks
against them."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SubmissionError

SCHEMA_DIR = Path(__file__).parent / "schemas"
SCHEMAS = ("predictions-meta", "predictions-row", "submission-meta", "scores")


@cache
def load_schema(name: str) -> dict[str, Any]:
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}; known: {SCHEMAS}")
    data: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text("utf-8"))
    return data


@cache
def _validator(name: str) -> Any:
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def plain(obj: Any) -> Any:
    """YAML gives dates as datetime objects; the contract has them as ISO text."""
    if isinstance(obj, Mapping):
        return {str(k) if isinstance(k, (dt.date, int, float, bool)) else k: plain(v)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    if isinstance(obj, (dt.date, dt.datetime)):
        return obj.isoformat()
    return obj


def check_schema(obj: Any, name: str, where: str,
                 error: type[SubmissionError] = SubmissionError) -> None:
    """Raise ``error`` naming the first field that breaks schema ``name``.

    >>> check_schema({"model_id": "m", "name": "M", "family": "robot"}, "submission-meta", "meta.yaml")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.SubmissionError: meta.yaml: family: 'robot' is not one of ['vlm', 'clip', 'classifier', 'other'] (see submissions/schemas/submission-meta.schema.json)
    """
    import jsonschema

    err = jsonschema.exceptions.best_match(_validator(name).iter_errors(obj))
    if err is None:
        return
    field = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    message = err.message if len(err.message) <= 200 else err.message[:200] + "…"
    raise error(f"{where}: {field}: {message} (see submissions/schemas/{name}.schema.json)")
