"""Helpers shared by the trust tests (submissions that cannot be forged,
misattributed or stale): run the CLI and check its one-line error, and write
perfect predictions with their metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import vlmrobust
from tests.score_fixtures import dataset_rows
from vlmrobust.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(argv)
    err = capsys.readouterr().err
    return rc, err


def one_line_error(err: str) -> None:
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def perfect_predictions(ds: Path, out: Path, **meta: Any) -> Path:
    rows = dataset_rows(ds)
    logits = [[10.0 if j == r["answer"] else 0.0 for j in range(r["k"])] for r in rows]
    return vlmrobust.write_predictions(ds, [r["id"] for r in rows], logits, out=out,
                                       model=meta.pop("model", "oracle"),
                                       family=meta.pop("family", "other"), **meta)
