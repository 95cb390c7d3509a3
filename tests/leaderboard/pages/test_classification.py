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

from vlmrobust.evaluation.predictions.read import predictions_from_table
from vlmrobust.evaluation.scoring.dataset import dumps_scores, score_report
from vlmrobust.evaluation.validate.check import validate_against
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.render import render_site
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence, content_digest

C, K = 20, 5
CONFIGS = (("imagenet-val", 200, None), ("imagenet-r", 150, None), ("imagenet-val-k5", 100, K),
           ("3dcc-fog-1", 60, None), ("3dcc-fog-5", 60, None), ("flowers102", 50, None))
VARIANT = {"imagenet-val-k5": "imagenet-val", "3dcc-fog-1": "3dcc", "3dcc-fog-5": "3dcc"}
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
        cols["variant"] += [VARIANT.get(name, name)] * n
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
    shift = np.isin(np.asarray(table.column("variant").to_pylist()), ["imagenet-r", "3dcc", "flowers102"])
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
    # one line per shifted config (3DCC's cells apart); flowers102 is not an ImageNet shift
    assert {(f.reference, f.shift, f.strategy, f.dataset) for f in fits} == {
        ("imagenet-val", shift, "label-space", "classification")
        for shift in ("imagenet-r", "3dcc-fog-1", "3dcc-fog-5")}
    ref = next(f for f in fits if f.kind == "reference" and f.shift == "imagenet-r")
    assert sorted(ref.baselines) == ["cls-a", "cls-b", "cls-c"]
    acc = {m: (scored[m]["configs"]["imagenet-val"]["accuracy"], scored[m]["configs"]["imagenet-r"]["accuracy"])
           for m in scored}
    x = norm.ppf([acc[m][0] for m in ("cls-a", "cls-b", "cls-c")])
    y = norm.ppf([acc[m][1] for m in ("cls-a", "cls-b", "cls-c")])
    a, b = np.polyfit(x, y, 1)
    assert ref.slope == pytest.approx(a, rel=1e-9) and ref.intercept == pytest.approx(b, rel=1e-9)
    er = next(v.er for v in board.er["classification"].er["clip-a"] if v.shift == "imagenet-r")
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
    assert "mean over 3 shifts; 95% interval" in page  # the mean ER's joint bootstrap interval
    curve = files["plots/classification/k-curve-000.svg"].decode("utf-8")
    assert curve.count("<path class=\"curve\"") == 3  # classifier, clip, vlm
    k5 = np.mean([scored[m]["configs"]["imagenet-val-k5"]["accuracy"] for m in ("cls-a", "cls-b", "cls-c")])
    assert f"K = 5, {k5:.3f}" in curve
    assert "plots/classification/ece-ts.svg" in files and "plots/classification/er-000.svg" in files
    # a variant with several configs (3DCC) is pooled, n-weighted, in Table 1
    fog = [scored["cls-b"]["configs"][c] for c in ("3dcc-fog-1", "3dcc-fog-5")]
    pooled = sum(c["accuracy"] * c["n"] for c in fog) / sum(c["n"] for c in fog)
    assert f'data-v="{pooled!r}" title="120 images, 20 classes; pooled over its 2 configs' in page


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
    # no row lists valid labels or perturbation sets: no column, no table for them
    assert not {"accuracy_valid_labels", "anchors", "pmk_accuracy"} & set(rows[0])
    page = files["classification.html"].decode("utf-8")
    assert 'id="valid-labels"' not in page and 'id="vid-robust"' not in page
    for mid in scored:
        path = f"downloads/{Path(lb.pages[mid]).stem}/classification.per-class.csv"
        assert path in page
        per_class = list(csv.DictReader(io.StringIO(files[path].decode("utf-8"))))
        assert {r["config"] for r in per_class} == {c for c, _, k in CONFIGS if k is None}  # not the K config
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
    from vlmrobust.leaderboard.site.check import check_files
    from vlmrobust.leaderboard.site.render import site_assets

    _, _, files = built
    script, style, csp = site_assets()
    check_files(files, scripts=[script], styles=[style], csp=csp)  # raises on a broken link or markup


def test_per_class_rows_name_the_classes_of_a_dataset_directory(tmp_path: Path) -> None:
    from tests.fixtures.classification import write_classification
    from vlmrobust.core.label_space import read_label_space
    from vlmrobust.evaluation.validate.dataset_index import load_dataset_index
    from vlmrobust.leaderboard.pages.classification.page import per_class_records

    ds = write_classification(tmp_path / "ds", n=24, k=3)
    index = load_dataset_index(ds)
    correct = np.arange(index.n_rows) % 4 != 0
    ev = DatasetEvidence("0" * 64, "1" * 64, "m", None, None, {}, index=index, correct=correct)
    recs = per_class_records(ev, "classification")
    assert {r["config"] for r in recs} == {"toy"}  # the K config is left out
    names = read_label_space(ds, "toy").names
    rows = np.flatnonzero(index.config == "toy")
    for r in recs:
        mask = index.labels[rows] == r["class_id"]
        assert r["class_name"] == names[r["class_id"]]
        assert (r["n"], r["accuracy"]) == (int(mask.sum()), pytest.approx(correct[rows][mask].mean()))


def test_leaderboard_json_publishes_the_classification_lines(built: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
    import json

    lb, _, files = built
    table = json.loads(files["leaderboard.json"])
    recs = table["classification_fits"]
    assert recs and all(r["dataset"] == "classification" and r["strategy"] == "label-space" for r in recs)
    ref = next(r for r in recs if r["kind"] == "reference" and r["shift_variant"] == "imagenet-r")
    line = next(f for f in lb.classification.er["classification"].fits
                if f.kind == "reference" and f.shift == "imagenet-r")
    assert (ref["slope"], ref["intercept"]) == (line.slope, line.intercept)
    assert table["fits"] == []  # the MCQ lines stay apart


def test_k_tables_show_seed_002_fig4_relative_error_gap(built: tuple[Any, dict[str, Any], dict[str, Any]]) -> None:
    _, scored, files = built
    page = files["classification.html"].decode("utf-8")
    assert "Relative error gap (seed 002 Fig. 4)" in page and "as a multiple of CLIP &lt;b&gt;A&lt;/b&gt;" in page
    for k, config in ((K, "imagenet-val-k5"), (C, "imagenet-val")):
        vlm, clip = (scored[m]["configs"][config]["accuracy"] for m in ("vlm-a", "clip-a"))
        gap = (1 - vlm) / (1 - clip)
        assert f'data-v="{gap!r}">{gap:.1f}×</td>' in page, k
