"""`discover evaluate` over several answerers: per-answerer FDR spread (seed 004
Tables 8–9, σ with ddof = 1) and SD from real MiniLM embeddings, checked against
numpy and the independent vendi-score package."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import DiscoveryRecord, write_records

QUESTIONS = ["how many dogs are there ?", "what color is the car ?", "is the cup on the left ?",
             "what is written on the sign ?", "how many windows are open ?"]


def _records(answerer: str, wrong: set[int]) -> list[DiscoveryRecord]:
    return [DiscoveryRecord(
        image=f"{i}.png", image_sha256="0" * 64, completion_id=f"{i}.png#0", slot=1,
        question=q, answer="x", valid=i != 4 or answerer != "a3", correct=i not in wrong
        and (i != 4 or answerer != "a3"), valid_reason="", correct_reason="",
        verifier_parsed=True, method="rl", questioner="q", answerer=answerer, verifier="judge",
        seed=0) for i, q in enumerate(QUESTIONS)]


def test_spread_and_sd(tmp_path) -> None:
    from vendi_score import vendi

    from vlmrobust.models.minilm import TextEmbedder, load_minilm

    path = tmp_path / "r.jsonl"
    recs = _records("a1", {0}) + _records("a2", {0, 1, 2}) + _records("a3", {1})
    write_records(path, recs)
    out = tmp_path / "m.json"
    assert main(["discover", "evaluate", str(path), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    fdrs = {r["answerer"]: r["fdr"] for r in result["rows"]}
    assert fdrs == pytest.approx({"a1": 1 / 5, "a2": 3 / 5, "a3": 1 / 4})
    (spread,) = result["spread"]
    pct = np.array([20.0, 60.0, 25.0])
    assert spread["n_answerers"] == 3
    assert spread["fdr_mean"] == pytest.approx(pct.mean())
    assert spread["fdr_min"] == pytest.approx(20.0)
    assert spread["fdr_sigma"] == pytest.approx(np.std(pct, ddof=1))
    emb = TextEmbedder(load_minilm("cpu"))(QUESTIONS)
    row_a1 = next(r for r in result["rows"] if r["answerer"] == "a1")
    assert row_a1["sd"] == pytest.approx(vendi.score_dual(emb.astype(np.float64),
                                                          normalize=True), rel=1e-4)
    assert 1.0 < row_a1["sd"] < 5.0
