"""Benchmark: build the whole site (parse + fits + render + write + check) from 200
synthetic submissions (3 families, 2 sample variants × 3 strategies, 19 × 5
Bench-C cells, ImageWikiQA). Target on a 2-core machine: under 10 s."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.paged import PAGE_ROWS
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.synthetic import write_synthetic_submissions

N_MODELS = 200


@pytest.fixture(scope="module")
def submissions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("perf") / "submissions"
    write_synthetic_submissions(root, N_MODELS)
    return root


def test_build_site_200_submissions(benchmark: Any, submissions: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    # synthetic submissions have no predictions to re-score: load them as records
    # (the re-scoring has its own benchmark, test_verify_speed)
    index = benchmark.pedantic(lambda: build_site(load_submissions(submissions), out),
                               rounds=2, iterations=1)
    html = index.read_text(encoding="utf-8")
    # the page holds the first page of rows, data/overview.json all of them (issue 37.2)
    assert len(re.findall(r"<tr data-model=", html)) == PAGE_ROWS
    assert len(json.loads((out / "data" / "overview.json").read_text())["rows"]) == N_MODELS
    assert len(list((out / "models").glob("*.html"))) == N_MODELS
