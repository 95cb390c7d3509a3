"""`pip install vlmrobust` with no extras validates, scores, submits and renders
the leaderboard, without torch (issue 11)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.light_env import core_closure
from tests.fixtures.score import dataset_rows, random_logits, write_mcq, write_meta, write_parquet

# One worker under xdist (--dist loadgroup) for every test of the session's
# wheel, its venvs and the demo stage the wheel test's demo resumes from: each
# is built once per worker.
pytestmark = pytest.mark.xdist_group("wheel")

HEAVY = ("torch", "torchvision", "transformers", "open_clip", "nltk", "faiss", "numba",
         "cv2", "skimage", "imagecorruptions", "sentence_transformers", "timm")


def test_core_closure_holds_no_heavy_distribution() -> None:
    names = set(core_closure())
    assert {"numpy", "pyarrow", "datasets", "jinja2"} <= names
    assert not names & {"torch", "torchvision", "transformers", "open-clip-torch", "nltk",
                        "faiss-cpu", "numba", "opencv-python-headless", "scikit-image"}


def _run(python: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=300)


def test_light_install_imports(light_python: Path, tmp_path: Path) -> None:
    for module in HEAVY:
        r = _run(light_python, ["-c", f"import {module}"], tmp_path)
        assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr, module
    # Only the vlmrobust namespace is installed: the folders are not top-level modules.
    for top in ("builders", "evaluation", "leaderboard", "benchmarks"):
        r = _run(light_python, ["-c", f"import {top}"], tmp_path)
        assert r.returncode != 0, top
    r = _run(light_python, ["-c", "import vlmrobust.evaluation.scoring.dataset, vlmrobust.leaderboard.site.publish; "
                            "import vlmrobust.builders; print('ok')"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    # Package data outside the Python files ships in the wheel (the photo table is YAML).
    r = _run(light_python, ["-c", "from vlmrobust.builders.sample.photo_sources import PHOTOS; "
                            "print(len(PHOTOS))"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "101", r.stderr


def test_light_install_validate_score_submit_leaderboard(light_python: Path, tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "ds")
    rows = dataset_rows(ds)
    preds = write_parquet(tmp_path / "run" / "predictions.parquet", [r["id"] for r in rows],
                          logits=random_logits(rows))
    write_meta(preds, ds)
    cli = ["-m", "vlmrobust"]
    steps = [
        ["validate", "--dataset", str(ds), "--predictions", str(preds)],
        ["score", "--dataset", str(ds), "--predictions", str(preds), "--out", str(tmp_path / "scores.json")],
        ["submit", "--submissions", str(tmp_path / "subs"), "--model-id", "toy", "--dataset", str(ds),
         "--predictions", str(preds)],
        ["leaderboard", "build", "--submissions", str(tmp_path / "subs"), "--out", str(tmp_path / "site"),
         "--quiet", "--datasets", str(ds)],
    ]
    for args in steps:
        r = _run(light_python, [*cli, *args], tmp_path)
        assert r.returncode == 0, f"{args[0]}: {r.stderr[-2000:]}"
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["datasets"]["imagenet-mcq"]["configs"]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "subs" / "toy" / "scores.json").is_file()


def test_light_install_names_the_missing_extra(light_python: Path, tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "ds")
    r = _run(light_python, ["-m", "vlmrobust", "predict", "--model", "classifier:efficientnet-lite0",
                            "--dataset", str(ds), "--out", str(tmp_path / "p.parquet")], tmp_path)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "pip install 'vlmrobust[predict]'" in line
