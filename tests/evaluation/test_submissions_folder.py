"""The repository's submissions/ folder: schemas identical to the ones validate
uses, and the example submission complete, consistent and re-scorable against
the dataset build shipped beside it (submissions/datasets/), so that
`leaderboard build` works on a fresh clone with a light install."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.schemas import SCHEMA_DIR, SCHEMAS, check_schema
from vlmrobust.leaderboard.load import load_submissions

ROOT = Path(__file__).parents[2] / "submissions"
EXAMPLE = ROOT / "efficientnet-lite0"
SHIPPED = ROOT / "datasets" / "imagenet-mcq"


@pytest.mark.parametrize("name", SCHEMAS)
def test_published_schemas_are_the_ones_validate_uses(name: str) -> None:
    published = (ROOT / "schemas" / f"{name}.schema.json").read_bytes()
    assert published == (SCHEMA_DIR / f"{name}.schema.json").read_bytes()


def test_readme_names_the_protocol_and_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    for needle in ("vlmrobust/leaderboard", "placeholder", "write_predictions", "vlmrobust submit",
                   "fingerprint", "predictions_sha256", "schemas/scores.schema.json"):
        assert needle in text, needle


def test_example_is_complete_and_consistent() -> None:
    assert sorted(p.name for p in EXAMPLE.iterdir()) == ["imagenet-mcq", "meta.yaml",
                                                         "scores.json"]
    meta = yaml.safe_load((EXAMPLE / "meta.yaml").read_text())
    check_schema(meta, "submission-meta", "meta.yaml")
    scores = json.loads((EXAMPLE / "scores.json").read_text())
    check_schema(scores, "scores", "scores.json")
    predictions = EXAMPLE / "imagenet-mcq" / "predictions.parquet"
    pmeta = read_prediction_meta(predictions)  # schema-checked
    section = scores["datasets"]["imagenet-mcq"]
    assert section["predictions_sha256"] == hashlib.sha256(predictions.read_bytes()).hexdigest()
    assert section["dataset"]["fingerprint"] == pmeta["dataset"]["fingerprint"]
    assert pmeta["reference"]["checkpoint_sha256"] and pmeta["reference"]["libraries"]["torch"]
    (sub,) = load_submissions(ROOT)
    assert sub.model_id == "efficientnet-lite0" and sub.meta.family == "classifier"
    shipped = json.loads((SHIPPED / "manifest.json").read_text())
    assert shipped["fingerprint"] == section["dataset"]["fingerprint"]


def test_leaderboard_build_works_on_the_repository_folder(tmp_path: Path) -> None:
    """No --datasets: the example's build is found in submissions/datasets/."""
    from vlmrobust.cli import main

    subs = tmp_path / "submissions"
    shutil.copytree(ROOT, subs, ignore=shutil.ignore_patterns(".*"))
    assert main(["leaderboard", "build", "--submissions", str(subs), "--out",
                 str(tmp_path / "site"), "--quiet"]) == 0
    html = (tmp_path / "site" / "index.html").read_text()
    assert "EfficientNet-Lite0" in html


def test_every_refused_folder_is_reported_in_one_run(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.cli import main

    subs = tmp_path / "submissions"
    shutil.copytree(ROOT, subs, ignore=shutil.ignore_patterns(".*"))
    for bad in ("bad-a", "bad-b"):
        shutil.copytree(EXAMPLE, subs / bad)
    (subs / "bad-a" / "meta.yaml").write_text(
        (EXAMPLE / "meta.yaml").read_text().replace("model_id: efficientnet-lite0",
                                                    "model_id: bad-a"))
    # bad-a: its predictions are gone; bad-b: meta.yaml names another folder
    (subs / "bad-a" / "imagenet-mcq" / "predictions.parquet").unlink()
    assert main(["leaderboard", "build", "--submissions", str(subs), "--out",
                 str(tmp_path / "site"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: 2 submission folders refused")
    (line,) = err.strip().splitlines()
    first, second = line.split(" | ")
    assert "(1) " + str(subs / "bad-a") in first and "(2) " + str(subs / "bad-b") in second
    assert not (tmp_path / "site").exists()


def test_example_rescores_on_a_fresh_sample_build(tmp_path: Path) -> None:
    """The shipped build is what `build imagenet-mcq --sample --limit 1` makes."""
    from vlmrobust.cli import main
    from vlmrobust.core.datadir import read_manifest
    from vlmrobust.leaderboard.trust.verify import load_verified_submissions

    ds = tmp_path / "imagenet-mcq"
    assert main(["build", "imagenet-mcq", "--sample", "--limit", "1", "--out", str(ds),
                 "--no-progress"]) == 0
    want = json.loads((EXAMPLE / "scores.json").read_text())["datasets"]["imagenet-mcq"]
    # A failure, not a skip: an example that no fresh build answers breaks
    # `leaderboard build` for every newcomer (issue 27.2), which a skip would hide.
    assert read_manifest(ds)["fingerprint"] == want["dataset"]["fingerprint"], (
        "the sample build changed since submissions/efficientnet-lite0 was made; "
        "regenerate it with bash scripts/make-example-submission.sh")
    (sub,) = load_verified_submissions(ROOT, datasets=[ds])
    assert sub.datasets["imagenet-mcq"].configs
