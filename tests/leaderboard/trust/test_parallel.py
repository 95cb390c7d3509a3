"""leaderboard/trust/parallel.py (issue 37.2): the build re-scores submissions in
worker processes (--jobs); the site is byte-identical whatever the number of
workers, sections of one dataset share one index object as in-process, and
every refused folder is named as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.submission import real_submissions
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.trust import parallel
from vlmrobust.leaderboard.trust.parallel import check_jobs, usable_cpus
from vlmrobust.leaderboard.trust.verify import load_verified_submissions

N = 4


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return real_submissions(tmp_path_factory.mktemp("parallel"), N)


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Pool from 2 folders on (the parent alone reads the threshold); the
    models whose results came back from a worker."""
    monkeypatch.setattr(parallel, "MIN_POOL_MODELS", 2)
    attached: list[str] = []
    real = parallel._attach

    def counting(sub, cache):  # type: ignore[no-untyped-def]
        attached.append(sub.model_id)
        return real(sub, cache)

    monkeypatch.setattr(parallel, "_attach", counting)
    return attached


def _files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*"))
            if p.is_file()}


def test_site_is_byte_identical_with_one_and_two_jobs(
        board: tuple[Path, list[Path]], pooled: list[str], tmp_path: Path) -> None:
    subs, datasets = board
    build_site(subs, tmp_path / "one", datasets=datasets, jobs=1)
    assert pooled == []
    build_site(subs, tmp_path / "two", datasets=datasets, jobs=2)
    assert pooled == [f"model-{i}" for i in range(N)]  # every model came from a worker
    one, two = _files(tmp_path / "one"), _files(tmp_path / "two")
    assert len(one) > 10 and list(one) == list(two)
    assert [k for k in one if one[k] != two[k]] == []


def test_sections_of_a_dataset_share_one_index(board: tuple[Path, list[Path]],
                                               pooled: list[str]) -> None:
    subs, datasets = board
    alone = load_verified_submissions(subs, datasets=datasets, jobs=1)
    pool = load_verified_submissions(subs, datasets=datasets, jobs=2)
    assert len(pooled) == N
    for key in ("imagenet-mcq", "bench-c"):
        indexes = [s.evidence[key].index for s in pool]
        assert all(ix is indexes[0] for ix in indexes)  # pairwise tests compare by identity
        assert indexes[0].ids.tolist() == alone[0].evidence[key].index.ids.tolist()
        for a, b in zip(alone, pool, strict=True):
            assert a.evidence[key] == b.evidence[key]
            assert a.evidence[key].details == b.evidence[key].details
            assert a.evidence[key].correct.tolist() == b.evidence[key].correct.tolist()
    assert [s.datasets for s in alone] == [s.datasets for s in pool]


def test_refusals_are_the_same_with_workers(board: tuple[Path, list[Path]], pooled: list[str],
                                            tmp_path: Path) -> None:
    import shutil

    subs = tmp_path / "submissions"
    shutil.copytree(board[0], subs)
    for i in (1, 3):  # two doctored scores.json files
        path = subs / f"model-{i}" / "scores.json"
        scores = json.loads(path.read_text(encoding="utf-8"))
        scores["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]["accuracy"] = 0.999
        path.write_text(json.dumps(scores), encoding="utf-8")
    messages = []
    for jobs in (1, 2):
        with pytest.raises(LeaderboardInputError) as exc:
            load_verified_submissions(subs, datasets=board[1], jobs=jobs)
        messages.append(str(exc.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("2 submission folders refused")
    assert "model-1" in messages[0] and "model-3" in messages[0]
    assert pooled == ["model-0", "model-2"]


def test_jobs_are_checked() -> None:
    assert check_jobs(None) == usable_cpus() >= 1
    assert check_jobs(2) == 2
    for bad in (0, -1, True, 1.5):
        with pytest.raises(LeaderboardInputError, match=r"--jobs must be a whole number >= 1"):
            check_jobs(bad)  # type: ignore[arg-type]


def test_cli_refuses_a_bad_jobs_value(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "vlmrobust", "leaderboard", "build",
                           "--submissions", str(tmp_path), "--out", str(tmp_path / "site"),
                           "--jobs", "0"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "--jobs: expected a whole number >= 1, got '0'" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "site").exists()
