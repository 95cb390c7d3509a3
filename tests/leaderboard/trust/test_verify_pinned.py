"""`leaderboard/trust/verify.py` never trusts a scores.json (issue 27.10): its
tolerance is pinned from both sides (1e-9 relative, 1e-12 absolute: a stored
number off by a millionth is refused, rounding noise is not), and every branch
of the comparison and of the re-scoring is reached by a test that fails if the
branch is skipped."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.submission import real_submissions
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.trust import verify
from vlmrobust.leaderboard.trust.verify import _disagreement, load_verified_submissions


def test_tolerance_constants() -> None:
    assert verify.REL_TOL == 1e-9 and verify.ABS_TOL == 1e-12


@pytest.mark.parametrize("value", [0.8125, 3.0, 123.456, -0.25, 1e-3])
def test_relative_tolerance_both_sides(value: float) -> None:
    for rel in (1e-11, 5e-10):
        assert _disagreement(value * (1 + rel), value, "x") is None, rel
    for rel in (2e-9, 1e-7, 1e-6, 1e-4):  # 1e-4 is inside a 1e-3 tolerance
        found = _disagreement(value * (1 + rel), value, "x")
        assert found is not None and found.startswith("x is "), rel


def test_absolute_tolerance_near_zero() -> None:
    assert _disagreement(0.0, 5e-13, "x") is None
    assert _disagreement(0.0, 1e-11, "x") is not None
    assert _disagreement(1e-10, 0.0, "x") is not None


def test_every_comparison_branch() -> None:
    fresh = {"a": 1.0, "b": [1.0, 2.0], "c": "text", "d": {"e": 2}, "f": True, "g": None}
    assert _disagreement(dict(fresh), fresh, "s") is None
    # fields only the fresh scores have are not disagreements
    assert _disagreement({"a": 1.0}, fresh, "s") is None
    assert _disagreement({"zz": 1}, fresh, "s") == "s.zz: not something the scorer computes"
    assert _disagreement({"d": 5}, fresh, "s") == "s.d is 5, re-scoring the predictions gives {'e': 2}"
    assert _disagreement({"d": {"e": 2}}, {"d": 7}, "s") == "s.d: stored dict, recomputed 7"
    assert _disagreement({"b": [1.0]}, fresh, "s") is not None          # list length
    assert _disagreement({"b": "12"}, fresh, "s") is not None            # list vs text
    assert _disagreement({"b": [1.0, 2.5]}, fresh, "s") == "s.b[1] is 2.5, re-scoring the predictions gives 2.0"
    assert _disagreement([1.0], "x", "s") is not None                    # stored list, fresh text
    assert _disagreement({"c": "other"}, fresh, "s") is not None         # text
    assert _disagreement({"f": 1}, fresh, "s") is not None               # 1 is not True
    assert _disagreement({"f": False}, fresh, "s") is not None
    assert _disagreement({"a": True}, fresh, "s") is not None            # bool posing as a number
    assert _disagreement({"g": 0}, fresh, "s") is not None               # 0 is not null
    assert _disagreement({"a": None}, fresh, "s") is not None
    assert _disagreement({"a": math.nan}, fresh, "s") is not None
    assert _disagreement({"a": 1}, fresh, "s") is None                   # int and float agree


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return real_submissions(tmp_path_factory.mktemp("pinned"), 2)


def _copy(board: tuple[Path, list[Path]], tmp: Path) -> Path:
    subs = tmp / "submissions"
    shutil.copytree(board[0], subs)
    return subs


def _edit_scores(subs: Path, edit: Any) -> None:
    path = subs / "model-0" / "scores.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _refused(subs: Path, datasets: list[Path], *needles: str) -> str:
    with pytest.raises(LeaderboardInputError) as exc:
        load_verified_submissions(subs, datasets=datasets)
    for needle in needles:
        assert needle in str(exc.value), str(exc.value)
    return str(exc.value)


def test_untouched_board_verifies(board: tuple[Path, list[Path]]) -> None:
    assert len(load_verified_submissions(board[0], datasets=board[1])) == 2


def test_a_millionth_off_is_refused(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board, tmp_path)

    def nudge(d: dict[str, Any]) -> None:
        cfg = next(iter(d["datasets"]["imagenet-mcq"]["configs"].values()))
        cfg["accuracy"] = cfg["accuracy"] * (1 + 1e-6) + 1e-9

    _edit_scores(subs, nudge)
    _refused(subs, board[1], "accuracy is", "re-scoring the predictions gives")


def test_bench_c_numbers_are_checked_too(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board, tmp_path)

    def nudge(d: dict[str, Any]) -> None:
        agg = d["datasets"]["bench-c"]["bench_c"]["aggregate"]
        key = next(k for k, v in agg.items() if isinstance(v, float) and v != 0)
        agg[key] *= 1 + 1e-6

    _edit_scores(subs, nudge)
    _refused(subs, board[1], "bench_c.aggregate.")


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda d: d["datasets"]["imagenet-mcq"].__setitem__("invented", 1),
     "datasets.imagenet-mcq.invented: not something the scorer computes"),
    (lambda d: d["datasets"]["imagenet-mcq"].__setitem__("has_logits", 1), "has_logits is 1"),
    (lambda d: d["datasets"]["imagenet-mcq"].__setitem__("predictions_sha256", "0" * 64),
     "the scores were not computed from these predictions"),
    (lambda d: d.__setitem__("datasets", []), "expected {'schema_version': 1"),
])
def test_each_refusal_branch(board: tuple[Path, list[Path]], tmp_path: Path, edit: Any,
                             needle: str) -> None:
    subs = _copy(board, tmp_path)
    _edit_scores(subs, edit)
    _refused(subs, board[1], needle)


def test_folder_level_branches(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board, tmp_path)
    (subs / "model-0" / "scores.json").unlink()
    _refused(subs, board[1], "scores.json: missing")

    subs = _copy(board, tmp_path / "b")
    (subs / "model-0" / "imagenet-mcq" / "predictions.parquet").unlink()
    _refused(subs, board[1], "predictions.parquet: missing, so")

    subs = _copy(board, tmp_path / "c")
    (subs / "model-0" / "extra").mkdir()
    _refused(subs, board[1], "extra: predictions not listed in")

    subs = _copy(board, tmp_path / "d")
    (subs / "model-0" / "bench-c" / "predictions.parquet").replace(
        subs / "model-0" / "imagenet-mcq" / "predictions.parquet")
    shutil.rmtree(subs / "model-0" / "bench-c")
    _edit_scores(subs, lambda d: d["datasets"].pop("bench-c"))
    _refused(subs, board[1], "the predictions answer dataset 'bench-c'")

    subs = _copy(board, tmp_path / "e")
    with pytest.raises(LeaderboardInputError, match="in no dataset directory given"):
        load_verified_submissions(subs, datasets=board[1][:1])
