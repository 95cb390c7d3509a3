"""OOD scores and detection metrics against scikit-learn and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special
from sklearn.metrics import roc_auc_score, roc_curve

from vlmrobust.metrics.holistic.ood import (
    auroc,
    class_mean_auroc,
    fpr_at_tpr,
    ood_bootstrap_ci,
    per_class_auroc,
)
from vlmrobust.metrics.holistic.ood_scores import clip_cosines, energy_score, max_logit, mcm, msp


def _sk_auroc(x: np.ndarray, y: np.ndarray) -> float:
    labels = np.r_[np.ones(x.size), np.zeros(y.size)]
    return float(roc_auc_score(labels, np.r_[x, y]))


def _sk_fpr(x: np.ndarray, y: np.ndarray, tpr: float = 0.95) -> float:
    labels = np.r_[np.ones(x.size), np.zeros(y.size)]
    fpr, tpr_curve, _ = roc_curve(labels, np.r_[x, y], drop_intermediate=False)
    return float(fpr[np.searchsorted(tpr_curve, tpr, side="left")])


def _fixtures() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    out = []
    for n, m in [(1, 1), (3, 5), (20, 20), (57, 133), (400, 250)]:
        out.append((rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, m)))  # continuous
        out.append((rng.integers(0, 4, n).astype(float), rng.integers(0, 4, m).astype(float)))  # ties
    out.append((np.full(10, 0.5), np.full(7, 0.5)))  # all tied: 0.5, FPR 1
    out.append((np.arange(10.0), np.arange(10.0) + 100))  # perfectly wrong
    return out


@pytest.mark.parametrize("x, y", _fixtures())
def test_auroc_equals_sklearn_ties_included(x: np.ndarray, y: np.ndarray) -> None:
    assert auroc(x, y) == pytest.approx(_sk_auroc(x, y), abs=1e-12)


@pytest.mark.parametrize("x, y", _fixtures())
@pytest.mark.parametrize("tpr", [0.95, 0.5, 0.8, 1.0])
def test_fpr_equals_sklearn_roc_curve_first_point_reaching_tpr(
        x: np.ndarray, y: np.ndarray, tpr: float) -> None:
    assert fpr_at_tpr(x, y, tpr) == pytest.approx(_sk_fpr(x, y, tpr), abs=1e-12)


def test_auroc_pair_count_closed_form() -> None:
    x, y = np.array([3.0, 2.0, 2.0, 0.0]), np.array([2.0, 1.0, 5.0])
    wins = sum((a > b) + 0.5 * (a == b) for a in x for b in y)
    assert auroc(x, y) == wins / 12 == pytest.approx(5.0 / 12)


def test_fpr_threshold_rule_by_hand() -> None:
    # 20 ID scores 1..20: keeping 19 (95%) puts t* at 2; OOD at or above 2 count
    assert fpr_at_tpr(np.arange(1.0, 21.0), [1.9, 2.0, 2.1, 25.0]) == 0.75
    # 19 ID scores: 95% needs 18.05, so 19 rows are kept: t* = the minimum, 1
    assert fpr_at_tpr(np.arange(1.0, 20.0), [1.0, 0.5]) == 0.5
    # an ID tie at t* keeps the whole tie (here TPR jumps from 0.9 to 1.0)
    assert fpr_at_tpr([5.0] * 2 + list(range(6, 24)), [5.0, 4.0]) == 0.5


def test_class_mean_auroc_equals_direct_loop() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 6, 300).astype(float)
    classes = np.array([f"c{i}" for i in rng.integers(0, 5, 170)])
    y = rng.integers(0, 6, 170).astype(float) - (classes == "c1")  # one class easier
    per = {c: _sk_auroc(x, y[classes == c]) for c in sorted(set(classes))}
    got = per_class_auroc(x, y, classes)
    assert list(got) == list(per)
    assert got == pytest.approx(per, abs=1e-12)
    assert class_mean_auroc(x, y, classes) == pytest.approx(np.mean(list(per.values())), abs=1e-12)
    # class mean is not the pooled AUROC when classes differ in size and difficulty
    assert abs(class_mean_auroc(x, y, classes) - auroc(x, y)) > 1e-6


def test_bootstrap_ci_matches_naive_resampling() -> None:
    rng = np.random.default_rng(11)
    x, y = rng.normal(1, 1, 60).round(1), rng.normal(0, 1, 40).round(1)
    lo, hi = ood_bootstrap_ci(x, y, "auroc", n_resamples=300, seed=5)
    # same seed, the same draw order (ID indices, then OOD indices), sklearn per replicate
    g = np.random.default_rng(5)
    reps = []
    for _ in range(300):
        xi = x[g.integers(0, 60, size=60)]
        yi = y[g.integers(0, 40, size=40)]
        reps.append(_sk_auroc(xi, yi))
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-12)
    assert lo < auroc(x, y) < hi


def test_bootstrap_ci_fpr_and_class_mean() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(2, 1, 200), rng.normal(0, 1, 150)
    classes = np.repeat(["a", "b", "c"], 50)
    lo, hi = ood_bootstrap_ci(x, y, "fpr", n_resamples=200, seed=1)
    assert lo <= fpr_at_tpr(x, y) <= hi and hi - lo > 0
    g = np.random.default_rng(1)
    reps = [_sk_fpr(x[g.integers(0, 200, 200)], y[g.integers(0, 150, 150)]) for _ in range(200)]
    assert (lo, hi) == pytest.approx(tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-12)
    clo, chi = ood_bootstrap_ci(x, y, "class_mean_auroc", ood_classes=classes, n_resamples=200)
    assert clo < class_mean_auroc(x, y, classes) < chi
    assert ood_bootstrap_ci(x, y, "auroc", seed=4) == ood_bootstrap_ci(x, y, "auroc", seed=4)


def test_bootstrap_class_mean_keeps_every_class_size() -> None:
    # one tiny class: an unstratified resample would often drop it (mean of 2 classes)
    x = np.zeros(30)
    y = np.r_[np.full(40, 1.0), [-1.0]]  # class a: AUROC 0; class b (1 row): AUROC 1
    classes = np.r_[["a"] * 40, ["b"]]
    assert ood_bootstrap_ci(x, y, "class_mean_auroc", ood_classes=classes) == (0.5, 0.5)


def test_scores_closed_forms() -> None:
    z = np.array([[2.0, 0.0, -1.0], [0.0, 0.0, -np.inf]])
    p = special.softmax(np.array([2.0, 0.0, -1.0]))
    assert msp(z).tolist() == pytest.approx([p.max(), 0.5])
    assert msp(z, temperature=2.0)[0] == pytest.approx(special.softmax(z[0] / 2).max())
    assert max_logit(z).tolist() == [2.0, 0.0]
    assert energy_score(z).tolist() == pytest.approx(
        [special.logsumexp([2.0, 0.0, -1.0]), np.log(2.0)])
    assert energy_score(z, 3.0)[0] == pytest.approx(3.0 * special.logsumexp(z[0] / 3.0))
    # stable far from zero, where exp would overflow
    assert energy_score([[1000.0, 1000.0]])[0] == pytest.approx(1000.0 + np.log(2.0))


def test_mcm_undoes_clip_logit_scale() -> None:
    rng = np.random.default_rng(0)
    img = rng.normal(size=(4, 8))
    txt = rng.normal(size=(5, 8))
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    txt /= np.linalg.norm(txt, axis=1, keepdims=True)
    cos = img @ txt.T
    logits = 100.0 * cos
    want = [np.exp(c).max() / np.exp(c).sum() for c in cos]  # τ = 1 by hand
    assert mcm(clip_cosines(logits, 100.0)).tolist() == pytest.approx(want)
    # MSP on the scaled logits is a different (much sharper) score
    assert not np.allclose(msp(logits), want)


@pytest.mark.parametrize("tau", [0.5, 2.0])
def test_mcm_temperature_is_applied(tau: float) -> None:
    """MCM = max_k softmax(cos / τ)_k for τ ≠ 1 too (scipy's softmax), not τ = 1 always."""
    cos = np.array([[0.3, -0.2, 0.1], [0.9, 0.9, -np.inf]])
    want = special.softmax(np.array([0.3, -0.2, 0.1]) / tau).max()
    got = mcm(cos, tau=tau)
    assert got[0] == pytest.approx(want, abs=1e-12)
    assert got[1] == pytest.approx(0.5, abs=1e-12)  # a tie stays 1/2 at every τ
    assert abs(got[0] - mcm(cos)[0]) > 1e-3


@pytest.mark.parametrize("call, match", [
    (lambda: auroc([], [1.0]), "id_scores is empty"),
    (lambda: auroc([1.0], [np.nan]), "ood_scores must be finite, got nan at index 0"),
    (lambda: auroc([[1.0]], [1.0]), "id_scores must be 1-D"),
    (lambda: fpr_at_tpr([1.0], [1.0], tpr=0.0), "tpr must be in"),
    (lambda: class_mean_auroc([1.0], [1.0, 2.0], ["a"]), "ood_classes must have shape"),
    (lambda: ood_bootstrap_ci([1.0], [1.0], "auroc", ood_classes=["a"]), "only for it"),
    (lambda: ood_bootstrap_ci([1.0], [1.0], "aupr"), "metric must be"),  # type: ignore[arg-type]
    (lambda: ood_bootstrap_ci([1.0], [1.0], "auroc", n_resamples=0), "n_resamples"),
    (lambda: mcm([[30.0, 1.0]]), "got 30.0; pass CLIP logits through clip_cosines"),
    (lambda: clip_cosines([[30.0]], 4.6), r"logits / logit_scale \(4.6\) must be"),
    (lambda: clip_cosines([[0.3]], 0.0), "logit_scale must be a finite number > 0"),
    (lambda: energy_score([[0.3]], float("inf")), "temperature must be a finite"),
    (lambda: msp([[np.nan]]), "NaN"),
])
def test_bad_input_names_the_value(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]
