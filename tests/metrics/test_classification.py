"""Full-label-space metrics (issue 23) against independent implementations:
torchmetrics' multiclass ECE, scipy's log-sum-exp NLL, sklearn's recall, a
brute-force NLL grid for the temperature, and chi-square for label subsets."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy import special, stats
from sklearn.metrics import balanced_accuracy_score, recall_score

from vlmrobust.metrics import calibration
from vlmrobust.metrics.classification import (
    binned_ece,
    fit_temperature,
    half_temperature,
    mean_per_class_accuracy,
    per_class_accuracy,
    row_scores,
    score_logits,
    subset_accuracy,
    subset_predictions,
    top1_accuracy,
)
from vlmrobust.metrics.subsets import label_subset, label_subsets, split_half

C = 1000


def _logits(n: int, c: int = C, seed: int = 0, scale: float = 3.0,
            dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Logits with a real signal: the label's logit is raised, so accuracy and
    confidence spread over the bins instead of sitting near 1/C."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    z = rng.normal(size=(n, c)) * scale
    z[np.arange(n), y] += rng.uniform(0, 4 * scale, size=n)
    return z.astype(dtype), y


def _ece_loop(conf: np.ndarray, correct: np.ndarray, n_bins: int) -> float:
    """Plain-python ECE over [b/B, (b+1)/B) bins, conf == 1 alone (torchmetrics' convention)."""
    total = 0.0
    for b in range(n_bins + 1):
        lo, hi = b / n_bins, (b + 1) / n_bins
        members = [i for i in range(len(conf)) if lo <= conf[i] < hi or (b == n_bins and conf[i] == 1.0)]
        if members:
            acc = sum(correct[i] for i in members) / len(members)
            mean_conf = sum(conf[i] for i in members) / len(members)
            total += len(members) / len(conf) * abs(acc - mean_conf)
    return total


@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_full_label_ece_equals_torchmetrics(temperature: float) -> None:
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.functional.classification")
    z, y = _logits(3000, seed=1)
    s = score_logits(z, y, temperature=temperature)
    probs = torch.softmax(torch.from_numpy(z.astype(np.float64)) / temperature, dim=1)
    ref = float(tm.multiclass_calibration_error(probs, torch.from_numpy(y), num_classes=C,
                                                n_bins=15, norm="l1"))
    assert s.ece == pytest.approx(ref, abs=1e-5)
    assert 0.01 < s.ece < 0.9  # a real miscalibration, not a degenerate 0


def test_binned_ece_equals_a_plain_python_loop() -> None:
    rng = np.random.default_rng(2)
    conf = rng.uniform(0, 1, size=2000)
    conf[:5] = [0.0, 1.0, 1 / 3, 0.2, 0.4]  # zero, one, and confidences near inner edges
    correct = rng.uniform(size=2000) < conf
    for bins in (1, 10, 15):
        assert binned_ece(conf, correct, bins) == pytest.approx(_ece_loop(conf, correct, bins), abs=1e-12)


def test_nll_and_accuracy_equal_direct_computations() -> None:
    z, y = _logits(2000, seed=3)
    for t in (1.0, 0.7, 4.0):
        zt = z.astype(np.float64) / t
        direct = -(zt[np.arange(len(y)), y] - special.logsumexp(zt, axis=1)).mean()
        assert score_logits(z, y, temperature=t).nll == pytest.approx(direct, rel=1e-12)
    acc = float((z.argmax(axis=1) == y).mean())
    assert top1_accuracy(z, y) == acc == score_logits(z, y).accuracy
    assert 0.05 < acc < 0.95


def test_row_scores_are_stable_for_huge_logits() -> None:
    z = np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 999.0]])
    r = row_scores(z, [0, 2])
    assert r.prediction.tolist() == [0, 1]
    assert np.isfinite(r.log_prob_label).all()
    assert r.log_prob_label[1] == pytest.approx(-np.log1p(np.e))  # log(e^999 / (e^1000 + e^999))
    assert r.confidence[0] == 1.0


def test_chunked_equals_unchunked() -> None:
    z, y = _logits(503, seed=4)
    whole = score_logits(z, y, temperature=1.3, chunk_rows=10_000)
    for rows in (1, 7, 100):
        part = score_logits(z, y, temperature=1.3, chunk_rows=rows)
        assert part.accuracy == whole.accuracy
        assert part.ece == pytest.approx(whole.ece, abs=1e-15)
        assert part.nll == pytest.approx(whole.nll, rel=1e-15)
        assert top1_accuracy(z, y, chunk_rows=rows) == whole.accuracy
        assert fit_temperature(z, y, chunk_rows=rows) == pytest.approx(
            fit_temperature(z, y, chunk_rows=10_000), rel=1e-9)


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_per_class_accuracy_equals_sklearn_recall() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(0, 40, size=3000)  # classes 40..49 have no rows
    pred = np.where(rng.uniform(size=3000) < 0.6, y, rng.integers(0, 50, size=3000))
    acc = per_class_accuracy(pred, y, 50)
    assert np.isnan(acc[40:]).all()
    present = np.arange(40)
    assert np.allclose(acc[:40], recall_score(y, pred, labels=present, average=None, zero_division=0))
    assert mean_per_class_accuracy(pred, y, 50) == pytest.approx(balanced_accuracy_score(y, pred))
    assert np.isnan(mean_per_class_accuracy(np.array([], dtype=int), np.array([], dtype=int), 3))


def test_fitted_temperature_matches_a_brute_force_grid() -> None:
    z, y = _logits(800, seed=6, scale=2.0)
    z64 = z.astype(np.float64)
    t = fit_temperature(z, y, chunk_rows=256)
    log_t = np.linspace(-3, 3, 6001)  # step 0.001 in log T

    def nll(temp: float) -> float:
        zt = z64 / temp
        return float(-(zt[np.arange(len(y)), y] - special.logsumexp(zt, axis=1)).mean())

    grid = np.array([nll(float(np.exp(v))) for v in log_t[::50]])  # coarse pass, then refine
    best = log_t[::50][grid.argmin()]
    fine = log_t[np.abs(log_t - best) <= 0.05]
    best = fine[np.argmin([nll(float(np.exp(v))) for v in fine])]
    assert abs(np.log(t) - best) <= 0.0011
    assert nll(t) <= min(nll(float(np.exp(best))), nll(1.0)) + 1e-9
    assert t != pytest.approx(1.0, abs=0.05)  # the fixture is miscalibrated: T moves
    # the K-option solver agrees on the same rows
    assert t == pytest.approx(calibration.fit_temperature(z64, y), rel=1e-6)


def test_half_temperature_fits_on_the_seeded_half_only() -> None:
    z, y = _logits(400, seed=7)
    fit = half_temperature(z, y, seed=11)
    a, b = split_half(400, 11)
    assert fit.fit_rows.tolist() == a.tolist() and fit.held_out_rows.tolist() == b.tolist()
    assert fit.temperature == pytest.approx(fit_temperature(z[a], y[a]), rel=1e-12)
    assert fit.temperature != pytest.approx(fit_temperature(z[b], y[b]), rel=1e-6)
    perfect = np.eye(4)[np.array([0, 1, 2, 3] * 3)] * 5.0
    none = half_temperature(perfect, np.array([0, 1, 2, 3] * 3), seed=0)
    assert none.temperature is None and none.reason == calibration.NO_ERRORS


def test_split_half_is_per_item_and_seeded() -> None:
    keys = [f"val/{i:08d}.JPEG" for i in range(1001)]
    a, b = split_half(1001, 5, keys)
    assert len(a) == 500 and len(b) == 501 and not set(a.tolist()) & set(b.tolist())
    assert (split_half(1001, 5, keys)[0] == a).all()
    assert not (split_half(1001, 6, keys)[0] == a).all()
    # the half of an item follows its key, not its position
    perm = np.random.default_rng(0).permutation(1001)
    a2, _ = split_half(1001, 5, [keys[i] for i in perm])
    assert sorted(keys[perm[i]] for i in a2) == sorted(keys[i] for i in a)
    # not a contiguous block: both halves span the rows
    assert a.min() < 50 and a.max() > 950 and b.min() < 50 and b.max() > 950


def test_label_subsets_hold_the_truth_and_uniform_others() -> None:
    n_classes, k, draws = 50, 5, 20_000
    counts = np.zeros(n_classes)
    for i in range(draws):
        label = i % n_classes
        s = label_subset(label, n_classes, k, seed=3, item_key=f"img{i}")
        assert len(s) == k == len(set(s.tolist())) and label in s.tolist()
        assert (np.diff(s) > 0).all() and s.min() >= 0 and s.max() < n_classes
        counts[s] += 1
        counts[label] -= 1
    # each class is a distractor in 1 − 1/C of the rows, k − 1 draws each
    expected = np.full(n_classes, draws * (k - 1) / n_classes)
    assert counts.sum() == expected.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    # the distractors of one fixed label are uniform over the other C − 1 classes
    fixed = np.zeros(n_classes)
    for i in range(5000):
        fixed[label_subset(0, n_classes, k, seed=9, item_key=str(i))] += 1
    assert fixed[0] == 5000
    assert stats.chisquare(fixed[1:]).pvalue > 1e-3


def test_label_subset_is_deterministic_per_item() -> None:
    s = label_subset(3, 1000, 20, seed=1, item_key="a")
    assert (s == label_subset(3, 1000, 20, seed=1, item_key="a")).all()
    assert not (s == label_subset(3, 1000, 20, seed=1, item_key="b")).all()
    assert not (s == label_subset(3, 1000, 20, seed=2, item_key="a")).all()
    assert label_subset(3, 10, 10, 0, "a").tolist() == list(range(10))
    assert label_subset(3, 10, 1, 0, "a").tolist() == [3]


def test_subset_scoring_reads_the_top_class_of_each_rows_label_set() -> None:
    z, y = _logits(600, c=100, seed=8)
    keys = [f"img{i}" for i in range(600)]
    for k in (2, 5, 20):
        sets = label_subsets(y, 100, k, seed=4, keys=keys)
        assert all((sets[i] == label_subset(int(y[i]), 100, k, 4, keys[i])).all() for i in (0, 599))
        loop = [int(sets[i][int(np.argmax(z[i, sets[i]]))]) for i in range(600)]
        pred = subset_predictions(z, sets, chunk_rows=13)
        assert pred.tolist() == loop
        acc = subset_accuracy(z, y, sets)
        assert acc == float(np.mean(np.array(loop) == y))
        # a set that holds the truth can only turn wrong answers right
        full_right = z.argmax(axis=1) == y
        assert (pred[full_right] == y[full_right]).all() and acc >= top1_accuracy(z, y)
    every = np.tile(np.arange(100), (600, 1))
    assert subset_accuracy(z, y, every) == top1_accuracy(z, y)
    assert subset_accuracy(z, y, label_subsets(y, 100, 2, 4, keys)) > subset_accuracy(
        z, y, label_subsets(y, 100, 20, 4, keys)) > top1_accuracy(z, y)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: score_logits([[0.0, np.nan], [1.0, 2.0]], [0, 0]), "row 0 holds NaN"),
    (lambda: score_logits([[0.0, 1.0], [1.0, np.inf]], [0, 0], chunk_rows=1), "row 1 holds NaN or inf"),
    (lambda: score_logits([[0.0, 1.0]], [2]), "row 0 holds 2"),
    (lambda: score_logits([[0.0, 1.0]], [0], temperature=0.0), "temperature must be"),
    (lambda: score_logits([0.0, 1.0], [0]), "got shape (2,)"),
    (lambda: top1_accuracy([[0.0, 1.0]], [0], chunk_rows=0), "chunk_rows must be an int >= 1"),
    (lambda: binned_ece([1.5], [1]), "got 1.5"),
    (lambda: label_subset(0, 10, 11, 0, "a"), "k must be in [1, 10]"),
    (lambda: label_subset(10, 10, 2, 0, "a"), "got 10"),
    (lambda: label_subset(0, 10, 2, 0, ""), "item_key"),
    (lambda: split_half(2, 0, ["a", "a"]), "distinct"),
    (lambda: per_class_accuracy([0, 1], [0, 5], 3), "row 1 holds 5"),
    (lambda: subset_accuracy([[0.0, 1.0, 2.0]] * 2, [0, 1], [[0, 2], [0, 2]]), "row 1 lacks 1"),
    (lambda: subset_predictions([[0.0, 1.0]], [[0, 3]]), "row 0 holds 3"),
    (lambda: subset_predictions([[0.0, 1.0]], [0, 1]), "got int64 of shape (2,)"),
])
def test_bad_input_names_the_value(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        call()  # type: ignore[operator]
