"""End to end through the files: a classification dataset directory, predictions
submitted with ``add_submission``, the site built (and re-scored) by
``build_site``: the Classification page shows the stored scores and every
model's per-class CSV, recomputed from its predictions, names the classes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.classification_fixtures import classification_features, toy_label_space
from tests.score_fixtures import png, write_meta, write_parquet
from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.leaderboard.publish import build_site

CONFIGS = {"imagenet-val": 24, "imagenet-r": 18}


def _dataset(out: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    space = toy_label_space()
    configs = {name: [{"id": f"{name}/{i:03d}", "image": {"bytes": png(i + 50 * j), "path": None},
                       "label": i % len(space), "candidates": [], "variant": name} for i in range(n)]
               for j, (name, n) in enumerate(CONFIGS.items())}
    write_dataset(out, configs=configs, features=classification_features(), card="toy",
                  info=BuildInfo("classification", "0.1.0", 0, sample=True), kind=CLASSIFICATION,
                  label_spaces=dict.fromkeys(configs, space))
    return out, configs


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, list[dict[str, Any]]]]:
    tmp = tmp_path_factory.mktemp("cls-site")
    ds, configs = _dataset(tmp / "ds")
    rows = [r for rs in configs.values() for r in rs]
    subs = tmp / "submissions"
    for i, (mid, family, skill) in enumerate((("cls-1", "classifier", 1.0), ("cls-2", "classifier", 2.0),
                                              ("clip-1", "clip", 1.5))):
        rng = np.random.default_rng(i)
        z = rng.normal(size=(len(rows), 6))
        z[np.arange(len(rows)), [r["label"] for r in rows]] += 2 * skill
        preds = write_parquet(tmp / f"{mid}.parquet", [r["id"] for r in rows], z.tolist())
        write_meta(preds, ds, model=mid, family=family)
        add_submission(subs, mid, ds, preds)
    build_site(subs, tmp / "site", datasets=[ds])
    return subs, tmp / "site", configs


def test_the_built_site_has_the_page_and_per_class_csvs(site: tuple[Path, Path, dict[str, Any]]) -> None:
    subs, out, configs = site
    page = (out / "classification.html").read_text("utf-8")
    names = toy_label_space().names
    for mid in ("cls-1", "cls-2", "clip-1"):
        section = json.loads((subs / mid / "scores.json").read_text())["datasets"]["classification"]
        val = section["configs"]["imagenet-val"]
        assert f'data-v="{val["accuracy"]!r}"' in page and f'data-v="{val["ece"]!r}"' in page
        assert section["temperature"]["reference_config"] == "imagenet-val"
        per_class = list(csv.DictReader(io.StringIO(
            (out / "downloads" / mid / "classification.per-class.csv").read_text("utf-8"))))
        assert {r["config"] for r in per_class} == set(CONFIGS)
        assert {r["class_name"] for r in per_class} == set(names)
        rows = json.loads((subs / mid / "scores.json").read_text())["datasets"]["classification"]["configs"]
        for cfg in CONFIGS:
            mean = np.mean([float(r["accuracy"]) for r in per_class if r["config"] == cfg])
            assert mean == pytest.approx(rows[cfg]["mean_per_class_accuracy"])
            assert sum(int(r["n"]) for r in per_class if r["config"] == cfg) == len(configs[cfg])
    assert (out / "classification.csv").is_file()
