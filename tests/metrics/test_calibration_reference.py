"""Calibration as seed 001 measures it: T fitted on the reference variant and
applied to the shifted ones (beside the per-config cross-fit), fits without
errors reported as not estimable, and ECE's bin-edge convention."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

from vlmrobust.evaluation.scoring.dataset import score_tables
from vlmrobust.metrics.calibration import (
    NO_ERRORS,
    calibration_report,
    expected_calibration_error,
)


def _nll(z: np.ndarray, y: np.ndarray, t: float) -> float:
    return float(-log_softmax(z / t, axis=1)[np.arange(len(y)), y].mean())


def _ece_left_closed(p: np.ndarray, y: np.ndarray, bins: int) -> float:
    """Independent ECE with [lo, hi) bins (torchmetrics' convention)."""
    conf, ok = p.max(1), (p.argmax(1) == y)
    idx = np.minimum((conf * bins).astype(int), bins - 1)
    return float(sum(abs(ok[idx == b].mean() - conf[idx == b].mean()) * (idx == b).mean()
                     for b in range(bins) if (idx == b).any()))


def test_ece_bin_edges_are_right_closed() -> None:
    # 0.6 sits exactly on an inner edge of 5 bins: (0.4, 0.6] here, [0.6, 0.8) there
    p = np.array([[0.6, 0.4], [0.6, 0.4], [0.7, 0.3]])
    y = np.array([0, 1, 0])
    ours = expected_calibration_error(p, y, n_bins=5)
    # here: bins (0.4,0.6] = {0.6, 0.6} acc 0.5 and (0.6,0.8] = {0.7} acc 1
    assert ours == pytest.approx((2 / 3) * 0.1 + (1 / 3) * 0.3)
    # left-closed puts all three in [0.6, 0.8): |2/3 − 0.6333|
    assert _ece_left_closed(p, y, 5) == pytest.approx(abs(2 / 3 - 1.9 / 3))
    q = np.array([[0.55, 0.45], [0.93, 0.07], [0.71, 0.29]])  # no value on an edge
    assert expected_calibration_error(q, y, 5) == pytest.approx(_ece_left_closed(q, y, 5))


def test_cross_fit_half_without_errors_is_not_estimable() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1, (40, 5))
    y = z.argmax(1)  # a perfect model: every half is error-free
    y[0] = (y[0] + 1) % 5  # one mistake: at most one half has it
    r = calibration_report(z * 4, y, seed=3)
    assert r.ece_ts is None and r.nll_ts is None and r.temperature is None
    assert r.ts_reason == NO_ERRORS
    assert r.nll == pytest.approx(_nll(z * 4, y, 1.0))  # the raw numbers stay


def _table(n_ref: int, n_shift: int, rng: np.random.Generator) -> tuple[pa.Table, list, list]:
    ids, variant, answer, logits = [], [], [], []
    for v, n, noise in (("imagenet-val", n_ref, 1.0), ("imagenet-r", n_shift, 2.5)):
        for i in range(n):
            y = int(rng.integers(5))
            z = rng.normal(0, noise, 5)
            z[y] += 2.0
            ids.append(f"{v}-wordnet-{i}")
            variant.append(v)
            answer.append(y)
            logits.append((3.0 * z).tolist())  # overconfident: T* > 1
    table = pa.table({"id": ids, "options": [["a", "b", "c", "d", "e"]] * len(ids),
                      "answer": answer, "variant": variant, "distractors": ["wordnet"] * len(ids),
                      "config": [f"{v}-wordnet" for v in variant]})
    return table, logits, answer


def test_reference_temperature_applied_to_shift_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    table, logits, answer = _table(300, 200, rng)
    manifest = {"spec": {"name": "imagenet-mcq", "version": "1"}, "fingerprint": "f",
                "reference_variant": "imagenet-val",
                "configs": {"imagenet-val-wordnet": 300, "imagenet-r-wordnet": 200}}
    preds = pa.table({"id": table.column("id"), "logits": logits})
    cfgs = score_tables(table, manifest, preds, "m")["datasets"]["imagenet-mcq"]["configs"]
    z, y = np.array(logits), np.array(answer)
    ref, sh = slice(0, 300), slice(300, 500)
    t = minimize_scalar(lambda lt: _nll(z[ref], y[ref], float(np.exp(lt))), bounds=(-5, 5),
                        method="bounded", options={"xatol": 1e-10}).x
    t = float(np.exp(t))
    shifted = cfgs["imagenet-r-wordnet"]
    assert shifted["temperature_ref"] == pytest.approx(t, rel=1e-5)
    assert shifted["nll_ref_ts"] == pytest.approx(_nll(z[sh], y[sh], t), rel=1e-6)
    p = np.exp(log_softmax(z[sh] / t, axis=1))
    assert shifted["ece_ref_ts"] == pytest.approx(expected_calibration_error(p, y[sh]), rel=1e-6)
    assert shifted["temperature_ref"] > 1 and shifted["nll_ref_ts"] < shifted["nll"]
    # the per-config cross-fit stays beside it
    assert shifted["temperature"] is not None and shifted["temperature"] != shifted["temperature_ref"]
    reference = cfgs["imagenet-val-wordnet"]
    assert reference["nll_ref_ts"] == reference["nll_ts"]  # no row scaled by a T it fitted


def test_reference_without_errors_is_not_estimable() -> None:
    rng = np.random.default_rng(2)
    table, logits, answer = _table(20, 20, rng)
    for i in range(20):  # the reference rows become error-free
        logits[i] = [30.0 if j == answer[i] else 0.0 for j in range(5)]
    manifest = {"spec": {"name": "imagenet-mcq", "version": "1"}, "fingerprint": "f",
                "reference_variant": "imagenet-val",
                "configs": {"imagenet-val-wordnet": 20, "imagenet-r-wordnet": 20}}
    preds = pa.table({"id": table.column("id"), "logits": logits})
    cfgs = score_tables(table, manifest, preds, "m")["datasets"]["imagenet-mcq"]["configs"]
    shifted = cfgs["imagenet-r-wordnet"]
    assert shifted["temperature_ref"] is None and shifted["nll_ref_ts"] is None
    assert shifted["ref_ts_note"] == NO_ERRORS
    assert cfgs["imagenet-val-wordnet"]["nll_ts"] is None  # cross-fit: same verdict
