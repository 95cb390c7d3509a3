"""``selection.parquet``: every pool candidate with its κ, pick-time diversity
and score, whether it was selected, its pick order, and each selector's top-1
answer on each of its copies, so the selection can be re-checked afterwards.

Columns: ``source``, ``source_id``, ``category``, ``n_options``, ``kappa``,
``pick_order`` (0-based; null for κ = 0 candidates, which are never picked),
``diversity`` and ``score`` (D_s and α₁κ + α₂D_s when picked; null otherwise),
``above_mean`` (the paper's keep rule, plus the first pick), ``selected`` (in
the dataset: kept and within ``max_questions``), then one ``answers:<selector>``
list per selector, one answer index per copy in the order stored in the file's
``variants`` metadata (the clean copy first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.builders.bench_c.selection import Selection
from vlmrobust.builders.bench_c.sources import Candidate
from vlmrobust.core.writer import WRITE_CHECKSUMS

FILE = "selection.parquet"


def selection_table(pool: Sequence[Candidate], kappas: np.ndarray, answers: np.ndarray,
                    selectors: Sequence[str], picked: Selection, selected: Sequence[int],
                    variant_names: Sequence[str], meta: Mapping[str, Any]) -> Any:
    """A pyarrow Table, one row per pool candidate in pool order; ``answers``
    is (Q, M, V) over ``selectors`` and ``variant_names``."""
    import pyarrow as pa

    q = len(pool)
    if answers.shape != (q, len(selectors), len(variant_names)):
        raise ValueError(f"answers must be (Q={q}, M={len(selectors)}, V={len(variant_names)}), "
                         f"got {answers.shape}")
    order: list[int | None] = [None] * q
    div: list[float | None] = [None] * q
    score: list[float | None] = [None] * q
    divs = picked.diversities or (None,) * len(picked.picked)
    for n, (i, sc, d) in enumerate(zip(picked.picked, picked.scores, divs, strict=True)):
        order[i], score[i], div[i] = n, sc, d
    kept, chosen = set(picked.kept), set(selected)
    cols: dict[str, Any] = {
        "source": pa.array([c.source for c in pool], pa.string()),
        "source_id": pa.array([c.source_id for c in pool], pa.string()),
        "category": pa.array([c.category for c in pool], pa.string()),
        "n_options": pa.array([len(c.options) for c in pool], pa.int32()),
        "kappa": pa.array(np.asarray(kappas, np.float64)),
        "pick_order": pa.array(order, pa.int32()),
        "diversity": pa.array(div, pa.float64()),
        "score": pa.array(score, pa.float64()),
        "above_mean": pa.array([i in kept for i in range(q)]),
        "selected": pa.array([i in chosen for i in range(q)]),
    }
    for m, name in enumerate(selectors):
        cols[f"answers:{name}"] = pa.array(answers[:, m, :].astype(np.int16).tolist(),
                                           pa.list_(pa.int16()))
    table = pa.table(cols)
    metadata = {"variants": list(variant_names), "selectors": list(selectors), **meta}
    return table.replace_schema_metadata({"vlmrobust": json.dumps(metadata, sort_keys=True)})


def table_bytes(table: Any) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", **WRITE_CHECKSUMS)
    return bytes(sink.getvalue().to_pybytes())


def summary(table: Any) -> dict[str, Any]:
    """Counts and κ means per source/category, for the card and the manifest."""
    rows = table.select(["source", "category", "kappa", "pick_order", "selected"]).to_pylist()
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = f"{r['source']}/{r['category']}"
        s = out.setdefault(key, {"pool": 0, "zero_kappa": 0, "selected": 0,
                                 "kappa_pool": 0.0, "kappa_selected": 0.0})
        s["pool"] += 1
        s["zero_kappa"] += int(r["kappa"] == 0)
        s["kappa_pool"] += r["kappa"]
        if r["selected"]:
            s["selected"] += 1
            s["kappa_selected"] += r["kappa"]
    for s in out.values():
        s["kappa_pool"] = s["kappa_pool"] / s["pool"]
        s["kappa_selected"] = s["kappa_selected"] / s["selected"] if s["selected"] else None
    return dict(sorted(out.items()))
