"""The leaderboard recomputes, never trusts: forged, swapped or oversized
scores and bad model ids in submission folders are refused, the datasets are
found by fingerprint, and publishing keeps files it did not create."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.fixtures.submission import real_submissions
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import build_site, publish_site
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.trust.verify import load_verified_submissions


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return real_submissions(tmp_path_factory.mktemp("board"), 3)


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_leaderboard_recomputes_scores(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs, datasets = board
    verified = load_verified_submissions(subs, datasets=datasets)
    parsed = load_submissions(subs)
    assert [s.model_id for s in verified] == ["model-0", "model-1", "model-2"]
    for v, p in zip(verified, parsed, strict=True):
        assert v.datasets == p.datasets  # honest files: recomputed == stored
    index = build_site(subs, tmp_path / "site", datasets=datasets)
    assert index.is_file()


def test_forged_scores_without_predictions_are_refused(
        board: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    datasets = board[1]
    forged = subs / "forged"
    _copy(subs / "model-0", forged)
    scores = json.loads((forged / "scores.json").read_text())
    scores["model_id"] = "forged"
    scores["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]["accuracy"] = 1.0
    (forged / "scores.json").write_text(json.dumps(scores))
    (forged / "meta.yaml").write_text((forged / "meta.yaml").read_text().replace(
        "model_id: model-0", "model_id: forged"))
    site = tmp_path / "site"
    rc, err = run_cli(["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
                    "--datasets", *map(str, datasets)], capsys)
    assert rc == 1 and str(forged / "scores.json") in err and "accuracy is 1.0" in err
    one_line_error(err)
    assert not site.exists()
    # Without its predictions the same file is refused with the missing path.
    (forged / "imagenet-mcq" / "predictions.parquet").unlink()
    with pytest.raises(LeaderboardInputError, match=r"predictions\.parquet: missing"):
        build_site(subs, site, datasets=datasets)
    # A scores.json with no predictions at all (the reproduced forgery).
    import shutil

    shutil.rmtree(forged / "imagenet-mcq")
    shutil.rmtree(forged / "bench-c")
    with pytest.raises(LeaderboardInputError, match=r"forged/imagenet-mcq/predictions.parquet"):
        publish_site(subs, site, datasets=datasets)
    assert not site.exists()


def test_swapped_predictions_are_refused(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    # model-2's better predictions under model-0, with model-0's scores.json
    import shutil

    shutil.copy(subs / "model-2" / "bench-c" / "predictions.parquet",
                subs / "model-0" / "bench-c" / "predictions.parquet")
    with pytest.raises(LeaderboardInputError, match="predictions_sha256"):
        load_verified_submissions(subs, datasets=board[1])


def test_leaderboard_needs_the_datasets(board: tuple[Path, list[Path]], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    subs = _copy(board[0], tmp_path / "somewhere" / "subs")
    monkeypatch.delenv("VLMROBUST_DATASETS", raising=False)
    with pytest.raises(LeaderboardInputError, match="--datasets DIR"):
        load_verified_submissions(subs)
    # Found by fingerprint in a store: an env var, or datasets/ beside the submissions.
    monkeypatch.setenv("VLMROBUST_DATASETS", str(board[1][0].parent))
    assert len(load_verified_submissions(subs)) == 3
    monkeypatch.delenv("VLMROBUST_DATASETS")
    _copy(board[1][0].parent, tmp_path / "somewhere" / "datasets")
    assert len(load_verified_submissions(subs)) == 3


def test_newline_model_id_in_meta_yaml_is_refused_by_the_leaderboard(
        board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    meta = subs / "model-1" / "meta.yaml"
    data = yaml.safe_load(meta.read_text())
    data["model_id"] = "model-1\n"
    meta.write_text(yaml.safe_dump(data))
    with pytest.raises(LeaderboardInputError, match=r"meta.yaml: model_id: 'model-1\\n' is not a valid"):
        load_submissions(subs)


def test_huge_scores_json_is_refused_by_the_leaderboard(board: tuple[Path, list[Path]],
                                                        tmp_path: Path) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    (subs / "model-0" / "scores.json").write_text('{"a": ' + "[" * 50 + "]" * 50 + "}")
    with pytest.raises(LeaderboardInputError, match="nested deeper than"):
        load_submissions(subs)
    (subs / "model-0" / "scores.json").unlink()
    (subs / "model-0" / "scores.json").symlink_to("/dev/zero")
    with pytest.raises(LeaderboardInputError, match="not a regular file"):
        load_submissions(subs)


def test_publish_keeps_files_it_did_not_create(board: tuple[Path, list[Path]],
                                               tmp_path: Path) -> None:
    subs, datasets = board
    site = tmp_path / "site"
    site.mkdir()
    (site / "CNAME").write_text("leaderboard.example.org\n")  # a Pages folder before its first build
    publish_site(subs, site, datasets=datasets)
    assert (site / "CNAME").read_text() == "leaderboard.example.org\n"
    (site / ".nojekyll").write_text("")
    (site / "well-known").mkdir()
    (site / "well-known" / "security.txt").write_text("contact: x\n")
    publish_site(subs, site, datasets=datasets)
    build_site(subs, site, datasets=datasets)
    assert (site / "CNAME").read_text() == "leaderboard.example.org\n"
    assert (site / ".nojekyll").exists()
    assert (site / "well-known" / "security.txt").read_text() == "contact: x\n"
