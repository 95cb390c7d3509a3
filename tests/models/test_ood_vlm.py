"""A VLM on an ood dataset end to end (issue 24's leftover): a tiny random
LLaVA through `vlmrobust predict` (a reader that gives logits over the label
space) and `vlmrobust score`; the scores.json numbers equal scikit-learn's on
the softmax max of the predictions file's own logits (ID positive), and the
refusals that apply to a VLM do: a text-only reader before anything is written,
MCM (zero-shot CLIP's score) for a model that is not CLIP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.special import logsumexp, softmax
from sklearn.metrics import roc_auc_score, roc_curve

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.ood import dataset_ids, write_ood
from vlmrobust.cli.main import main
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.scoring.rows.results import rows_path


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vlm_fixtures.make_llava(tmp_path_factory.mktemp("llava") / "m")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ood(tmp_path_factory.mktemp("ood") / "ds")


def _predict(llava: Path, dataset: Path, out: Path, mode: str) -> int:
    return main(["predict", "--model", f"vlm:{llava}", "--dataset", str(dataset), "--out",
                 str(out), "--mode", mode, "--device", "cpu", "--threads", "1", "--no-progress"])


def _sk(id_s: np.ndarray[Any, Any], ood_s: np.ndarray[Any, Any]) -> tuple[float, float]:
    """AUROC (ID positive) and FPR at the first ROC point with TPR >= 0.95."""
    y = np.r_[np.ones(id_s.size), np.zeros(ood_s.size)]
    s = np.r_[id_s, ood_s]
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    return float(roc_auc_score(y, s)), float(fpr[np.searchsorted(tpr, 0.95)])


@pytest.fixture(scope="module")
def predicted(llava: Path, dataset: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("preds")
    paths = {}
    for mode in ("likelihood:avg", "letter", "likelihood:sum"):
        path = out / f"{mode.replace(':', '-')}.parquet"
        assert _predict(llava, dataset, path, mode) == 0
        paths[mode] = path
    return paths


@pytest.mark.parametrize("mode", ["likelihood:avg", "letter"])
def test_vlm_msp_auroc_equals_sklearn_on_the_predictions_logits(
        predicted: dict[str, Path], dataset: Path, tmp_path: Path, mode: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    preds = predicted[mode]
    meta = read_prediction_meta(preds)
    assert meta["family"] == "vlm" and meta["mode"] == mode and meta["kind"] == "ood"
    # the label-space prompt its calls were rendered from, not the MCQ default
    assert meta["prompt_id"] == "what-type"
    assert all(r["prompt_text"].count("What type of object is in this photo?") == 1
               for r in pq.read_table(preds).to_pylist())
    out = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(dataset), "--predictions", str(preds),
                 "--out", str(out)]) == 0
    assert "OOD (msp) AUROC" in capsys.readouterr().out
    block = json.loads(out.read_text())["datasets"]["ood"]["ood"]
    assert block["score"] == "msp" and "mcm" not in block["scores"]

    table = pq.read_table(preds).to_pylist()
    logits = {r["id"]: np.asarray(r["logits"], dtype=np.float64) for r in table}
    rows = dataset_ids(dataset)
    assert sorted(logits) == sorted(r[1] for r in rows)
    assert {v.size for v in logits.values()} == {4}  # one logit per class of the label space
    z = np.stack([logits[r[1]] for r in rows])
    msp = softmax(z, axis=1).max(axis=1)
    assert np.ptp(msp) > 1e-6  # a tiny random model still separates rows: the test can fail
    is_ood = np.array([r[2] for r in rows])
    source = np.array([r[1].split("-")[0] for r in rows])
    for name, prefix in (("textures", "tex"), ("ninco", "ninco")):
        got = block["sets"][name]
        want_auroc, want_fpr = _sk(msp[~is_ood], msp[source == prefix])
        assert got["auroc"] == pytest.approx(want_auroc, abs=1e-9)
        assert got["fpr95"] == pytest.approx(want_fpr, abs=1e-9)
        assert got["auroc_ci"][0] <= got["auroc"] <= got["auroc_ci"][1]
        energy = logsumexp(z, axis=1)
        assert got["by_score"]["energy"]["auroc"] == pytest.approx(
            _sk(energy[~is_ood], energy[source == prefix])[0], abs=1e-9)
    # a flipped orientation (OOD positive) would show: not every set sits at 0.5
    assert max(abs(block["sets"][n]["auroc"] - 0.5) for n in ("textures", "ninco")) > 0.1
    ninco_class = np.array(["c" + r[1].split("-")[1] if r[1].startswith("ninco") else "" for r in rows])
    loop = [roc_auc_score(np.r_[np.ones((~is_ood).sum()), np.zeros((ninco_class == c).sum())],
                          np.r_[msp[~is_ood], msp[ninco_class == c]]) for c in ("c0", "c1")]
    assert block["sets"]["ninco"]["class_mean_auroc"] == pytest.approx(np.mean(loop), abs=1e-9)
    labels = np.array([int(r[1].split("-")[1]) % 4 if not r[2] else -1 for r in rows])
    assert block["id_accuracy"] == pytest.approx(float((z[~is_ood].argmax(1) == labels[~is_ood]).mean()))
    scored = {json.loads(x)["id"]: json.loads(x) for x in rows_path(out).read_text().splitlines()}
    np.testing.assert_allclose([scored[r[1]]["score"] for r in rows], msp, rtol=1e-6, atol=1e-9)


def test_a_chosen_headline_score_is_scored(predicted: dict[str, Path], dataset: Path,
                                           tmp_path: Path) -> None:
    preds = predicted["likelihood:avg"]
    out = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(dataset), "--predictions", str(preds), "--out",
                 str(out), "--ood-score", "max_logit"]) == 0
    block = json.loads(out.read_text())["datasets"]["ood"]["ood"]
    assert block["score"] == "max_logit"
    rows = dataset_ids(dataset)
    by_id = {r["id"]: max(r["logits"]) for r in pq.read_table(preds).to_pylist()}
    z = np.array([by_id[r[1]] for r in rows], dtype=np.float64)
    is_ood = np.array([r[2] for r in rows])
    tex = np.array([r[1].startswith("tex") for r in rows])
    assert block["sets"]["textures"]["auroc"] == pytest.approx(_sk(z[~is_ood], z[tex])[0], abs=1e-9)
    assert block["sets"]["textures"]["auroc"] == block["sets"]["textures"]["by_score"]["max_logit"]["auroc"]


def test_mcm_for_a_vlm_is_refused_in_one_line(predicted: dict[str, Path], dataset: Path,
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scores.json"
    rc = main(["score", "--dataset", str(dataset), "--predictions",
               str(predicted["likelihood:avg"]), "--out", str(out), "--ood-score", "mcm"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "\n" not in err and "Traceback" not in err
    assert "--ood-score mcm" in err and "family 'vlm'" in err and "use --ood-score msp" in err
    assert not list(tmp_path.iterdir())


def test_ood_score_on_a_dataset_that_is_not_ood_is_refused(tmp_path: Path) -> None:
    from tests.fixtures.score import write_mcq, write_meta, write_parquet
    from vlmrobust.core.errors import SubmissionError
    from vlmrobust.evaluation.scoring.dataset import score

    ds = write_mcq(tmp_path / "mcq")
    manifest = json.loads((ds / "manifest.json").read_text())
    ids = [i for c in manifest["configs"] for shard in sorted((ds / "data" / c).glob("*.parquet"))
           for i in pq.read_table(shard, columns=["id"]).column("id").to_pylist()]
    preds = write_parquet(tmp_path / "p.parquet", ids, [[0.0] * 5] * len(ids))
    write_meta(preds, ds)
    with pytest.raises(SubmissionError, match=r"is not an ood dataset.*drop --ood-score"):
        score(ds, preds, tmp_path / "s.json", ood_score="msp")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("mode", ["generate", "open-world"])
def test_a_text_reader_on_an_ood_dataset_is_refused_before_anything_is_written(
        llava: Path, dataset: Path, tmp_path: Path, mode: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.parquet"
    rc = _predict(llava, dataset, out, mode)
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "\n" not in err and "Traceback" not in err
    assert f"--mode {mode} answers in text" in err and "likelihood:sum" in err
    assert not list(tmp_path.iterdir())  # no predictions, no .partial journal


def test_msp_over_summed_likelihoods_saturates_as_the_readme_says(
        predicted: dict[str, Path], dataset: Path) -> None:
    """README: on the tiny LLaVA, MSP over likelihood:sum lies within 1e-10 of 1 on
    every row; likelihood:avg keeps rows apart; energy does not saturate."""
    rows = [r[1] for r in dataset_ids(dataset)]

    def logits(mode: str) -> np.ndarray[Any, Any]:
        by_id = {r["id"]: r["logits"] for r in pq.read_table(predicted[mode]).to_pylist()}
        return np.array([by_id[i] for i in rows], dtype=np.float64)

    total, avg = logits("likelihood:sum"), logits("likelihood:avg")
    assert np.all(1.0 - softmax(total, axis=1).max(axis=1) < 1e-10)
    assert np.ptp(softmax(avg, axis=1).max(axis=1)) > 1e-3
    assert np.ptp(logsumexp(total, axis=1)) > 1e-3
