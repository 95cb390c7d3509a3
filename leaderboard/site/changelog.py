"""The release ``leaderboard publish`` appends to ``releases.json``: the next
version number, what changed since the last release, and the file's bytes.
Reading the file back is checked field by field (leaderboard/site/releases.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust import __version__
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.display import control_char, short_repr
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.site.releases import MAX_VERSION_CHARS, RELEASES_SCHEMA
from vlmrobust.leaderboard.submission import Submission

RELEASES = "releases.json"


class PublishError(VlmrobustError):
    """The site could not be built, checked or published."""


def submission_digest(s: Submission) -> str:
    h = hashlib.sha256()
    for name in ("meta.yaml", "scores.json"):
        h.update((s.folder / name).read_bytes())
    return h.hexdigest()


def read_releases(site: Path) -> list[dict[str, Any]]:
    path = Path(site) / RELEASES
    if not path.exists():
        return []
    from vlmrobust.core.files.bounded import (
        MAX_SCORES_BYTES,
        parse_json_bounded,
        read_bytes_bounded,
    )
    from vlmrobust.leaderboard.site.releases import FIX, check_releases

    raw = read_bytes_bounded(path, 4 * MAX_SCORES_BYTES, "releases file", PublishError)
    # every field is checked (leaderboard/site/releases.py): a damaged changelog is one
    # line naming the release and field, never a traceback from Jinja or int()
    try:
        data = parse_json_bounded(raw, str(path), PublishError, max_nodes=len(raw) + 1)
    except PublishError as exc:
        raise PublishError(f"{exc}; {FIX}") from None
    return check_releases(data, path, PublishError)


def next_version(previous: list[dict[str, Any]], requested: str | None) -> str:
    used = {str(r.get("version")) for r in previous}
    if requested is not None:
        if len(requested) > MAX_VERSION_CHARS or control_char(requested) is not None:
            raise PublishError(f"release version {short_repr(requested)} is longer than "
                               f"{MAX_VERSION_CHARS} characters or holds a control character; "
                               "pass a short --version such as 2 or 2026.11")
        if not requested.strip() or requested in used:
            raise PublishError(f"release version {requested!r} is empty or already published "
                               f"(published: {sorted(used)}); pass a new --version")
        return requested
    if not previous:
        return "1"
    last = str(previous[-1].get("version"))
    if not (last.isascii() and last.isdigit()):
        raise PublishError(f"cannot increment the last release version {last!r}; "
                           "pass --version")
    return str(int(last) + 1)


def make_release(lb: Leaderboard, previous: list[dict[str, Any]], version: str,
                 now: dt.datetime) -> dict[str, Any]:
    models = {s.model_id: submission_digest(s) for s in lb.submissions}
    release: dict[str, Any] = {
        "version": version,
        "date": now.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "code_version": __version__,
        "baselines": lb.spec.as_record(),
        "reference_runs": None if lb.record is None else lb.record.as_record(),
        "overview_strategy": lb.strategy,
        "fits": [f.as_record() for f in lb.fits],
        "n_models": len(models),
        "models": models,
        "changes": None,
    }
    if previous:
        old: Mapping[str, str] = previous[-1].get("models") or {}
        release["changes"] = {
            "added": sorted(set(models) - set(old)),
            "removed": sorted(set(old) - set(models)),
            "updated": sorted(m for m in set(models) & set(old) if models[m] != old[m]),
        }
    return release


def releases_json(releases: list[dict[str, Any]]) -> bytes:
    return (json.dumps({"schema_version": RELEASES_SCHEMA, "releases": releases}, indent=1,
                       ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
