"""``releases.json``, the site's changelog, read back from disk (issue 28.16).

The file is written by ``leaderboard publish`` but lives in the site folder,
where a hand edit, a bad merge or a truncated upload can damage it. Every
field the pages, the next version number and the next release's changes read
is checked here, so that damage is one line naming the file, the release and
the field, never a traceback from Jinja or ``int()``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.display import control_char

RELEASES_SCHEMA = 1
MAX_VERSION_CHARS = 100
MAX_TEXT_CHARS = 2000
FIX = ("restore releases.json from the hosted site (or the last good copy), or move it away to "
       "start a new changelog")


class ReleasesError(VlmrobustError):
    """releases.json is not a changelog this tool wrote."""


class _Check:
    def __init__(self, path: Path, error: type[VlmrobustError]) -> None:
        self.path = path
        self.error = error

    def fail(self, where: str, problem: str) -> VlmrobustError:
        return self.error(f"{self.path}: {where}: {problem}; {FIX}")

    def mapping(self, v: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(v, Mapping):
            raise self.fail(where, f"expected an object, got {type(v).__name__}")
        return v

    def text(self, m: Mapping[str, Any], key: str, where: str, *, null: bool = False,
             limit: int = MAX_TEXT_CHARS) -> None:
        v = m.get(key)
        if v is None:
            if null:
                return
            raise self.fail(f"{where}.{key}", "missing" if key not in m else "expected text, got null")
        if not isinstance(v, str):
            raise self.fail(f"{where}.{key}", f"expected text, got {type(v).__name__}")
        if len(v) > limit:
            raise self.fail(f"{where}.{key}", f"{len(v)} characters, more than {limit}")
        bad = control_char(v)
        if bad is not None:
            raise self.fail(f"{where}.{key}", f"holds the control character {bad}")

    def texts(self, v: Any, where: str) -> None:
        if not isinstance(v, list):
            raise self.fail(where, f"expected a list of text, got {type(v).__name__}")
        for i, item in enumerate(v):
            self.text({"_": item}, "_", f"{where}[{i}]")

    def number(self, m: Mapping[str, Any], key: str, where: str) -> None:
        v = m.get(key)
        if v is None:
            return
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.fail(f"{where}.{key}", f"expected a number or null, got {type(v).__name__}")
        if (isinstance(v, int) and abs(v) > 2 ** 53) or (isinstance(v, float) and not math.isfinite(v)):
            raise self.fail(f"{where}.{key}", "out of range")

    def count(self, m: Mapping[str, Any], key: str, where: str, *, null: bool = False) -> None:
        v = m.get(key)
        if v is None and null:
            return
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 10 ** 9:
            raise self.fail(f"{where}.{key}", f"expected a count, got {str(v)[:40]!r}")


def _fit(c: _Check, f: Any, where: str) -> None:
    fm = c.mapping(f, where)
    for key in ("family", "strategy", "reference_variant", "shift_variant", "reason", "kind",
                "label", "transform", "dataset"):
        c.text(fm, key, where, null=True)
    for key in ("slope", "intercept", "r2"):
        c.number(fm, key, where)
    c.count(fm, "n", where, null=True)
    if fm.get("baselines") is not None:
        c.texts(fm["baselines"], f"{where}.baselines")


def check_release(c: _Check, r: Any, where: str) -> None:
    rm = c.mapping(r, where)
    c.text(rm, "version", where, limit=MAX_VERSION_CHARS)
    for key in ("date", "code_version"):
        c.text(rm, key, where)
    c.text(rm, "overview_strategy", where, null=True)
    c.count(rm, "n_models", where)
    base = c.mapping(rm.get("baselines"), f"{where}.baselines")
    if not isinstance(base.get("version"), str | int) or isinstance(base.get("version"), bool):
        raise c.fail(f"{where}.baselines.version", "expected text")
    c.text({"v": str(base["version"])}, "v", f"{where}.baselines.version", limit=MAX_VERSION_CHARS)
    c.text(base, "transform", f"{where}.baselines")
    fits = rm.get("fits")
    if not isinstance(fits, list):
        raise c.fail(f"{where}.fits", f"expected a list, got {type(fits).__name__}")
    for i, f in enumerate(fits):
        _fit(c, f, f"{where}.fits[{i}]")
    models = c.mapping(rm.get("models"), f"{where}.models")
    for k, v in models.items():
        c.text({"k": k}, "k", f"{where}.models")
        c.text({"v": v}, "v", f"{where}.models[{str(k)[:40]!r}]")
    changes = rm.get("changes")
    if changes is not None:
        cm = c.mapping(changes, f"{where}.changes")
        for key in ("added", "removed", "updated"):
            c.texts(cm.get(key), f"{where}.changes.{key}")


def check_releases(data: Any, path: Path,
                   error: type[VlmrobustError] = ReleasesError) -> list[dict[str, Any]]:
    """The releases of a parsed ``releases.json``, every field checked."""
    c = _Check(path, error)
    if not isinstance(data, Mapping) or data.get("schema_version") != RELEASES_SCHEMA \
            or not isinstance(data.get("releases"), list):
        raise error(f"{path}: expected {{\"schema_version\": {RELEASES_SCHEMA}, \"releases\": "
                    f"[...]}}; {FIX}")
    releases = data["releases"]
    seen: set[str] = set()
    for i, r in enumerate(releases):
        where = f"releases[{i}]"
        check_release(c, r, where)
        if r["version"] in seen:
            raise c.fail(f"{where}.version", f"{r['version']!r} appears twice")
        seen.add(r["version"])
    return [dict(r) for r in releases]
