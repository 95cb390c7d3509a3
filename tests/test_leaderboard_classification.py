"""The Classification page (issue 23 item 5) from what the real scorer writes:
full-label-space ER against its own reference line (checked against a direct
probit least-squares fit), the K curve, calibration before / after seed 001's
temperature, the downloads (classification.csv and per-class accuracies
recomputed from the rows), autoescaping and the site's navigation."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import norm

from vlmrobust.evaluation.dataset_index import DatasetIndex
from vlmrobust.evaluation.predictions_read import predictions_from_table
from vlmrobust.evaluation.score import dumps_scores, score_report
from vlmrobust.evaluation.validate import validate_against
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.baselines import BaselineSpec
from vlmrobust.leaderboard.evidence import DatasetEvidence, content_digest
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.render import render_site

C, K = 20, 5
CONFIGS = (("imagenet-val", 200, None), ("imagenet-r", 150, None), ("imagenet-val-k5", 100, K))
# (model id, name, family, mode, skill on val, skill on the shift)
MODELS = (("cls-a", "Classifier A", "classifier", "class-logits", 1.0, 0.3),
          ("cls-b", "Classifier B", "classifier", "class-logits", 2.0, 1.0),
          ("cls-c", "Classifier C", "classifier", "class-logits", 3.0, 1.6),
          ("clip-a", "CLIP <b>A</b>", "clip", "embedding", 2.0, 2.0),
          ("vlm-a", "VLM A", "vlm", "open-world", 1.5, 1.5))


def _dataset() -> tuple[pa.Table, dict[str, Any]]:
    rng = np.random.default_rng(0)
    cols: dict[str, list[Any]] = {"id": [], "n_options": [], "answer": [], "variant": [], "config": []}
    for name, n, k in CONFIGS:
        cols["id"] += [f"{name}/{i}" for i in range(n)]
        cols["n_options"] += [k or C] * n
        cols["answer"] += rng.integers(0, k or C, size=n).tolist()
        cols["variant"] += ["imagenet-r" if name == "imagenet-r" else "imagenet-val"] * n
        cols["config"] += [name] * n
    manifest = {"spec": {"name": "classification", "version": "1"}, "fingerprint": "f" * 64,
                "kind": "classification", "configs": {name: n for name, n, _ in CONFIGS},
                "label_spaces": {name: {"n_classes": C, "name": "toy", "sha256": "0" * 64}
                                 for name, _, _ in CONFIGS}}
    return pa.table(cols), manifest


def _predictions(table: pa.Table, seed: int, skill_val: float, skill_shift: float) -> pa.Table:
    rng = np.random.default_rng(seed)
    answer = np.asarray(table.column("answer").to_numpy())
    width = np.asarray(table.column("n_options").to_numpy())
    shift = np.asarray(table.column("variant").to_pylist()) == "imagenet-r"
    rows = []
    for a, w, sh in zip(answer.tolist(), width.tolist(), shift.tolist(), strict=True):
        z = rng.normal(size=w) * 2.0
        z[a] += 2.0 * (skill_shift if sh else skill_val)
        rows.append(z.tolist())
    return pa.table({"id": table.column("id"), "logits": rows})


def _evidence(report: Any, model_id: str) -> DatasetEvidence:
    """What re-scoring gives the leaderboard (an in-memory report has no file sha256)."""
    return DatasetEvidence("0" * 64, content_digest(report.index.ids, report.aligned.logits, None),
                           model_id, None, None, {}, index=report.index,
                           correct=np.asarray(report.aligned.predicted == report.index.answer))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    root = tmp_path_factory.mktemp("subs")
    table, manifest = _dataset()
    index = DatasetIndex.from_table(table, manifest, "config")
    scored, reports = {}, {}
    for i, (mid, name, fam, mode, sv, ss) in enumerate(MODELS):
        report = validate_against(index, predictions_from_table(_predictions(table, i, sv, ss)))
        scores = score_report(report, mid)
        folder = root / mid
        folder.mkdir()
        (folder / "scores.json").write_text(dumps_scores(scores))
        (folder / "meta.yaml").write_text(f"model_id: {mid}\nname: '{name}'\nfamily: {fam}\nmode: {mode}\n")
        scored[mid], reports[mid] = scores["datasets"]["classification"], report
    subs = tuple(dataclasses.replace(s, evidence={"classification": _evidence(reports[s.model_id], s.model_id)})
                 for s in load_submissions(root))
    lb = aggregate(subs, BaselineSpec(version="t", n_bootstrap=50, reference_training_data=None))
    return lb, scored, render_site(lb)


def test_full_label_space_er_uses_its_own_reference_line(built: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
    lb, scored, _ = built
    board = lb.classification
    assert board is not None and board.datasets == ("classification",)
    fits = board.er["classification"].fits
    assert {(f.reference, f.shift, f.strategy, f.dataset) for f in fits} == {
        ("imagenet-val", "imagenet-r", "label-space", "classification")}
    ref = next(f for f in fits if f.kind == "reference")
    assert sorted(ref.baselines) == ["cls-a", "cls-b", "cls-c"]
    acc = {m: (scored[m]["configs"]["imagenet-val"]["accuracy"], scored[m]["configs"]["imagenet-r"]["accuracy"])
           for m in scored}
    x = norm.ppf([acc[m][0] for m in ("cls-a", "cls-b", "cls-c")])
    y = norm.ppf([acc[m][1] for m in ("cls-a", "cls-b", "cls-c")])
    a, b = np.polyfit(x, y, 1)
    assert ref.slope == pytest.approx(a, rel=1e-9) and ref.intercept == pytest.approx(b, rel=1e-9)
    er = board.er["classification"].er["clip-a"][0].er
    assert er == pytest.approx(acc["clip-a"][1] - norm.cdf(a * norm.ppf(acc["clip-a"][0]) + b), abs=1e-9)
    assert er > 0.1  # CLIP keeps its accuracy on the shift
    # the MCQ lines stay apart: no imagenet-mcq section, no MCQ fits
    assert lb.fits == ()


def test_page_tables_k_curve_calibration_and_escaping(built: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
    _, scored, files = built
    page = files["classification.html"].decode("utf-8")
    assert "CLIP &lt;b&gt;A&lt;/b&gt;" in page and "<b>A</b>" not in page
    assert "open world" in page and "label-space argmax (CLIP)" in page
    val = scored["cls-b"]["configs"]["imagenet-val"]
    assert f'data-v="{val["accuracy"]!r}"' in page
    assert f'data-v="{val["ece_ts"]!r}"' in page and f'data-v="{val["temperature"]!r}"' in page
    assert 'href="classification.html"' in files["index.html"].decode("utf-8")
    curve = files["plots/classification/k-curve-000.svg"].decode("utf-8")
    assert curve.count("<path class=\"curve\"") == 3  # classifier, clip, vlm
    k5 = np.mean([scored[m]["configs"]["imagenet-val-k5"]["accuracy"] for m in ("cls-a", "cls-b", "cls-c")])
    assert f"K = 5, {k5:.3f}" in curve
    assert "plots/classification/ece-ts.svg" in files and "plots/classification/er-000.svg" in files


def test_downloads_hold_every_config_and_the_per_class_accuracies(
        built: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
    lb, scored, files = built
    rows = list(csv.DictReader(io.StringIO(files["classification.csv"].decode("utf-8"))))
    assert len(rows) == len(MODELS) * len(CONFIGS)
    got = {(r["model_id"], r["config"]): r for r in rows}
    for mid, section in scored.items():
        for cfg, c in section["configs"].items():
            assert float(got[(mid, cfg)]["accuracy"]) == pytest.approx(c["accuracy"])
            assert got[(mid, cfg)]["over"] == c["over"]
    assert got[("clip-a", "imagenet-r")]["er"] != "" and got[("clip-a", "imagenet-val-k5")]["er"] == ""
    page = files["classification.html"].decode("utf-8")
    for mid in scored:
        path = f"downloads/{Path(lb.pages[mid]).stem}/classification.per-class.csv"
        assert path in page
        per_class = list(csv.DictReader(io.StringIO(files[path].decode("utf-8"))))
        assert {r["config"] for r in per_class} == {"imagenet-val", "imagenet-r"}  # not the K config
        ev = next(s for s in lb.submissions if s.model_id == mid).evidence["classification"]
        rows_r = np.flatnonzero(ev.index.config == "imagenet-r")
        y, ok = ev.index.answer[rows_r], ev.correct[rows_r]
        for r in per_class:
            if r["config"] == "imagenet-r":
                mask = y == int(r["class_id"])
                assert int(r["n"]) == mask.sum() and float(r["accuracy"]) == pytest.approx(ok[mask].mean())
        mean = np.mean([float(r["accuracy"]) for r in per_class if r["config"] == "imagenet-r"])
        assert mean == pytest.approx(scored[mid]["configs"]["imagenet-r"]["mean_per_class_accuracy"])


def test_a_site_without_classification_scores_says_so(tmp_path: Path) -> None:
    from vlmrobust.leaderboard.synthetic import write_synthetic_submissions

    write_synthetic_submissions(tmp_path, 4, seed=1)
    lb = aggregate(load_submissions(tmp_path), BaselineSpec(version="t", n_bootstrap=20))
    assert lb.classification is None
    page = render_site(lb)["classification.html"].decode("utf-8")
    assert "No submission has scores of a classification dataset." in page


def test_the_site_with_the_page_passes_the_site_check(built: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
    from vlmrobust.leaderboard.render import site_assets
    from vlmrobust.leaderboard.sitecheck import check_files

    _, _, files = built
    script, style, csp = site_assets()
    check_files(files, scripts=[script], styles=[style], csp=csp)  # raises on a broken link or markup
