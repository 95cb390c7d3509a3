"""Validate and score for kind ``ood``: OOD rows have no answer (accepted for
this kind only), scores from label-space logits, AUROC / FPR@95 / NINCO
class-mean AUROC equal scikit-learn and a direct loop on the same scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.special import logsumexp, softmax
from sklearn.metrics import roc_auc_score, roc_curve

from tests.fixtures.ood import dataset_ids, ood_rows, write_logits, write_ood
from tests.fixtures.score import write_mcq, write_meta, write_parquet
from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.scoring.rows.results import rows_path
from vlmrobust.evaluation.validate.check import validate


def _logits(n: int, seed: int, spread: float) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    z = (rng.normal(size=(n, 4)) * spread).round(2)
    z[::3] = z[0]  # repeated rows: tied scores within and across ID / OOD
    z[1::5] = 0.0  # flat logits: MSP 1/4, tied
    return z


@pytest.fixture()
def scored(tmp_path: Path) -> tuple[Path, dict[str, Any], list[dict[str, Any]], np.ndarray[Any, Any]]:
    ds = write_ood(tmp_path / "ds")
    rows = dataset_ids(ds)
    ids = [r[1] for r in rows]
    is_ood = np.array([r[2] for r in rows])
    logits = np.where(is_ood[:, None], _logits(len(ids), 1, 1.0), _logits(len(ids), 2, 3.0))
    logits[np.flatnonzero(is_ood)[2]] = logits[np.flatnonzero(~is_ood)[4]]  # an exact cross tie
    preds = write_logits(tmp_path / "p.parquet", ids, logits)
    write_meta(preds, ds)
    out = tmp_path / "scores.json"
    scores = score(ds, preds, out)
    records = [json.loads(line) for line in rows_path(out).read_text().splitlines()]
    return ds, scores, records, logits


def _sklearn(id_s: np.ndarray[Any, Any], ood_s: np.ndarray[Any, Any]) -> tuple[float, float]:
    y = np.r_[np.ones(id_s.size), np.zeros(ood_s.size)]
    s = np.r_[id_s, ood_s]
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    return float(roc_auc_score(y, s)), float(fpr[np.searchsorted(tpr, 0.95)])


def test_auroc_fpr_and_class_mean_equal_sklearn_and_a_loop(scored: Any) -> None:
    _, scores, records, logits = scored
    block = scores["datasets"]["ood"]["ood"]
    assert block["score"] == "msp" and block["logit_scale"] is None
    msp = np.array([r["msp"] for r in records])
    np.testing.assert_allclose(msp, softmax(logits.astype(np.float32).astype(np.float64), axis=1).max(axis=1),
                               rtol=0, atol=1e-12)
    ood = np.array([r["is_ood"] for r in records])
    assert len(set(msp[ood]) & set(msp[~ood])) >= 2  # ties across ID and OOD really occur
    # the other scores by their definitions (scipy), not the scorer's own per-row values
    z64 = logits.astype(np.float32).astype(np.float64)
    independent = {"max_logit": z64.max(axis=1), "energy": logsumexp(z64, axis=1)}
    for other, s in independent.items():
        np.testing.assert_allclose([r[other] for r in records], s, rtol=0, atol=1e-12)
    src = np.array([r["ood_source"] for r in records])
    for name in ("textures", "ninco"):
        a, f = _sklearn(msp[~ood], msp[src == name])
        got = block["sets"][name]
        assert got["auroc"] == pytest.approx(a, abs=1e-12) and got["fpr95"] == pytest.approx(f, abs=1e-12)
        assert got["auroc_ci"][0] <= got["auroc"] <= got["auroc_ci"][1]
        for other, s in independent.items():
            a2, f2 = _sklearn(s[~ood], s[src == name])
            assert got["by_score"][other]["auroc"] == pytest.approx(a2, abs=1e-12)
            assert got["by_score"][other]["fpr95"] == pytest.approx(f2, abs=1e-12)
    cls = np.array([r["ood_class"] for r in records])
    loop = [roc_auc_score(np.r_[np.ones((~ood).sum()), np.zeros((cls == c).sum())],
                          np.r_[msp[~ood], msp[cls == c]]) for c in ("c0", "c1")]
    ninco = block["sets"]["ninco"]
    assert ninco["class_mean_auroc"] == pytest.approx(float(np.mean(loop)), abs=1e-12)
    assert ninco["n_classes"] == 2 and block["sets"]["textures"]["class_mean_auroc"] is None
    assert block["mean_auroc"] == pytest.approx(np.mean([block["sets"][s]["auroc"] for s in ("ninco", "textures")]))
    assert block["mean_fpr95"] == pytest.approx(np.mean([block["sets"][s]["fpr95"] for s in ("ninco", "textures")]))


def test_id_accuracy_and_rows(scored: Any) -> None:
    _, scores, records, logits = scored
    section = scores["datasets"]["ood"]
    ood = np.array([r["is_ood"] for r in records])
    labels = np.array([r["answer"] if r["answer"] is not None else -1 for r in records])
    want = float((logits[~ood].argmax(axis=1) == labels[~ood]).mean())
    assert section["configs"]["imagenet-val"]["accuracy"] == pytest.approx(want)
    assert section["ood"]["id_accuracy"] == pytest.approx(want)
    assert section["configs"]["ninco"]["accuracy"] is None and section["configs"]["ninco"]["n_ood"] == 7
    assert all(r["correct"] is None and r["answer"] is None for r in records if r["is_ood"])
    import jsonschema

    schema = json.loads((Path(__file__).parents[3] / "evaluation/schemas/scores.schema.json").read_text())
    jsonschema.validate(scores, schema)


def test_only_ood_configs_are_refused_in_one_line(tmp_path: Path) -> None:
    ds = write_ood(tmp_path / "ds")
    rows = [r for r in dataset_ids(ds) if r[0] == "ninco"]
    preds = write_logits(tmp_path / "p.parquet", [r[1] for r in rows], np.zeros((len(rows), 4)))
    write_meta(preds, ds, configs=["ninco"])
    with pytest.raises(SubmissionError, match=r"no ID rows.*score its config together") as exc:
        score(ds, preds, tmp_path / "s.json")
    assert "\n" not in str(exc.value) and not (tmp_path / "s.json").exists()


def test_ood_predictions_need_logits_over_the_label_space(tmp_path: Path) -> None:
    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    preds = write_parquet(tmp_path / "p.parquet", ids, prediction=[0] * len(ids))
    write_meta(preds, ds)
    with pytest.raises(SubmissionError, match="no logits"):
        validate(ds, preds)
    short = write_logits(tmp_path / "q.parquet", ids, np.zeros((len(ids), 3)))
    write_meta(short, ds)
    with pytest.raises(SubmissionError, match=r"wrong number of logits.*3 logits; write 4 logits, one per class"):
        validate(ds, short)


def test_clip_scores_need_the_logit_scale(tmp_path: Path) -> None:
    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    cos = np.random.default_rng(0).uniform(-0.3, 0.4, size=(len(ids), 4))
    preds = write_logits(tmp_path / "p.parquet", ids, cos * 50.0)
    write_meta(preds, ds, family="clip")
    with pytest.raises(SubmissionError, match="has no logit_scale; MCM") as exc:
        score(ds, preds, tmp_path / "s.json")
    assert "\n" not in str(exc.value) and not (tmp_path / "s.json").exists()
    write_meta(preds, ds, family="clip", logit_scale=10.0)  # cosines would reach 20
    with pytest.raises(SubmissionError, match="does not match these logits"):
        score(ds, preds, tmp_path / "s.json")
    write_meta(preds, ds, family="clip", logit_scale=50.0)
    block = score(ds, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert block["score"] == "mcm" and block["logit_scale"] == 50.0
    records = [json.loads(x) for x in rows_path(tmp_path / "s.json").read_text().splitlines()]
    c32 = (cos * 50.0).astype(np.float32).astype(np.float64) / 50.0
    np.testing.assert_allclose([r["score"] for r in records], softmax(c32, axis=1).max(axis=1), atol=1e-12)


def test_rows_without_answer_pass_only_in_an_ood_dataset(tmp_path: Path) -> None:
    # an OOD row's label -1 is its "no answer"; an ID row of the same dataset needs one
    bad = ood_rows()
    bad["imagenet-val"][3]["is_ood"] = True  # label 3 on an OOD row
    with pytest.raises(ValueError, match="row 3: label 3 is not -1"):
        write_ood(tmp_path / "a", bad)
    # an MCQ row without answer is refused when its predictions are validated
    mcq = write_mcq(tmp_path / "mcq")
    import pyarrow.parquet as pq

    from tests.fixtures.score import mcq_features
    from vlmrobust.core.writer import BuildInfo, write_dataset

    rows = pq.read_table(next((mcq / "data" / "sample-photo-random").glob("*.parquet"))).to_pylist()
    rows[2]["answer"] = None
    write_dataset(tmp_path / "mcq2", configs={"sample-photo-random": rows}, features=mcq_features(),
                  card="x", info=BuildInfo("imagenet-mcq", "0.1.0", 0))
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], [[0.0] * 5] * len(rows))
    write_meta(preds, tmp_path / "mcq2")
    with pytest.raises(VlmrobustError, match=r"row 'sample-photo-002' has answer None, not an index "
                                             r"in 0\.\.4; every row needs its answer") as exc:
        validate(tmp_path / "mcq2", preds)
    assert "\n" not in str(exc.value)


def test_a_classification_row_without_label_is_refused(tmp_path: Path) -> None:
    from tests.fixtures.ood import SPACE, ood_features
    from vlmrobust.core.kinds import CLASSIFICATION
    from vlmrobust.core.writer import BuildInfo, write_dataset

    for label in (None, -1):
        rows = ood_rows()["imagenet-val"]
        rows[1].update(label=label, is_ood=True)  # is_ood does not excuse it outside kind ood
        with pytest.raises(ValueError, match=f"row 1: label {label} is not an index in 0..3"):
            write_dataset(tmp_path / f"c{label}", configs={"val": rows}, features=ood_features(),
                          card="x", info=BuildInfo("toy", "1", 0), kind=CLASSIFICATION,
                          label_spaces={"val": SPACE})


def test_a_fine_tuned_clip_is_scored_by_msp(tmp_path: Path) -> None:
    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    z = np.random.default_rng(3).normal(size=(len(ids), 4)) * 4  # classifier-head logits
    preds = write_logits(tmp_path / "p.parquet", ids, z)
    write_meta(preds, ds, family="clip", fine_tuned_on="imagenet-1k")  # no logit_scale needed
    block = score(ds, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert block["score"] == "msp" and "mcm" not in block["scores"] and block["logit_scale"] is None


def test_the_score_command_prints_ood_sets_and_no_accuracy_for_ood_configs(
        scored: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI's summary line: an OOD config has no accuracy (it printed None with a
    format spec, a traceback after scores.json was written); each set's AUROC is shown."""
    from vlmrobust.cli.main import main

    ds, scores, _, _ = scored
    out = tmp_path / "cli-scores.json"
    rc = main(["score", "--dataset", str(ds), "--predictions", str(tmp_path / "p.parquet"),
               "--out", str(out)])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    assert "Traceback" not in printed.err and out.is_file()
    (section,) = scores["datasets"].values()
    block = section["ood"]
    for name, s in block["sets"].items():
        assert f"{name} {s['auroc']:.3f}" in printed.out
    ood_configs = [c for c, v in section["configs"].items() if v.get("accuracy") is None]
    assert ood_configs and all(f"{c} n/a" in printed.out for c in ood_configs)


def test_ood_score_chooses_the_headline_for_clip_too(tmp_path: Path) -> None:
    """--ood-score: msp for a zero-shot CLIP keeps MCM under by_score; mcm for a
    fine-tuned CLIP without a logit scale is refused as MCM always is."""
    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    cos = np.random.default_rng(4).uniform(-0.3, 0.4, size=(len(ids), 4))
    preds = write_logits(tmp_path / "p.parquet", ids, cos * 50.0)
    write_meta(preds, ds, family="clip", logit_scale=50.0)
    block = score(ds, preds, tmp_path / "s.json", ood_score="msp")["datasets"]["ood"]["ood"]
    assert block["score"] == "msp" and "mcm" in block["scores"]
    ninco = block["sets"]["ninco"]
    assert ninco["auroc"] == ninco["by_score"]["msp"]["auroc"] != ninco["by_score"]["mcm"]["auroc"]
    write_meta(preds, ds, family="clip", fine_tuned_on="imagenet-1k")
    with pytest.raises(SubmissionError, match="has no logit_scale; MCM"):
        score(ds, preds, tmp_path / "t.json", ood_score="mcm")
    assert not (tmp_path / "t.json").exists()
