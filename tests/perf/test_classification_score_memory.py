"""The classification scorer (evaluation/scoring/classification.py, issue 23) on
12,500 / 25,000 / 50,000 rows × 1,000 classes: peak RSS and time per row.

Each size runs in a fresh child process, in two modes:

- ``core``: float32 logits as the predictions reader could hand them, split
  into an ``imagenet-val`` half and an ``imagenet-r`` half, scored by
  ``classification_scores`` (accuracy + CI, per-class, ECE/NLL over the label
  space, seed 001's temperature on half of val applied to the rest);
- ``report``: the whole in-memory path of ``score_tables`` (pyarrow tables in,
  validation, alignment to float64, the scorer), what ``vlmrobust score``
  does after reading the file.

Peak RSS is the child's VmHWM; "input" is the RSS after building the inputs.
Run: python -m pytest tests/perf/test_classification_score_memory.py \\
         --benchmark-only -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests.perf.child import run_child

CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np

    from tests.perf.child import overconfident_logits, peak_rss_mb

    mode, n, c = sys.argv[1], int(sys.argv[2]), 1000
    z, y = overconfident_logits(n, c)
    ids = np.array([f"r{i:06d}" for i in range(n)], dtype=object)
    half = n // 2
    if mode == "core":
        from vlmrobust.evaluation.scoring.classification import ConfigData, classification_scores
        configs = [ConfigData(name, ids[s], y[s], y[s], z[s].argmax(1), z[s], c, None, name)
                   for name, s in (("imagenet-val", slice(0, half)), ("imagenet-r", slice(half, n)))]
        input_mb = peak_rss_mb()
        t0 = time.perf_counter()
        scores, block = classification_scores(configs, seed=0)
    else:
        import pyarrow as pa
        from vlmrobust.evaluation.scoring.dataset import score_tables
        variant = ["imagenet-val"] * half + ["imagenet-r"] * (n - half)
        table = pa.table({"id": ids.tolist(), "n_options": [c] * n, "answer": y, "variant": variant,
                          "config": variant})
        flat = pa.array(z.reshape(-1), type=pa.float32())
        preds = pa.table({"id": ids.tolist(),
                          "logits": pa.FixedSizeListArray.from_arrays(flat, c)})
        del z
        manifest = {"spec": {"name": "classification", "version": "1"}, "kind": "classification",
                    "configs": {"imagenet-val": half, "imagenet-r": n - half},
                    "label_spaces": {k: {"n_classes": c, "name": "in1k", "sha256": "0" * 64}
                                     for k in ("imagenet-val", "imagenet-r")}}
        input_mb = peak_rss_mb()
        t0 = time.perf_counter()
        out = score_tables(table, manifest, preds, "m")["datasets"]["classification"]
        scores, block = out["configs"], out["temperature"]
    seconds = time.perf_counter() - t0
    r = scores["imagenet-r"]
    print(json.dumps({"mode": mode, "rows": n, "seconds": seconds, "input_mb": input_mb,
                      "peak_rss_mb": peak_rss_mb(), "temperature": block["value"],
                      "ece": r["ece"], "ece_ts": r["ece_ts"], "nll": r["nll"], "nll_ts": r["nll_ts"]}))
""")

SIZES = (12_500, 25_000, 50_000)


def _run(mode: str, rows: int) -> dict[str, Any]:
    return run_child(CHILD, mode, str(rows))


@pytest.mark.parametrize("mode", ["core", "report"])
def test_classification_scoring_peak_rss_and_linear_time(benchmark: Any, mode: str) -> None:
    runs = [_run(mode, n) for n in SIZES[:-1]]
    runs.append(benchmark.pedantic(_run, args=(mode, SIZES[-1]), rounds=1, iterations=1))
    print()
    for r in runs:
        print(f"{mode} {r['rows']:>6,} × 1,000: {r['seconds']:6.1f} s "
              f"({r['seconds'] / r['rows'] * 1e6:6.1f} µs/row), peak RSS {r['peak_rss_mb']:6.0f} MB "
              f"(input {r['input_mb']:.0f} MB); T = {r['temperature']:.3f}, shift ECE "
              f"{r['ece']:.4f} -> {r['ece_ts']:.4f}, NLL {r['nll']:.4f} -> {r['nll_ts']:.4f}")
    benchmark.extra_info.update({f"{r['rows']}": r for r in runs})
    big = runs[-1]
    assert big["temperature"] is not None and big["ece_ts"] < big["ece"]
    if big["peak_rss_mb"] >= 2048:
        pytest.fail(f"{mode}: peak RSS {big['peak_rss_mb']:.0f} MB >= 2 GB at 50,000 rows")
    # linear in rows (a shared machine: 4x the rows may take up to 8x the time)
    per_row = [r["seconds"] / r["rows"] for r in runs]
    assert per_row[-1] < 2.0 * per_row[0], per_row
