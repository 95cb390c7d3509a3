"""Reading and validating submissions/<model>/meta.yaml + scores.json."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission


def _subs(tmp_path: Path, n: int = 3) -> Path:
    root = tmp_path / "submissions"
    for i in range(n):
        write_submission(root, *synthetic_submission(i, ("classifier", "clip", "vlm")[i % 3]))
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_loads_typed_records(tmp_path: Path) -> None:
    root = _subs(tmp_path)
    subs = load_submissions(root)
    assert [s.model_id for s in subs] == ["classifier-0000", "clip-0001", "vlm-0002"]
    s = subs[0]
    raw = json.loads((root / s.model_id / "scores.json").read_text())
    assert s.meta.family == "classifier" and isinstance(s.meta.params, int)
    cfg = {c.config: c for c in s.datasets["imagenet-mcq"].configs}
    assert cfg["sample-photo-random"].accuracy == raw["datasets"]["imagenet-mcq"]["configs"][
        "sample-photo-random"]["accuracy"]
    assert s.datasets["imagenet-mcq"].reference_variant == "sample-photo"
    bc = s.datasets["bench-c"].bench_c
    assert bc is not None and len(bc.cells) == 95
    assert bc.aggregate["ras"] == raw["datasets"]["bench-c"]["bench_c"]["aggregate"]["ras"]
    assert sum(bc.quadrants.values()) == 95 * 40


def _edit_scores(fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        data = json.loads((folder / "scores.json").read_text())
        fn(data)
        (folder / "scores.json").write_text(json.dumps(data))
    return apply


def _edit_meta(fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        data = yaml.safe_load((folder / "meta.yaml").read_text())
        fn(data)
        (folder / "meta.yaml").write_text(yaml.safe_dump(data))
    return apply


def _cfg(d: dict[str, Any]) -> dict[str, Any]:
    return d["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]


def _cell(d: dict[str, Any], i: int = 0) -> dict[str, Any]:
    return d["datasets"]["bench-c"]["bench_c"]["cells"][i]


BAD: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("no meta", lambda f: (f / "meta.yaml").unlink(), "meta.yaml", "missing"),
    ("no scores", lambda f: (f / "scores.json").unlink(), "scores.json", "vlmrobust score"),
    ("yaml syntax", lambda f: (f / "meta.yaml").write_text("name: [unclosed\n"), "meta.yaml",
     "not valid YAML"),
    ("json syntax", lambda f: (f / "scores.json").write_text('{"schema_version": 1,'),
     "scores.json", "not valid JSON"),
    ("family", _edit_meta(lambda m: m.update(family="robot")), "meta.yaml", "family"),
    ("params text", _edit_meta(lambda m: m.update(params="4M")), "meta.yaml", "params"),
    ("meta id", _edit_meta(lambda m: m.update(model_id="other")), "meta.yaml",
     "differs from the folder name"),
    ("schema", _edit_scores(lambda d: d.update(schema_version=2)), "scores.json",
     "schema_version"),
    ("scores id", _edit_scores(lambda d: d.update(model_id="x")), "scores.json", "model_id"),
    ("acc string", _edit_scores(lambda d: _cfg(d).update(accuracy="0.8")), "scores.json",
     "configs.sample-photo-random.accuracy: expected a number"),
    ("acc range", _edit_scores(lambda d: _cfg(d).update(accuracy=1.5)), "scores.json",
     "outside [0.0, 1.0]"),
    ("acc bool", _edit_scores(lambda d: _cfg(d).update(accuracy=True)), "scores.json",
     "expected a number"),
    ("acc nan", _edit_scores(lambda d: _cfg(d).update(accuracy=math.nan)), "scores.json",
     "not finite"),
    ("ci", _edit_scores(lambda d: _cfg(d).update(accuracy_ci=[0.9, 0.1])), "scores.json",
     "accuracy_ci"),
    ("n", _edit_scores(lambda d: _cfg(d).update(n=-1)), "scores.json", ".n: expected"),
    ("ref", _edit_scores(lambda d: d["datasets"]["imagenet-mcq"].update(
        reference_variant="imagenet-val")), "scores.json", "no config has variant"),
    ("severity", _edit_scores(lambda d: _cell(d).update(severity=7)), "scores.json",
     "cells[0].severity"),
    ("dup cell", _edit_scores(lambda d: _cell(d, 1).update(severity=_cell(d)["severity"])),
     "scores.json", "duplicate cell"),
    ("quadrant", _edit_scores(lambda d: _cell(d)["quadrants"].update(weird=1)), "scores.json",
     "unknown keys"),
    ("ras text", _edit_scores(lambda d: _cell(d).update(ras="high")), "scores.json",
     "cells[0].ras"),
]


@pytest.mark.parametrize(("case", "damage", "filename", "needle"), BAD,
                         ids=[b[0] for b in BAD])
def test_bad_submission_names_file_and_field(tmp_path: Path, case: str,
                                             damage: Callable[[Path], None], filename: str,
                                             needle: str) -> None:
    root = _subs(tmp_path)
    damage(root / "clip-0001")
    before = _snapshot(tmp_path)
    with pytest.raises(LeaderboardInputError) as info:
        load_submissions(root)
    msg = str(info.value)
    assert str(root / "clip-0001" / filename) in msg
    assert needle in msg
    assert "\n" not in msg
    assert _snapshot(tmp_path) == before


def test_mixed_dataset_builds_are_refused(tmp_path: Path) -> None:
    root = _subs(tmp_path)
    _edit_scores(lambda d: d["datasets"]["bench-c"]["dataset"].update(fingerprint="f" * 64))(
        root / "vlm-0002")
    with pytest.raises(LeaderboardInputError, match="differs from bbbbbbbbbbbb"):
        load_submissions(root)


def test_bad_folder_name_and_empty_root(tmp_path: Path) -> None:
    with pytest.raises(VlmrobustError, match="not a directory"):
        load_submissions(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(VlmrobustError, match="no submission folders"):
        load_submissions(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "has space").mkdir()
    with pytest.raises(VlmrobustError, match="not a valid model id"):
        load_submissions(tmp_path / "bad")


def test_optional_datasets_and_nulls(tmp_path: Path) -> None:
    root = tmp_path / "s"
    meta, scores = synthetic_submission(0, "other")
    del scores["datasets"]["bench-c"], scores["datasets"]["imagewikiqa"]
    _cfg(scores).update(accuracy=None, accuracy_ci=None, ece=None)
    meta.pop("params")
    write_submission(root, meta, scores)
    (s,) = load_submissions(root)
    assert set(s.datasets) == {"imagenet-mcq"}
    cfg = {c.config: c for c in s.datasets["imagenet-mcq"].configs}["sample-photo-random"]
    assert cfg.accuracy is None and cfg.calibration["ece"] is None
    assert s.meta.params is None


def test_imagenet_x_factors_reach_the_model_page(tmp_path: Path) -> None:
    from vlmrobust.leaderboard.site.publish import build_site

    root = _subs(tmp_path, n=1)
    factors = {"pose": {"n": 3, "accuracy": 2 / 3}, "style": {"n": 0, "accuracy": None},
               "annotated": {"n": 4, "accuracy": 0.5}}

    def add(data: dict[str, Any]) -> None:
        data["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]["factors"] = factors
    _edit_scores(add)(root / "classifier-0000")
    (sub,) = load_submissions(root)
    cfg = {c.config: c for c in sub.datasets["imagenet-mcq"].configs}
    assert cfg["sample-photo-random"].factors == {"pose": (3, 2 / 3), "style": (0, None),
                                                   "annotated": (4, 0.5)}
    assert cfg["sample-rendition-random"].factors == {}
    build_site([sub], tmp_path / "site")
    page = (tmp_path / "site" / "models" / "classifier-0000.html").read_text()
    assert "ImageNet-X factors: sample-photo-random" in page
    assert "ImageNet-X factors: sample-rendition-random" not in page
    row = page[page.index("<td class=\"t\">pose</td>"):].split("</tr>")[0]
    assert "66.7" in row and ">3<" in row


@pytest.mark.parametrize("bad", [{"pose": {"n": 3, "accuracy": 1.5}},
                                 {"pose": {"n": -1, "accuracy": 0.5}}, {"pose": "high"}])
def test_bad_factor_entries_are_refused(tmp_path: Path, bad: dict[str, Any]) -> None:
    root = _subs(tmp_path, n=1)

    def add(data: dict[str, Any]) -> None:
        data["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]["factors"] = bad
    _edit_scores(add)(root / "classifier-0000")
    with pytest.raises(LeaderboardInputError, match=r"factors\.pose"):
        load_submissions(root)
