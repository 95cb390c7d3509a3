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

import datasets
import numpy as np
import pytest

from tests.fixtures.classification import classification_features, toy_label_space
from tests.fixtures.score import png, write_meta, write_parquet
from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.leaderboard.site.publish import build_site

CONFIGS = {"imagenet-val": 24, "imagenet-r": 18, "imagenet-vid-robust": 12}
VID_SET = 3  # frames per perturbation set (anchor first)


def _features() -> datasets.Features:
    features = classification_features()
    features["valid_labels"] = datasets.Sequence(datasets.Value("int32"))
    features["source_file"] = datasets.Value("string")
    features["pmset"] = datasets.Value("string")
    return features


def _row(name: str, i: int, j: int, n_classes: int) -> dict[str, Any]:
    label = i % n_classes
    key = f"val/v{i // VID_SET:03d}/{i % VID_SET:06d}.JPEG" if name == "imagenet-vid-robust" else f"{i:03d}.png"
    # every third image has a second valid class (ImageNet val's clean labels, Vid-Robust's labels.json)
    valid = [label, (label + 1) % n_classes] if i % 3 == 0 and name != "imagenet-r" else [label]
    return {"id": f"{name}/{i:03d}", "image": {"bytes": png(i + 50 * j), "path": None}, "label": label,
            "candidates": [], "variant": name, "valid_labels": valid, "source_file": key,
            "pmset": f"val/v{i // VID_SET:03d}/000000.JPEG" if name == "imagenet-vid-robust" else None}


def _dataset(out: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    space = toy_label_space()
    configs = {name: [_row(name, i, j, len(space)) for i in range(n)]
               for j, (name, n) in enumerate(CONFIGS.items())}
    write_dataset(out, configs=configs, features=_features(), card="toy",
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


def test_valid_label_and_pmk_accuracies_are_on_the_page_and_in_the_csv(
        site: tuple[Path, Path, dict[str, Any]]) -> None:
    """The page and classification.csv hold scores.json's accuracy_valid_labels
    and Vid-Robust's benign / pm-k accuracy with their intervals, of every model."""
    subs, out, _ = site
    page = (out / "classification.html").read_text("utf-8")
    assert 'id="valid-labels"' in page and 'id="vid-robust"' in page
    table = list(csv.DictReader(io.StringIO((out / "classification.csv").read_text("utf-8"))))
    for mid in ("cls-1", "cls-2", "clip-1"):
        configs = json.loads((subs / mid / "scores.json").read_text())["datasets"]["classification"]["configs"]
        mine = {r["config"]: r for r in table if r["model_id"] == mid}
        for cfg, got in configs.items():
            assert float(mine[cfg]["accuracy_valid_labels"]) == pytest.approx(got["accuracy_valid_labels"])
            assert f'data-v="{got["accuracy_valid_labels"]!r}"' in page
        vid = configs["imagenet-vid-robust"]
        assert vid["anchors"] == CONFIGS["imagenet-vid-robust"] // VID_SET
        assert vid["pmk_accuracy"] <= vid["benign_accuracy"]
        row = mine["imagenet-vid-robust"]
        assert int(row["anchors"]) == vid["anchors"]
        for key in ("benign_accuracy", "pmk_accuracy"):
            assert float(row[key]) == pytest.approx(vid[key])
            assert [float(row[f"{key}_ci_low"]), float(row[f"{key}_ci_high"])] == pytest.approx(vid[f"{key}_ci"])
            assert f'data-v="{vid[key]!r}"' in page
        assert mine["imagenet-r"]["anchors"] == "" and "anchors" not in configs["imagenet-r"]
    # valid labels count: some model is right on a second valid label somewhere
    assert any(float(r["accuracy_valid_labels"]) > float(r["accuracy"]) for r in table)
