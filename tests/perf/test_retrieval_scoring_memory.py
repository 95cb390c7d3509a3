"""`vlmrobust score` on a retrieval dataset at MSCOCO 5k test's size: 5,000
images × 25,000 captions, 512-d embeddings in a parquet predictions file.
Time and peak RSS of the whole path (read + validate the file, blocked
similarity both ways, Recall@1/5/10 with 1,000-resample image bootstraps), in
a child process whose own peak RSS (VmHWM) is read. Bounded: the full 5k × 25k
float64 similarity matrix alone would be 1 GB; the blocked path never holds it.

Run: python -m pytest tests/perf/test_retrieval_scoring_memory.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.perf.child import run_child

N_IMAGES, PER, DIM = 5_000, 5, 512

CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path

    from tests.perf.child import peak_rss_mb

    from vlmrobust.evaluation.scoring.retrieval import retrieval_section
    from vlmrobust.evaluation.validate.retrieval import validate_retrieval
    base = peak_rss_mb()
    t0 = time.perf_counter()
    report = validate_retrieval(Path(sys.argv[1]), Path(sys.argv[2]))
    t1 = time.perf_counter()
    section = retrieval_section(report)
    t2 = time.perf_counter()
    c = section["configs"]["coco"]
    print(json.dumps({"validate_s": t1 - t0, "score_s": t2 - t1, "peak_mb": peak_rss_mb(),
                      "imports_peak_mb": base, "n": c["n"], "n_captions": c["n_captions"],
                      "i2t": c["image_to_text"], "t2i": c["text_to_image"]}))
""")


def _dataset(out: Path) -> None:
    from datasets import Features, List, Value
    from datasets import Image as HFImage
    from PIL import Image

    from vlmrobust.core.kinds import RETRIEVAL
    from vlmrobust.core.writer import BuildInfo, write_dataset

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "gray").save(buf, format="PNG")
    png = buf.getvalue()
    rows = ({"id": f"img-{i}", "image": {"bytes": png, "path": None},
             "captions": [f"caption {j} of image {i}" for j in range(PER)]}
            for i in range(N_IMAGES))
    feats = Features({"id": Value("string"), "image": HFImage(),
                      "captions": List(Value("string"))})
    write_dataset(out, configs={"coco": rows}, features=feats, card="# perf\n",
                  info=BuildInfo("retrieval", "1", 0), kind=RETRIEVAL)


def _predictions(ds: Path, out: Path) -> None:
    from vlmrobust.evaluation.predict.retrieval import write_retrieval_predictions

    rng = np.random.default_rng(0)
    img = rng.normal(size=(N_IMAGES, DIM)).astype(np.float32)
    txt = (np.repeat(img, PER, axis=0)
           + 8.0 * rng.normal(size=(N_IMAGES * PER, DIM)).astype(np.float32))
    write_retrieval_predictions(ds, [f"img-{i}" for i in range(N_IMAGES)], list(img),
                                [txt[i * PER:(i + 1) * PER] for i in range(N_IMAGES)],
                                model="perf", family="clip", out=out)


def test_retrieval_scoring_5k_by_25k(benchmark: Any, tmp_path: Path) -> None:
    ds, pred = tmp_path / "ds", tmp_path / "p.parquet"
    _dataset(ds)
    _predictions(ds, pred)
    stats = benchmark.pedantic(run_child, args=(CHILD, str(ds), str(pred)), rounds=1, iterations=1)
    print(f"\nretrieval score, {stats['n']:,} images x {stats['n_captions']:,} captions, "
          f"{DIM}-d ({pred.stat().st_size / 2**20:.0f} MB parquet): read + validate "
          f"{stats['validate_s']:.1f} s, ranks + Recall@1/5/10 + bootstrap CIs "
          f"{stats['score_s']:.1f} s, peak RSS {stats['peak_mb']:.0f} MB (after imports "
          f"{stats['imports_peak_mb']:.0f} MB); R@5 image->text {stats['i2t']['recall@5']:.3f}, "
          f"text->image {stats['t2i']['recall@5']:.3f}")
    benchmark.extra_info.update(stats)
    assert (stats["n"], stats["n_captions"]) == (N_IMAGES, N_IMAGES * PER)
    assert stats["i2t"]["recall@5_ci"][0] <= stats["i2t"]["recall@5"]
    if stats["peak_mb"] >= 1024:
        pytest.fail(f"peak RSS {stats['peak_mb']:.0f} MB >= 1 GB: not bounded")
