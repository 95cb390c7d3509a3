"""Tests written for the mutants that survived the mutation run over the scorer,
validate, verify and the metrics (issue 27, mutation run): each fails on the
mutant named in its docstring."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest

from tests.fixtures.score import dataset_rows, png, random_logits, write_meta, write_parquet
from tests.fixtures.submission import real_submissions
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.validate.check import validate
from vlmrobust.leaderboard.trust.verify import DatasetStore, load_verified_submissions
from vlmrobust.metrics.bench_c.ras import ras


def test_ras_of_no_change_is_positive_zero() -> None:
    """ras.py `out + 0.0` -> `out - 0.0`: −0.0 would reach scores.json as -0.0."""
    out = ras([0.0, 0.5], [0.0, 0.0])
    assert out.tolist() == [0.0, 0.0]
    assert not np.signbit(out).any()
    assert json.dumps(float(out[0])) == "0.0"


def _mcq(tmp: Path, extra: dict[str, datasets.features.features.FeatureType],
         values: dict[str, list[object]]) -> Path:
    feats = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("int32"), **extra})
    rows = [{"id": f"r{i}", "image": {"bytes": png(i), "path": None}, "question": "q?",
             "options": ["a", "b", "c"], "answer": i % 3,
             **{k: v[i] for k, v in values.items()}} for i in range(4)]
    out = tmp / "ds"
    write_dataset(out, configs={"default": rows}, features=feats, card="toy",
                  info=BuildInfo("converted", "1", 0, sample=True))
    return out


def _predict_all(ds: Path, tmp: Path) -> Path:
    rows = dataset_rows(ds)
    preds = write_parquet(tmp / "p.parquet", [r["id"] for r in rows], logits=random_logits(rows))
    write_meta(preds, ds)
    return preds


def test_source_ids_without_corruptions_are_plain_mcq(tmp_path: Path) -> None:
    """validate.py `"corruption" not in … or "source_id" not in …` -> `and`: a
    converted benchmark has source ids but no corrupted copies to pair."""
    ds = _mcq(tmp_path, {"source_id": datasets.Value("string"), "source": datasets.Value("string")},
              {"source_id": ["0", "1", "2", "3"], "source": ["mmbench"] * 4})
    report = validate(ds, _predict_all(ds, tmp_path))
    assert report.index.n_rows == 4


def test_classlabel_index_equal_to_the_name_count_is_refused(tmp_path: Path) -> None:
    """validate.py `0 <= v < len(names)` -> `<=`: index len(names) has no name."""
    ds = _mcq(tmp_path, {"variant": datasets.ClassLabel(names=["photo", "sketch"])},
              {"variant": [0, 1, 0, 1]})
    preds = _predict_all(ds, tmp_path)
    assert validate(ds, preds).index.columns["variant"].tolist() == ["photo", "sketch"] * 2
    manifest = json.loads((ds / "manifest.json").read_text())
    manifest["features"]["variant"]["names"] = ["photo"]  # index 1 now names nothing
    (ds / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(VlmrobustError, match=r"holds 1, not an index into its 1 ClassLabel names"):
        validate(ds, preds)


def test_a_damaged_folder_in_a_store_does_not_hide_the_next_one(tmp_path: Path) -> None:
    """verify.py `continue` -> `break` in DatasetStore: the scan must go on past
    a damaged candidate."""
    subs, dss = real_submissions(tmp_path / "board", 1)
    store = tmp_path / "store"
    store.mkdir()
    damaged = store / "0-damaged"
    damaged.mkdir()
    (damaged / "manifest.json").write_text("{not json")
    for ds in dss:
        shutil.copytree(ds, store / f"1-{ds.name}")
    found = DatasetStore(roots=[store])
    fps = {json.loads((ds / "manifest.json").read_text())["fingerprint"] for ds in dss}
    assert {fp for fp in fps if found.resolve(fp, tmp_path) is not None} == fps
    assert len(load_verified_submissions(subs, stores=[store])) == 1


def test_fit_temperature_when_every_row_is_one_hot_at_the_start() -> None:
    """calibration.py `g / h if h > 0` -> `h >= 0`: at β = 1 these logits give
    exactly one-hot softmaxes (exp(−800) underflows), so the curvature is 0.0
    and the Newton step must fall back to bisection, not divide by zero."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    from vlmrobust.metrics.calibration import fit_temperature

    z = np.array([[800.0, 0.0]] * 300 + [[0.0, 800.0]])
    y = np.zeros(len(z), dtype=np.int64)

    def nll(t: float) -> float:
        return float(-log_softmax(z / t, axis=1)[np.arange(len(y)), y].mean())

    t = fit_temperature(z, y)
    ref = minimize_scalar(lambda lt: nll(float(np.exp(lt))), bounds=(-5, 5), method="bounded",
                          options={"xatol": 1e-10})
    assert np.exp(-5) < t < np.exp(5)
    assert t == pytest.approx(float(np.exp(ref.x)), rel=1e-4)


def test_bootstrap_in_several_chunks_and_with_one_resample() -> None:
    """accuracy.py `stop - start` -> `stop + start` (chunked resamples of a
    large array) and `n_resamples < 1` -> `<= 1` (one resample is allowed)."""
    from vlmrobust.metrics.accuracy import accuracy_ci, bootstrap_mean_ci

    values = np.random.default_rng(3).normal(size=20_000)  # 400 resamples per chunk
    lo, hi = bootstrap_mean_ci(values, n_resamples=1000, seed=1)
    half = 1.96 * values.std() / np.sqrt(values.size)
    assert lo < values.mean() < hi
    assert (hi - lo) == pytest.approx(2 * half, rel=0.15)
    one = bootstrap_mean_ci([1.0, 2.0, 3.0], n_resamples=1, seed=0)
    assert one[0] == one[1] and 1.0 <= one[0] <= 3.0
    assert accuracy_ci([1, 0, 1], n_resamples=1)[0] in (0.0, 1 / 3, 2 / 3, 1.0)


def test_cell_index_equal_to_the_cell_count_is_refused() -> None:
    """aggregate.py `c.max() >= n_cells` -> `>`: cell n_cells does not exist."""
    from vlmrobust.metrics.bench_c.aggregate import kappa_weighted_cell_means

    with pytest.raises(ValueError, match=r"cells must be in \[0, 3\)"):
        kappa_weighted_cell_means([1.0, 2.0], [1.0, 1.0], [0, 3], 3)
    assert kappa_weighted_cell_means([1.0, 2.0], [1.0, 1.0], [0, 2], 3).shape == (3,)


def test_one_option_rows_and_out_of_range_labels() -> None:
    """uncertainty.py `arr.shape[1] < 1` -> `<= 1` (a one-option row is valid:
    p = 1, S = 0) and `y >= p.shape[1]` -> `>` (label K names no option)."""
    from vlmrobust.metrics.uncertainty import calibration_error, normalized_entropy, softmax

    assert softmax([[0.3]]).tolist() == [[1.0]]
    assert normalized_entropy(softmax([[0.3]])).tolist() == [0.0]
    with pytest.raises(ValueError, match=r"labels must be in \[0, 2\), got 2"):
        calibration_error([[0.9, 0.1]], [2])


def test_logit_of_certainty_is_finite() -> None:
    """transforms.py clip to `1.0 - EPS` -> `1.0 + EPS`: logit(1) would be inf."""
    from vlmrobust.metrics.transforms import EPS, logit

    assert np.isfinite(logit(1.0)) and float(logit(1.0)) == float(logit(1.0 - EPS))


def test_no_cells_is_an_empty_result() -> None:
    """aggregate.py `n_cells < 0` -> `<= 0`: zero cells (no rows) is valid."""
    from vlmrobust.metrics.bench_c.aggregate import kappa_weighted_cell_means

    assert kappa_weighted_cell_means([], [], [], 0).shape == (0,)


def test_imagenet_val_without_imagenet_x_installed_has_no_factors(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """score.py `annotations is None or …` -> `and`: without the imagenet-x
    package (a light install) an imagenet-val config is scored without factors,
    not with a crash."""
    import pyarrow as pa

    import vlmrobust.evaluation.scoring.factors as factor_scores
    from vlmrobust.evaluation.scoring.dataset import score_tables

    monkeypatch.setattr(factor_scores, "packaged_annotations", lambda which="top": None)
    ids = [f"v{i}" for i in range(4)]
    dataset = pa.table({"id": ids, "options": [["a", "b"]] * 4, "answer": [0, 1, 0, 1],
                        "variant": ["imagenet-val"] * 4, "distractors": ["wordnet"] * 4,
                        "source_file": [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(4)]})
    manifest = {"spec": {"name": "imagenet-mcq", "version": "1"}, "fingerprint": "f",
                "reference_variant": "imagenet-val", "configs": {"imagenet-val-wordnet": 4}}
    scores = score_tables(dataset, manifest, pa.table({"id": ids, "logits": [[1.0, 0.0]] * 4}))
    cfg = scores["datasets"]["imagenet-mcq"]["configs"]["imagenet-val-wordnet"]
    assert cfg["accuracy"] == 0.5 and "factors" not in cfg
