"""OOD scoring end to end at seed 001's size (issue 24): `vlmrobust score` on an
ood dataset of 50,000 ID + 50,000 OOD rows (two OOD sets of 25,000, one with
NINCO's 64 classes) with logits over the 1,000 ImageNet classes, in bounded
memory; time and peak RSS printed.

A first child writes the dataset (tiny images) and the predictions parquet
(100,000 × 1,000 float32); a second child runs :func:`vlmrobust.evaluation.scoring.dataset.score`
(validation, alignment, the four OOD scores a block of rows at a time, AUROC /
FPR@95 / class-mean AUROC with 1,000-replicate bootstrap CIs, the per-row
results) and reports its own peak RSS (VmHWM). The logits themselves are 400 MB
as float32 and 800 MB as float64: the bound asserted is 3.5 GB, i.e. the
predictions as read plus the aligned matrix plus small blocks, never a softmax
of the whole matrix per score.

Run: python -m pytest tests/perf/test_ood_scoring_memory.py --benchmark-only -s \\
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.perf.child import run_child

SETUP = textwrap.dedent("""
    import io, json, sys
    from pathlib import Path
    import numpy as np, pyarrow as pa, datasets
    from PIL import Image
    from vlmrobust.core.kinds import OOD
    from vlmrobust.core.label_space import ClassEntry, LabelSpace
    from vlmrobust.core.writer import BuildInfo, write_dataset
    from vlmrobust.evaluation.predictions.write import write_predictions_file

    out, n = Path(sys.argv[1]), int(sys.argv[2])
    buf = io.BytesIO(); Image.new("RGB", (4, 4), (9, 9, 9)).save(buf, format="PNG")
    img = {"bytes": buf.getvalue(), "path": None}
    space = LabelSpace("in1k", tuple(ClassEntry(f"class {i}", imagenet_ids=(i,)) for i in range(1000)))
    feats = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                               "label": datasets.Value("int32"), "is_ood": datasets.Value("bool"),
                               "ood_source": datasets.Value("string"),
                               "ood_class": datasets.Value("string")})
    def rows(cfg, k):
        for i in range(k):
            ood = cfg != "imagenet-val"
            yield {"id": f"{cfg}/{i}", "image": img, "label": -1 if ood else i % 1000,
                   "is_ood": ood, "ood_source": cfg if ood else None,
                   "ood_class": f"c{i % 64}" if cfg == "ninco" else None}
    sizes = {"imagenet-val": n, "inaturalist": n // 2, "ninco": n - n // 2}
    m = write_dataset(out / "ds", configs={c: rows(c, k) for c, k in sizes.items()}, features=feats,
                      card="perf", info=BuildInfo("ood", "0", 0), kind=OOD,
                      label_spaces=dict.fromkeys(sizes, space))
    rng = np.random.default_rng(0)
    ids, chunks = [], []
    for c, k in sizes.items():
        z = rng.standard_normal((k, 1000), dtype=np.float32) * 2
        if c == "imagenet-val":
            z[np.arange(k), np.arange(k) % 1000] += 6  # ID: confident, mostly right
        ids += [f"{c}/{i}" for i in range(k)]
        chunks.append(z)
    z = np.concatenate(chunks)
    logits = pa.ListArray.from_arrays(pa.array(np.arange(0, z.size + 1, 1000, dtype=np.int32)),
                                      pa.array(z.reshape(-1)))
    del chunks, z
    meta = {"model": "perf", "family": "classifier", "vision_encoder": "x", "params": 1,
            "prompt_id": "default", "date": "2026-11-25", "tool_version": "0",
            "dataset": {"name": "ood", "version": "0", "fingerprint": m["fingerprint"]},
            "configs": list(sizes)}
    write_predictions_file(out / "p.parquet", pa.table({"id": ids, "logits": logits}), meta)
    print(json.dumps({"rows": len(ids)}))
""")

SCORE = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path

    from tests.perf.child import peak_rss_mb

    from vlmrobust.evaluation.scoring.dataset import score
    out = Path(sys.argv[1])
    base = peak_rss_mb()
    t0 = time.perf_counter()
    s = score(out / "ds", out / "p.parquet", out / "scores.json")
    seconds = time.perf_counter() - t0
    b = s["datasets"]["ood"]["ood"]
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_rss_mb(), "import_mb": base,
                      "n_id": b["n_id"], "sets": {k: {m: v[m] for m in ("n", "auroc", "auroc_ci",
                      "fpr95", "class_mean_auroc")} for k, v in b["sets"].items()},
                      "id_accuracy": b["id_accuracy"]}))
""")


def test_ood_scoring_50k_id_50k_ood_x_1000(benchmark: Any, tmp_path: Path) -> None:
    n = 50_000
    assert run_child(SETUP, str(tmp_path), str(n))["rows"] == 2 * n
    stats = benchmark.pedantic(run_child, args=(SCORE, str(tmp_path)), rounds=1, iterations=1)
    ninco = stats["sets"]["ninco"]
    print(f"\nOOD score of {n:,} ID + {n:,} OOD rows × 1,000 logits: {stats['seconds']:.1f} s, "
          f"peak RSS {stats['peak_rss_mb']:.0f} MB ({stats['import_mb']:.0f} MB after imports); "
          f"ID acc {stats['id_accuracy']:.3f}, NINCO AUROC {ninco['auroc']:.4f} "
          f"CI {ninco['auroc_ci']}, class-mean {ninco['class_mean_auroc']:.4f}")
    benchmark.extra_info.update(stats)
    assert stats["n_id"] == n and ninco["n"] == n - n // 2
    assert ninco["auroc_ci"][0] <= ninco["auroc"] <= ninco["auroc_ci"][1]
    if stats["peak_rss_mb"] >= 3584:
        pytest.fail(f"peak RSS {stats['peak_rss_mb']:.0f} MB >= 3.5 GB")
