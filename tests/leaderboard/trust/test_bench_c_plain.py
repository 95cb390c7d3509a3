"""The plain (unweighted) Bench-C numbers are as untrusted as the κ-weighted
ones: the leaderboard re-scores them from the predictions, refuses a stored
value that differs, and shows only the recomputed numbers in its downloads."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.submission import real_submissions
from vlmrobust.cli import main
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.submission import BenchCScores, LeaderboardInputError
from vlmrobust.leaderboard.trust.verify import load_verified_submissions

Block = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return real_submissions(tmp_path_factory.mktemp("board"), 2)


def _copy(board: tuple[Path, list[Path]], tmp: Path) -> Path:
    return Path(shutil.copytree(board[0], tmp / "subs"))


def _edit(subs: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    path = subs / "model-0" / "scores.json"
    scores = json.loads(path.read_text())
    change(scores["datasets"]["bench-c"]["bench_c"])
    path.write_text(json.dumps(scores))
    return path


def _nudge(block: dict[str, Any], key: str) -> float:
    """Move ``block[key]`` by 0.01, staying inside the metric's range."""
    old = block[key]
    assert isinstance(old, float)
    block[key] = old - 0.01 if old > 0 else old + 0.01
    return old


FORGERIES: list[tuple[str, Block, str]] = [
    ("aggregate.plain", lambda bc: bc["aggregate"]["plain"], "ras"),
    ("aggregate.plain", lambda bc: bc["aggregate"]["plain"], "delta_acc"),
    ("cells[0].plain", lambda bc: bc["cells"][0]["plain"], "acc"),
    ("clean.plain", lambda bc: bc["clean"]["plain"], "acc"),
    ("categories.cat.aggregate.plain", lambda bc: bc["categories"]["cat"]["aggregate"]["plain"],
     "S"),
    # the κ-weighted twin, refused the same way since #14
    ("aggregate", lambda bc: bc["aggregate"], "ras"),
]


@pytest.mark.parametrize(("where", "block", "key"), FORGERIES,
                         ids=[f"{w}.{k}" for w, _, k in FORGERIES])
def test_a_forged_plain_number_is_refused(board: tuple[Path, list[Path]], tmp_path: Path,
                                          where: str, block: Block, key: str) -> None:
    subs = _copy(board, tmp_path)
    path = _edit(subs, lambda bc: _nudge(block(bc), key))
    with pytest.raises(LeaderboardInputError) as exc:
        load_verified_submissions(subs, datasets=board[1])
    msg = str(exc.value)
    assert msg.startswith(f"{path}: datasets.bench-c.bench_c.{where}.{key} is "), msg
    assert "re-scoring the predictions gives" in msg and "\n" not in msg


def test_publish_refuses_a_forged_plain_ras_and_writes_nothing(
        board: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy(board, tmp_path)
    path = _edit(subs, lambda bc: _nudge(bc["aggregate"]["plain"], "ras"))
    site = tmp_path / "site"
    rc = main(["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
               "--datasets", *map(str, board[1])])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and "aggregate.plain.ras" in err and "Traceback" not in err
    assert not site.exists()


def test_downloads_show_recomputed_plain_numbers_not_stored_ones(
        board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    """A scores.json without any plain block (an older scorer's) passes the check,
    and the downloads still carry the plain numbers, recomputed."""
    subs = _copy(board, tmp_path)
    honest = json.loads((subs / "model-0" / "scores.json").read_text())
    want = honest["datasets"]["bench-c"]["bench_c"]["aggregate"]["plain"]

    def strip(bc: dict[str, Any]) -> None:
        for part in (bc, *bc["categories"].values()):
            del part["aggregate"]["plain"]
            part["clean"].pop("plain")
            for cell in part["cells"]:
                del cell["plain"]

    _edit(subs, strip)
    assert load_submissions(subs)[0].datasets["bench-c"].bench_c.plain_aggregate == {}  # type: ignore[union-attr]
    build_site(subs, tmp_path / "site", datasets=board[1])
    rows = {r["model_id"]: r for r in csv.DictReader(io.StringIO(
        (tmp_path / "site" / "leaderboard.csv").read_text()))}
    for key in ("acc", "delta_acc", "ras", "S", "C"):
        assert float(rows["model-0"][f"bench-c:plain:{key}"]) == want[key], key
    assert float(rows["model-0"]["bench-c:plain:clean_accuracy"]) == \
        honest["datasets"]["bench-c"]["bench_c"]["clean"]["plain"]["acc"]


@pytest.mark.parametrize(("key", "value"), [("acc", 1.5), ("delta_acc", -1.25), ("ras", 1.01),
                                            ("S_clean", -0.5)])
def test_plain_numbers_out_of_range_are_refused_when_loaded(
        board: tuple[Path, list[Path]], tmp_path: Path, key: str, value: float) -> None:
    subs = _copy(board, tmp_path)
    path = _edit(subs, lambda bc: bc["aggregate"]["plain"].__setitem__(key, value))
    with pytest.raises(LeaderboardInputError) as exc:
        load_submissions(subs)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: datasets.bench-c.bench_c.aggregate.plain.{key}: {value!r} "
                          "is outside"), msg
    assert msg.endswith("rescore the submission with `vlmrobust score`")


def test_bench_c_record_checks_its_aggregates() -> None:
    ok = BenchCScores(clean_accuracy=0.5, cells=(), aggregate={"ras": -2.0}, quadrants={},
                      transitions={}, plain_aggregate={"acc": 1.0, "ras": None},
                      clean={"plain": {"acc": 0.0}})
    assert ok.plain_aggregate["acc"] == 1.0
    bad: list[dict[str, Any]] = [
        {"plain_aggregate": {"acc": 1.0000001}}, {"plain_aggregate": {"accuracy": 0.5}},
        {"aggregate": {"ras": float("nan")}}, {"clean": {"weighted": {"acc": 0.5}}},
        {"clean": {"plain": {"S": 2.0}}}]
    for change in bad:
        args: dict[str, Any] = {"clean_accuracy": 0.5, "cells": (), "aggregate": {},
                                "quadrants": {}, "transitions": {}, **change}
        with pytest.raises(ValueError):
            BenchCScores(**args)
