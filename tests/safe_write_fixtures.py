"""Shared pieces of tests/test_safe_writes*.py: a world of real datasets,
predictions and submissions, and the one-line-failure check."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trust_fixtures import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.writer import BuildInfo


def make_world(tmp: Path) -> dict[str, Path]:
    """Two datasets, predictions for each, and three submitted models."""
    from tests.submission_fixtures import real_submissions

    subs, (mcq, bc) = real_submissions(tmp, 3)
    return {"subs": subs, "mcq": mcq, "bc": bc,
            "pm": perfect_predictions(mcq, tmp / "pm.parquet"),
            "pb": perfect_predictions(bc, tmp / "pb.parquet")}


def fails(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """Run the CLI; it must exit 1 with one line naming every needle."""
    rc, err = run_cli(argv, capsys)
    assert rc == 1, err
    one_line_error(err)
    for n in needles:
        assert n in err, err
    return err


def leftovers(folder: Path) -> list[str]:
    """Temporary or backup folders a swap left beside its target."""
    return sorted(p.name for p in folder.iterdir() if ".old-" in p.name or ".building-" in p.name)


def bench_c_info() -> BuildInfo:
    return BuildInfo("bench-c", "0.1.0", 0, sample=True)
