"""Seed 003's sensitivity analysis (§6.2, Appendix 9.2, Table 2; issue 34.1):
per corruption E[|z_RAS|] and E[|z_ΔAcc|] over adjacent-severity pairs
(ℓ = m → m + 1), then a one-sided paired t-test of H0: E[|z_RAS|] ≤ E[|z_ΔAcc|]
over the corruption types, checked against scipy on its own numbers and on
synthetic Bench-Cs built so that one metric is the more sensitive."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.fixtures.score import bench_c_features, png, write_meta, write_parquet
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.metrics.bench_c.sensitivity import mean_abs_z, one_sided_p, ras_sensitivity

CORRUPTIONS = ("fog", "snow", "frost", "contrast", "pixelate", "spatter")
SEVERITIES = (1, 2, 3, 4, 5)


def _rows(n_questions: int, k: int) -> list[dict[str, Any]]:
    out = []
    for q in range(n_questions):
        for corruption, severity in [("none", 0)] + [(c, s) for c in CORRUPTIONS for s in SEVERITIES]:
            out.append({"id": f"q{q}-{corruption}-{severity}", "image": {"bytes": png(q), "path": None},
                        "question": f"question {q}?", "options": [f"opt {j}" for j in range(k)],
                        "answer": 0, "source_id": f"q{q}", "source": "toy", "category": "cat",
                        "corruption": corruption, "severity": severity, "kappa": 1.0})
    return out


def _score(tmp: Path, k: int, logit: Callable[[np.random.Generator], list[float]],
           ) -> dict[str, Any]:
    rows = _rows(30, k)
    ds = tmp / "bench-c"
    write_dataset(ds, configs={"default": rows}, features=bench_c_features(), card="toy",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    rng = np.random.default_rng(3)
    pred = write_parquet(tmp / "p.parquet", [r["id"] for r in rows], [logit(rng) for _ in rows])
    write_meta(pred, ds)
    block: dict[str, Any] = score(ds, pred, tmp / "s.json")["datasets"]["bench-c"]["bench_c"]
    return block


def _ras_sensitive(rng: np.random.Generator) -> list[float]:
    """Right answer ahead by a margin that moves with every copy (S and C, hence
    RAS, change on every adjacent pair); one copy in ten wrong (ΔAcc moves on few)."""
    margin = 2.0 + rng.normal() if rng.random() > 0.1 else -1.0 - rng.random()
    return [margin, 0.0, 0.0, 0.0]


def _acc_sensitive(rng: np.random.Generator) -> list[float]:
    """Two options near 50/50 whose winner is a coin toss (ΔAcc moves on half the
    pairs, C and S barely), and a rare confidently wrong copy (RAS jumps on few)."""
    if rng.random() < 0.03:
        return [-4.0, 0.0]
    return [float(rng.choice([0.02, -0.02])), 0.0]


def test_ras_more_sensitive_rejects_h0(tmp_path: Path) -> None:
    sens = _score(tmp_path, 4, _ras_sensitive)["sensitivity"]
    assert sens["n_pairs"] == 30 * len(CORRUPTIONS) * 4
    assert sens["tested"] == sorted(CORRUPTIONS) and sens["df"] == len(CORRUPTIONS) - 1
    assert sens["e_abs_z_ras"] > sens["e_abs_z_delta_acc"]
    assert sens["t"] > 0 and sens["p"] < 0.05


def test_delta_acc_more_sensitive_keeps_h0(tmp_path: Path) -> None:
    sens = _score(tmp_path, 2, _acc_sensitive)["sensitivity"]
    assert sens["e_abs_z_ras"] < sens["e_abs_z_delta_acc"]
    assert sens["t"] < 0 and sens["p"] > 0.5


def test_scorer_block_equals_an_independent_computation(tmp_path: Path) -> None:
    """Adjacent pairs re-made from the logits with loops; E[|z|] by scipy.stats.zscore
    (ddof 1); the test by scipy.stats.ttest_rel(alternative="greater")."""
    block = _score(tmp_path, 4, _ras_sensitive)
    import json

    import pyarrow.parquet as pq

    logits = dict(zip(*[pq.read_table(tmp_path / "p.parquet").column(c).to_pylist()
                        for c in ("id", "logits")], strict=True))
    assert json.loads((tmp_path / "s.json").read_text())["datasets"]["bench-c"]["bench_c"][
        "sensitivity"] == block["sensitivity"]

    def s_c_ok(z: list[float]) -> tuple[float, float, float]:
        p = np.exp(np.array(z) - max(z))
        p /= p.sum()
        ok = float(np.argmax(p) == 0)
        return float(-(p * np.log(p)).sum() / np.log(p.size)), abs(ok - float(p.max())), ok

    e_r, e_a = [], []
    for c in sorted(CORRUPTIONS):
        ras, dacc = [], []
        for q in range(30):
            for m in SEVERITIES[:-1]:
                s0, c0, a0 = s_c_ok(logits[f"q{q}-{c}-{m}"])
                s1, c1, a1 = s_c_ok(logits[f"q{q}-{c}-{m + 1}"])
                ds, dc = s1 - s0, c1 - c0
                ras.append(-dc - max(dc, 0) * max(-ds, 0) - max(ds, 0) * max(-dc, 0))
                dacc.append(a1 - a0)
        e_r.append(float(np.abs(stats.zscore(ras, ddof=1)).mean()))
        e_a.append(float(np.abs(stats.zscore(dacc, ddof=1)).mean()))
        got = block["sensitivity"]["corruptions"][c]
        assert got["n_pairs"] == 120
        assert got["e_abs_z_ras"] == pytest.approx(e_r[-1], rel=1e-9)
        assert got["e_abs_z_delta_acc"] == pytest.approx(e_a[-1], rel=1e-9)
    ref = stats.ttest_rel(e_r, e_a, alternative="greater")
    sens = block["sensitivity"]
    assert sens["t"] == pytest.approx(float(ref.statistic), rel=1e-9)
    assert sens["p"] == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert sens["e_abs_z_ras"] == pytest.approx(float(np.mean(e_r)), rel=1e-12)


def test_metric_against_scipy_and_closed_forms() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=500)
    assert mean_abs_z(x) == pytest.approx(float(np.abs(stats.zscore(x, ddof=1)).mean()))
    # ±1 on a share f of n pairs, mean 0: sd² = fn/(n − 1), E|z| = f/sd (≈ √f)
    flips = np.zeros(400)
    flips[:50], flips[50:100] = 1.0, -1.0
    assert mean_abs_z(flips) == pytest.approx(0.25 / np.sqrt(100 / 399), rel=1e-12)
    for t, df in ((51.215, 18), (-2.0, 5), (0.0, 3)):
        assert one_sided_p(t, df) == pytest.approx(float(stats.t.sf(t, df)), rel=1e-12)
    assert one_sided_p(0.0, 3) == 0.5
    g = np.repeat(np.arange(5), 40)
    ras = np.clip(rng.normal(scale=0.3, size=200), -2.0, 1.0)
    dacc = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], size=200)
    r = ras_sensitivity(ras, dacc, g)
    assert r.df == 4 and len(r.tested) == 5
    ref = stats.ttest_rel(r.e_abs_z_ras, r.e_abs_z_delta_acc, alternative="greater")
    assert (r.t, r.p) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))


@pytest.mark.parametrize(("args", "message"), [
    (([0.1, 0.2], [0.0, 0.5], ["a", "a"]), "delta_acc must be -1, 0 or 1, got 0.5"),
    (([0.1, np.nan], [0.0, 1.0], ["a", "a"]), r"ras must be RAS values in \[-2, 1\], got nan"),
    (([0.1, 1.5], [0.0, 1.0], ["a", "a"]), "got 1.5"),
    (([0.1], [0.0, 1.0], ["a", "a"]), "one length")])
def test_bad_input_named(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ras_sensitivity(*args)


def test_levels_one_apart_only_and_no_logits_no_block(tmp_path: Path) -> None:
    """The shared fixture has severities 1 and 3 only: no adjacent pair (the seed's
    m → m + 1); a text-only run has no RAS and no block."""
    from tests.fixtures.score import write_bench_c

    ds = write_bench_c(tmp_path / "bc", n_questions=4)
    from tests.fixtures.score import dataset_rows

    rows = dataset_rows(ds)
    pred = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows],
                         [[1.0, 0.0, 0.0, 0.0]] * len(rows))
    write_meta(pred, ds)
    sens = score(ds, pred, tmp_path / "s.json")["datasets"]["bench-c"]["bench_c"]["sensitivity"]
    assert (sens["n_pairs"], sens["t"], sens["p"], sens["tested"]) == (0, None, None, [])
    pred = write_parquet(tmp_path / "q.parquet", [r["id"] for r in rows],
                         prediction=[0] * len(rows))
    write_meta(pred, ds)
    assert score(ds, pred, tmp_path / "t.json")["datasets"]["bench-c"]["bench_c"][
        "sensitivity"] is None
