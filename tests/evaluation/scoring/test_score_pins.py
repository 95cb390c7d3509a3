"""Scorer code the other tests left unpinned (issue 27.11): per-config ECE,
NLL and temperature against an independent computation (scipy, a plain
15-bin loop), and validate's "dataset lacks clean copy" branch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

from tests.fixtures.score import (
    bench_c_features,
    bench_c_rows,
    dataset_rows,
    write_mcq,
    write_meta,
    write_parquet,
)
from vlmrobust.cli.main import main
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.scoring.dataset import derived_seed, score_report
from vlmrobust.evaluation.validate.check import validate


def ece_loop(logits: np.ndarray, y: np.ndarray, n_bins: int) -> float:
    """Equal-width confidence bins (lo, hi], the first one [0, 1/n]; Σ |B|/n ·
    |acc(B) − conf(B)| written out one row at a time."""
    p = np.exp(log_softmax(logits, axis=1))
    bins: list[list[tuple[float, bool]]] = [[] for _ in range(n_bins)]
    for row, label in zip(p, y, strict=True):
        conf = float(row.max())
        b = 0
        while b < n_bins - 1 and conf > (b + 1) / n_bins:
            b += 1
        bins[b].append((conf, int(row.argmax()) == int(label)))
    total = 0.0
    for members in bins:
        if members:
            acc = sum(c for _, c in members) / len(members)
            conf = sum(c for c, _ in members) / len(members)
            total += len(members) / len(y) * abs(acc - conf)
    return total


def nll(logits: np.ndarray, y: np.ndarray, t: float = 1.0) -> float:
    return float(-log_softmax(logits / t, axis=1)[np.arange(len(y)), y].mean())


def fit_t(logits: np.ndarray, y: np.ndarray) -> float:
    res = minimize_scalar(lambda lt: nll(logits, y, float(np.exp(lt))), bounds=(-5, 5),
                          method="bounded", options={"xatol": 1e-10})
    return float(np.exp(res.x))


def test_per_config_calibration_matches_an_independent_computation(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "ds", n=40, k=5)
    rows = dataset_rows(ds)
    rng = np.random.default_rng(7)
    logits = []
    for r in rows:  # informative but overconfident logits: errors in every half
        z = rng.normal(size=r["k"]) * 2.5
        z[r["answer"]] += 1.2
        logits.append(z.round(6).tolist())
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], logits=logits)
    write_meta(preds, ds)
    section = score_report(validate(ds, preds), "m")["datasets"]["imagenet-mcq"]
    z_all = np.asarray(logits)
    y_all = np.asarray([r["answer"] for r in rows])
    cfg_of = np.asarray([r["config"] for r in rows])
    for config, got in section["configs"].items():
        sel = cfg_of == config
        z, y = z_all[sel], y_all[sel]
        assert got["ece"] == pytest.approx(ece_loop(z, y, 15), abs=1e-12)
        assert got["ece"] != pytest.approx(ece_loop(z, y, 10), abs=1e-6)  # 15 bins, not 10
        assert got["nll"] == pytest.approx(nll(z, y), rel=1e-12)
        # two-fold cross-fit on the scorer's seeded halves
        perm = np.random.default_rng(derived_seed(0, "temperature", config)).permutation(len(y))
        a, b = perm[: len(y) // 2], perm[len(y) // 2:]
        t_a, t_b = fit_t(z[a], y[a]), fit_t(z[b], y[b])
        assert got["temperature"] == pytest.approx(np.sqrt(t_a * t_b), rel=1e-4)
        scaled = z.copy()
        scaled[b] /= t_a
        scaled[a] /= t_b
        assert got["nll_ts"] == pytest.approx(nll(scaled, y), rel=1e-4)
        assert got["ece_ts"] == pytest.approx(ece_loop(scaled, y, 15), abs=2e-3)
        assert got["nll_ts"] < got["nll"]  # overconfident: scaling helps


def test_dataset_without_a_clean_copy_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in bench_c_rows(3) if not (r["source_id"] == "q1" and r["corruption"] == "none")]
    ds = tmp_path / "bc"
    write_dataset(ds, configs={"default": rows}, features=bench_c_features(), card="toy",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows],
                          logits=[[0.1, 0.2, 0.3, 0.4]] * len(rows))
    write_meta(preds, ds)
    with pytest.raises(SubmissionError) as exc:
        validate(ds, preds)
    text = str(exc.value)
    assert "dataset lacks clean copy" in text and "'q1-fog-1'" in text and "rebuild it" in text
    assert "missing clean copy" not in text  # the predictions are complete
    out = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(ds), "--predictions", str(preds), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and "KeyError" not in err and not out.exists()
    assert json.loads((ds / "manifest.json").read_text())["num_rows"] == len(rows)
