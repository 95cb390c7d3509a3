"""Bootstrap intervals of factor-level ER (ImageNet-X, seed 001 §IV): a joint
bootstrap over each model's images and the reference models. The interval holds
the point ER, narrows with more images, repeats for a seed, equals a plain loop
(scipy's linregress or statsmodels' Huber RLM on the redrawn points, numpy's
quantiles) on a tiny case,
and the cell resampling behaves as redrawing the images themselves."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from scipy import stats

from vlmrobust.leaderboard.fits.bootstrap import seeded_rng
from vlmrobust.leaderboard.fits.factor_intervals import factor_er_intervals
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.metrics.lines.factor_er import (
    factor_cells,
    factor_effective_robustness,
    resample_factor_accuracies,
)

FACTORS = ("pose", "texture")
# model -> (overall acc, pose acc, texture acc) on n = 400 annotated images, 120 pose, 60 texture
ACC = {"r0": (0.60, 0.55, 0.40), "r1": (0.70, 0.65, 0.50), "r2": (0.80, 0.775, 0.60),
       "r3": (0.65, 0.60, 0.45), "r4": (0.75, 0.70, 0.55), "clip": (0.75, 0.75, 0.70)}
BASE = ["r0", "r1", "r2", "r3", "r4"]


def _ppf(p: float) -> float:
    """Φ⁻¹ with accuracies of 0 or 1 clipped to [1e-6, 1 − 1e-6], as the project's
    probit (vlmrobust.metrics.transforms) documents."""
    return float(stats.norm.ppf(min(max(p, 1e-6), 1 - 1e-6)))


def _results(scale: int = 1, acc: dict[str, tuple[float, float, float]] | None = None
             ) -> dict[str, dict[str, tuple[int, float | None]]]:
    return {m: {"annotated": (400 * scale, o), "pose": (120 * scale, p),
                "texture": (60 * scale, t)} for m, (o, p, t) in (acc or ACC).items()}


def _intervals(results: dict[str, Any], spec: BaselineSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    overall = {m: r["annotated"][1] for m, r in results.items()}
    accs = {m: {f: r[f][1] for f in FACTORS} for m, r in results.items()}
    lines = factor_effective_robustness(overall, accs, BASE, FACTORS, spec.transform,
                                        spec.holistic_fit)
    return lines, factor_er_intervals(results, lines, FACTORS, spec, "imagenet-mcq", "val")


def test_interval_holds_the_point_and_narrows_with_more_images() -> None:
    spec = BaselineSpec(version="t", n_bootstrap=400, seed=3)
    lines, cis = _intervals(_results(), spec)
    _, big = _intervals(_results(25), spec)
    for f in FACTORS:
        for m in ACC:
            (lo, hi), why = cis[f][m]
            assert why is None and lo < lines[f].er[m] < hi, (f, m)
            (blo, bhi), _ = big[f][m]
            assert bhi - blo < 0.5 * (hi - lo), (f, m)  # 25x the images: much narrower
            assert blo <= lines[f].er[m] <= bhi


def test_deterministic_for_a_seed() -> None:
    spec = BaselineSpec(version="t", n_bootstrap=100, seed=5)
    _, a = _intervals(_results(), spec)
    _, b = _intervals(_results(), spec)
    _, c = _intervals(_results(), BaselineSpec(version="t", n_bootstrap=100, seed=6))
    assert a == b and a != c
    # one model's draws do not depend on which other models are on the board
    fewer = {m: r for m, r in _results().items() if m != "clip"}
    _, d = _intervals(fewer, spec)
    assert all(d[f][m] == a[f][m] for f in FACTORS for m in fewer)


def _loop(results: dict[str, Any], spec: BaselineSpec, parts: tuple[str, ...]) -> dict[str, Any]:
    """The same joint bootstrap written out one replicate at a time: explicit
    cell draws per model, explicit model draws, scipy's least-squares line or
    statsmodels' Huber RLM (``spec.holistic_fit``) through the redrawn points
    (each repeated by its multiplicity)."""
    b = spec.n_bootstrap
    draws = {}
    for m, r in results.items():
        n, acc = r["annotated"]
        cells = []
        for f in FACTORS:
            n_f, a_f = r[f]
            cells += [round(n_f * a_f), n_f - round(n_f * a_f)]
        cells += [round(n * acc) - sum(cells[0::2]), n - round(n * acc) - sum(cells[1::2])]
        rng = seeded_rng(spec.seed, "factor-images", *parts, m)
        draws[m] = [rng.multinomial(n, np.array(cells) / n) for _ in range(b)]
    base = sorted(BASE)
    rng = seeded_rng(spec.seed, "factor-models", *parts)
    picks = [rng.integers(0, len(base), size=len(base)) for _ in range(b)]
    out: dict[str, Any] = {}
    for j, f in enumerate(FACTORS):
        samples: dict[str, list[float]] = {m: [] for m in results}
        for i in range(b):
            def accs(m: str, i: int = i, j: int = j) -> tuple[float, float]:
                d = draws[m][i]
                seen = d[2 * j] + d[2 * j + 1]
                return sum(d[0::2]) / sum(d), (d[2 * j] / seen if seen else float("nan"))
            xs, ys, used = [], [], []
            for k in picks[i]:
                o, a = accs(base[k])
                if a == a:  # a model without an image of f is out of the replicate
                    xs.append(_ppf(o))
                    ys.append(_ppf(a))
                    used.append(k)
            most = max(used.count(k) for k in used) if used else 0
            # 3 distinct models; a Huber line also needs no model drawn over half the time
            line = (_line(xs, ys, spec.holistic_fit) if len(set(used)) >= 3 and not (
                spec.holistic_fit == "huber" and 2 * most > len(used)) else None)
            for m in results:
                o, a = accs(m)
                samples[m].append(float("nan") if line is None or a != a else
                                  a - stats.norm.cdf(line[0] * _ppf(o) + line[1]))
        out[f] = {m: np.quantile(np.array(v)[np.isfinite(v)], [0.025, 0.975]) for m, v in samples.items()}
    return out


def _line(xs: list[float], ys: list[float], method: str) -> tuple[float, float]:
    if method == "least-squares":
        r = stats.linregress(xs, ys)
        return float(r.slope), float(r.intercept)
    sm = pytest.importorskip("statsmodels.api")
    with warnings.catch_warnings():  # a perfect fit of a resample: statsmodels warns, keeps it
        warnings.simplefilter("ignore")
        res = sm.RLM(np.array(ys), sm.add_constant(np.array(xs)),
                     M=sm.robust.norms.HuberT()).fit()
    return float(res.params[1]), float(res.params[0])


@pytest.mark.parametrize("method", ["least-squares", "huber"])
def test_equals_a_replicate_by_replicate_loop(method: str) -> None:
    spec = BaselineSpec(version="t", n_bootstrap=60, seed=11, holistic_fit=method)
    results = {m: {"annotated": (20, o), "pose": (8, round(p * 8) / 8),
                   "texture": (4, round(t * 4) / 4)} for m, (o, p, t) in ACC.items()}
    _, got = _intervals(results, spec)
    want = _loop(results, spec, ("imagenet-mcq", "val"))
    for f in FACTORS:
        for m in results:
            ci, why = got[f][m]
            assert why is None, (f, m, why)
            np.testing.assert_allclose(ci, want[f][m], rtol=0, atol=1e-9 if method ==
                                       "least-squares" else 1e-5)


def test_cell_draws_behave_as_redrawn_images() -> None:
    """Overall and factor accuracy of a replicate come from the same images: their
    covariance matches redrawing the per-image vectors (20,000 replicates)."""
    correct = np.array([1] * 30 + [0] * 10 + [1] * 6 + [0] * 14, dtype=float)  # 40 pose, 20 other
    is_pose = np.arange(60) < 40
    cells = factor_cells(60, correct.mean(), {"pose": (40, 0.75)}, ["pose"])
    overall, fac = resample_factor_accuracies(cells, 20_000, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 60, size=(20_000, 60))
    o2 = correct[idx].mean(axis=1)
    p2 = (correct[idx] * is_pose[idx]).sum(axis=1) / is_pose[idx].sum(axis=1)
    assert np.cov(overall, fac[:, 0])[0, 1] == pytest.approx(np.cov(o2, p2)[0, 1], rel=0.06)
    assert overall.std() == pytest.approx(o2.std(), rel=0.03)
    assert fac[:, 0].std() == pytest.approx(p2.std(), rel=0.03)


def test_overlapping_factors_have_no_interval_and_say_why() -> None:
    spec = BaselineSpec(version="t", n_bootstrap=50)
    results = _results()
    results["clip"]["pose"] = (300, 0.75)  # with texture: 365 correct of 400 at 75% overall
    results["clip"]["texture"] = (200, 0.70)
    _, cis = _intervals(results, spec)
    ci, why = cis["pose"]["clip"]
    assert ci is None and why is not None and "factors overlap" in why and "\n" not in why
    assert cis["pose"]["r0"][0] is not None  # the others keep theirs
    results["r0"]["pose"] = (300, 0.55)
    results["r0"]["texture"] = (200, 0.40)
    _, cis = _intervals(results, spec)
    assert cis["pose"]["r1"] == (None, cis["pose"]["r1"][1])
    assert "reference model r0" in str(cis["pose"]["r1"][1])
    with pytest.raises(ValueError, match="factors overlap"):
        factor_cells(10, 0.5, {"pose": (8, 0.5), "color": (8, 0.5)}, ["pose", "color"])


def test_bootstrap_off_says_so() -> None:
    _, cis = _intervals(_results(), BaselineSpec(version="t", n_bootstrap=0))
    assert cis["pose"]["r0"] == (None, "not estimable: the bootstrap is off (bootstrap.n = 0)")
