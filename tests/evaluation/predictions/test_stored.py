"""What ``submit`` stores of a JSONL run keeps every column re-scoring reads:
CFG's two per-option terms too (they were dropped, so a stored CFG run lost its
t sweep and its logits check)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from vlmrobust.evaluation.predictions.read import read_predictions
from vlmrobust.evaluation.predictions.stored import predictions_parquet_bytes

ROWS = [
    {"id": "a", "logits": [0.5, -1.0], "logp_with_image": [-1.5, -3.0], "logp_without_image": [-2.5, -5.0]},
    {"id": "b", "logits": [1.0, 2.0, 3.0], "logp_with_image": [-0.25, -0.5, -0.75],
     "logp_without_image": [-1.5, -1.0, -2.5]},
    {"id": "c", "logits": [0.0, 1.0], "logp_with_image": None, "logp_without_image": None},
]


def test_cfg_terms_survive_the_stored_form(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    pf = read_predictions(path)
    stored = tmp_path / "stored.parquet"
    stored.write_bytes(predictions_parquet_bytes(pf, {"model": "m"}))
    back = pq.read_table(stored).to_pylist()
    for want, got in zip(ROWS, back, strict=True):
        for name in ("logits", "logp_with_image", "logp_without_image"):
            assert got[name] == want[name], (want["id"], name)
    again = read_predictions(stored)
    for name, (lens, flat) in pf.logp.items():
        assert again.logp[name][0].tolist() == lens.tolist() == [2, 3, -1]
        assert again.logp[name][1].tolist() == flat.tolist()
