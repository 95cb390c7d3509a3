"""Bench-C intervals resample source questions, not rows (issue 22.4); the
corruption-effect t-tests and seed 003's accuracy-gain cells (issue 22.10; only
ℓ = 1, as Table 3, since issue 34.2)
against independent implementations (scipy, plain loops)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.fixtures.score import bench_c_features, bench_c_rows, write_meta, write_parquet
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.scoring.dataset import derived_seed, score
from vlmrobust.metrics.accuracy import accuracy_ci
from vlmrobust.metrics.clustered import cell_mean_replicates, cluster_multiplicities

B, LEVEL = 1000, 0.95


def _question_level_ci(per_question: np.ndarray, weights: np.ndarray | None, seed: int,
                       ) -> tuple[float, float]:
    """An independent bootstrap over questions: draw Q question indices with
    replacement per resample (the same generator stream the scorer uses) and
    take the (κ-weighted) mean of the drawn questions."""
    q = per_question.size
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, q, size=(B, q))
    w = np.ones(q) if weights is None else weights
    means = (per_question[idx] * w[idx]).sum(axis=1) / w[idx].sum(axis=1)
    lo, hi = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def _row_level_ci(rows: np.ndarray, seed: int) -> tuple[float, float]:
    """What a bootstrap over rows gives: every copy an independent sample."""
    rng = np.random.default_rng(seed)
    means = rows[rng.integers(0, rows.size, size=(B, rows.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def _agrees_with_question_level(ci: tuple[float, float], expected: tuple[float, float]) -> None:
    assert ci == pytest.approx(expected, abs=1e-12)


def test_clustered_replicates_are_a_question_level_bootstrap_when_copies_agree() -> None:
    rng = np.random.default_rng(5)
    n_q, n_cells = 40, 95
    value = rng.random(n_q)
    kappa = rng.random(n_q)
    q = np.repeat(np.arange(n_q), n_cells)
    cells = np.tile(np.arange(n_cells), n_q)
    w = cluster_multiplicities(n_q, B, seed=11)
    rep = cell_mean_replicates(value[q], kappa[q], cells, q, n_cells, w)
    expected = (w * kappa * value).sum(axis=1) / (w * kappa).sum(axis=1)
    np.testing.assert_allclose(rep, expected, rtol=1e-12)
    lo, hi = np.quantile(rep, [0.025, 0.975])
    ci = (float(lo), float(hi))
    _agrees_with_question_level(ci, _question_level_ci(value, kappa, 11))
    # A row-level bootstrap (3,800 "independent" copies) is refused by the same check:
    # it is about sqrt(95) times too narrow.
    row = _row_level_ci(value[q], 11)
    with pytest.raises(AssertionError):
        _agrees_with_question_level(row, _question_level_ci(value, kappa, 11))
    assert (row[1] - row[0]) < 0.3 * (ci[1] - ci[0])


@pytest.fixture(scope="module")
def agreeing(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], np.ndarray]:
    """40 questions; every copy of a question gets the same logits, so a question
    is right or wrong on all its copies."""
    tmp = tmp_path_factory.mktemp("bc")
    rows = bench_c_rows(n_questions=40)
    kappas = np.random.default_rng(3).random(40).round(3) + 0.05
    for r in rows:
        r["kappa"] = float(kappas[int(r["source_id"][1:])])
    ds = tmp / "bench-c"
    write_dataset(ds, configs={"default": rows}, features=bench_c_features(), card="toy",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    rng = np.random.default_rng(0)
    per_q = {}
    for qi in range(40):
        z = rng.normal(size=4)
        z[qi % 4] += 0.9
        per_q[f"q{qi}"] = z.round(4).tolist()
    pred = write_parquet(tmp / "p.parquet", [r["id"] for r in rows],
                         [per_q[r["source_id"]] for r in rows])
    write_meta(pred, ds)
    scores = score(ds, pred, tmp / "scores.json")["datasets"]["bench-c"]
    right = np.array([int(np.argmax(per_q[f"q{i}"]) == i % 4) for i in range(40)], float)
    # kappa as stored (float32 column)
    k32 = np.array([np.float32(k) for k in kappas], dtype=np.float64)
    return ds, scores, np.stack([right, k32])


def test_scorer_intervals_are_question_level(agreeing: tuple[Path, dict[str, Any], np.ndarray],
                                             ) -> None:
    _, scores, (right, kappa) = agreeing
    iv = scores["bench_c"]["intervals"]
    assert iv["over"] == "source questions" and iv["n_questions"] == 40
    seed = derived_seed(0, "bench-c", "questions")
    for label, weights in (("plain", None), ("kappa_weighted", kappa)):
        expected = _question_level_ci(right, weights, seed)
        _agrees_with_question_level(tuple(iv[label]["acc"]), expected)
        _agrees_with_question_level(tuple(iv[label]["clean"]["acc"]), expected)
    # Every copy agrees with its clean copy: the change is exactly 0 in every
    # resample, and so is its interval.
    assert scores["bench_c"]["aggregate"]["delta_acc"] == 0.0
    assert iv["plain"]["delta_acc"] == [0.0, 0.0]
    # The config's accuracy interval is clustered too (rows: 1 clean + 4 copies each).
    cfg = scores["configs"]["default"]
    config_seed = derived_seed(0, "accuracy", "default")
    _agrees_with_question_level(tuple(cfg["accuracy_ci"]),
                                _question_level_ci(right, None, config_seed))
    row_level = accuracy_ci(np.repeat(right, 5), seed=config_seed)
    assert row_level[1] - row_level[0] < 0.6 * (cfg["accuracy_ci"][1] - cfg["accuracy_ci"][0])


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("bcv")
    rows = bench_c_rows(n_questions=24)
    ds = tmp / "bench-c"
    write_dataset(ds, configs={"default": rows}, features=bench_c_features(), card="toy",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    rng = np.random.default_rng(7)
    logits = {}
    for r in rows:
        z = rng.normal(size=4)
        z[r["answer"]] += 0.5 if r["corruption"] == "none" else 0.8 * (r["corruption"] == "fog")
        logits[r["id"]] = z.round(4).tolist()
    pred = write_parquet(tmp / "p.parquet", [r["id"] for r in rows], [logits[r["id"]] for r in rows])
    write_meta(pred, ds)
    scores = score(ds, pred, tmp / "scores.json")["datasets"]["bench-c"]["bench_c"]
    by_id = {r["id"]: r for r in rows}
    return scores, {"rows": by_id, "logits": logits}


def _s_c_ok(z: list[float], answer: int) -> tuple[float, float, float]:
    p = np.exp(np.array(z) - max(z))
    p /= p.sum()
    s = float(-(p * np.log(p)).sum() / np.log(p.size))
    ok = float(np.argmax(p) == answer)
    return s, abs(ok - float(p.max())), ok


def test_corruption_effect_equals_scipy(varied: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The question-level test of corrupted against clean copies lives under its own
    name (seed 003's sensitivity analysis is tests/evaluation/scoring/test_bench_c_sensitivity.py)."""
    scores, data = varied
    sens = scores["corruption_effect"]
    rows, logits = data["rows"], data["logits"]
    clean = {r["source_id"]: _s_c_ok(logits[i], r["answer"]) for i, r in rows.items()
             if r["corruption"] == "none"}
    per: dict[str, dict[str, list[tuple[float, float, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for i, r in rows.items():
        if r["corruption"] != "none":
            per[r["corruption"]][r["source_id"]].append(_s_c_ok(logits[i], r["answer"]))
    for k, metric in enumerate(("S", "C", "acc")):
        means = {}
        for corr, qs in sorted(per.items()):
            ids = sorted(qs)
            d = [np.mean([v[k] for v in qs[q]]) for q in ids]
            o = [clean[q][k] for q in ids]
            got = sens[metric][corr]
            ref = stats.ttest_rel(d, o)
            if np.ptp(np.subtract(d, o)) == 0:
                assert got["t"] is None
            else:
                assert got["t"] == pytest.approx(float(ref.statistic), rel=1e-9)
                assert got["p"] == pytest.approx(float(ref.pvalue), rel=1e-9)
            assert got["df"] == len(ids) - 1
            means[corr] = float(np.mean(np.subtract(d, o)))
            assert got["mean_change"] == pytest.approx(means[corr], abs=1e-12)
        z = stats.zscore(list(means.values()), ddof=1)
        for corr, zv in zip(means, z, strict=True):
            assert sens[metric][corr]["z"] == pytest.approx(float(zv), abs=1e-9)


def test_accuracy_gain_cells(varied: tuple[dict[str, Any], dict[str, Any]]) -> None:
    scores, _ = varied
    gains = {(g["corruption"], g["severity"]): g for g in scores["accuracy_gain"]}
    signs = {(True, True): "degraded", (False, True): "overconfident",
             (True, False): "hesitant", (False, False): "stable"}
    for cell in scores["cells"]:
        t, plain = cell["transitions"], cell["plain"]
        dacc = (t["WR"] - t["RW"]) / cell["n"]
        assert plain["delta_acc"] == pytest.approx(dacc, abs=1e-12)  # Table 3's rule
        key = (cell["corruption"], cell["severity"])
        # Table 3 lists subtle corruptions only (ℓ = 1)
        assert (key in gains) == (dacc > 0 and cell["severity"] == 1)
        if key in gains:
            assert gains[key]["category"] == signs[(plain["delta_S"] > 0, plain["delta_C"] > 0)]
            assert (gains[key]["WR"], gains[key]["RW"]) == (t["WR"], t["RW"])
    assert gains, "the fixture has a cell where corruption raised accuracy"
    raised = {(c["corruption"], c["severity"]) for c in scores["cells"]
              if c["plain"]["delta_acc"] > 0}
    assert any(sev > 1 for _, sev in raised), "and one at ℓ > 1, left out"


def test_destructive_and_corrective_intervals_equal_a_direct_cluster_bootstrap(
        varied: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Plain destructive (RR ∪ RW) and corrective (WR ∪ WW) RAS intervals re-done
    with loops: per-row RAS from the logits by its formula, the scorer's draw of
    question multiplicities, per resample the mean over cells of each cell's
    multiplicity-weighted mean over the subset's rows."""
    scores, data = varied
    rows, logits = data["rows"], data["logits"]
    clean = {r["source_id"]: _s_c_ok(logits[i], r["answer"]) for i, r in rows.items()
             if r["corruption"] == "none"}
    pairs = []  # (question, cell, ras, clean right)
    for i, r in rows.items():
        if r["corruption"] == "none":
            continue
        s_o, c_o, ok_o = clean[r["source_id"]]
        s_d, c_d, _ = _s_c_ok(logits[i], r["answer"])
        ds, dc = s_d - s_o, c_d - c_o
        ras = -dc - max(dc, 0.0) * max(-ds, 0.0) - max(ds, 0.0) * max(-dc, 0.0)
        pairs.append((int(r["source_id"][1:]), (r["corruption"], r["severity"]), ras, ok_o == 1.0))
    w = cluster_multiplicities(24, B, derived_seed(0, "bench-c", "questions"))
    cells = sorted({p[1] for p in pairs})
    for name, clean_right in (("destructive_ras", True), ("corrective_ras", False)):
        sub = [p for p in pairs if p[3] == clean_right]
        reps = []
        for wb in w:
            means = []
            for cell in cells:
                mine = [(wb[q], v) for q, c, v, _ in sub if c == cell]
                den = sum(m for m, _ in mine)
                if den > 0:
                    means.append(sum(m * v for m, v in mine) / den)
            reps.append(np.mean(means) if means else np.nan)
        reps_a = np.array(reps)
        want = np.quantile(reps_a[np.isfinite(reps_a)], [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        assert scores["intervals"]["plain"][name] == pytest.approx(want.tolist(), abs=1e-12)


@pytest.mark.parametrize(("ds", "dc", "category"), [
    (0.0, 0.1, "overconfident"), (0.0, 0.0, "stable"), (0.1, 0.0, "hesitant"),
    (0.1, 0.1, "degraded"), (None, 0.1, None)])
def test_accuracy_gain_categories_at_the_boundaries(ds: float | None, dc: float, category: str | None,
                                                    ) -> None:
    """The quadrant rule's boundaries: ΔS = 0 or ΔC = 0 count as "not increased"
    (ΔS ≤ 0 overconfident/stable, ΔC ≤ 0 hesitant/stable); no logits, no category."""
    from vlmrobust.evaluation.scoring.bench_c.stats import accuracy_gain

    cell = {"corruption": "fog", "severity": 1, "n": 4,
            "transitions": {"RR": 1, "RW": 0, "WR": 2, "WW": 1},
            "plain": {"delta_acc": 0.5, "delta_S": ds, "delta_C": dc}}
    (gain,) = accuracy_gain([cell, {**cell, "plain": {**cell["plain"], "delta_acc": 0.0}}])
    assert (gain["category"], gain["WR"], gain["RW"], gain["delta_acc"]) == (category, 2, 0, 0.5)
    assert accuracy_gain([{**cell, "severity": 2}]) == []  # Table 3: ℓ = 1 only
