"""Issue 28.10/28.11: the cost of reading hostile predictions, and of page checksums.

- peak RSS of ``validate`` on the dictionary bomb (an extra column repeating a
  0.5 MB string in every row: ~60 KB of parquet, over 1 GB if decoded), and on
  the same bomb in the ``id`` column (refused from the dictionary's lengths);
  target < 500 MB (it was 2.16 GB);
- peak RSS and time of ``validate`` on a JSONL at the byte cap: lines of
  thousands of one-character logits (refused at line 1), and lines of five
  logits and a long text (read until the row cap);
- the cost of checksum verification on a 50k-row predictions file and on a
  Bench-C-like shard of PNGs.

Each validate runs in a child process, which reports its peak RSS as VmHWM
(/proc/self/status): its ru_maxrss also counts the pytest parent's RSS at the
fork (Linux keeps it across exec), which is printed beside it.

Run: python -m pytest tests/perf/test_integrity_bounds.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tests.fixtures.score import dataset_rows, mcq_features, png, write_meta
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.predictions.meta import PARQUET_META_KEY

N_ROWS = 2_000  # dataset rows: a predictions file may hold 4,000
CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.evaluation.validate.check import validate
    t0 = time.perf_counter()
    try:
        validate(sys.argv[1], sys.argv[2])
        outcome = "valid"
    except VlmrobustError as exc:
        outcome = "refused: " + str(exc)[:120]
    # ru_maxrss carries the parent's RSS at fork across exec; VmHWM is this image's own
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({"seconds": time.perf_counter() - t0, "outcome": outcome, "peak_rss_mb": hwm / 1024,
                      "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "imagenet-mcq"
    img = png(0)
    rows = [{"id": f"r{i:05d}", "image": {"bytes": img, "path": None}, "question": "What?",
             "options": [f"c{j}" for j in range(5)], "answer": i % 5, "label": i % 5,
             "option_class_ids": list(range(5)), "variant": "sample-photo", "distractors": "random"}
            for i in range(N_ROWS)]
    write_dataset(out, configs={"sample-photo-random": rows}, features=mcq_features(), card="perf",
                  info=BuildInfo("imagenet-mcq", "0.1.0", 0, sample=True))
    return out


def _meta(ds: Path) -> bytes:
    manifest = json.loads((ds / "manifest.json").read_text())
    return json.dumps({"model": "bomb", "family": "other", "dataset": {
        "name": "imagenet-mcq", "version": "0.1.0", "fingerprint": manifest["fingerprint"]}}).encode()


def _child(ds: Path, preds: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(ds), str(preds)],
                          capture_output=True, text=True, check=True)
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("where", ["extra column", "id column"])
def test_validate_peak_rss_on_dictionary_bomb(where: str, dataset: Path, tmp_path: Path,
                                              benchmark: Any) -> None:
    rows = dataset_rows(dataset)
    blob = "x" * 500_000
    # built as dictionary arrays, so that this process never holds the expansion

    def repeated(n: int) -> pa.DictionaryArray:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([blob]))

    if where == "extra column":
        n = len(rows)
        table = pa.table({"id": [r["id"] for r in rows],
                          "logits": [[1.0 if j == r["answer"] else 0.0 for j in range(r["k"])]
                                     for r in rows],
                          "junk": repeated(n)})
    else:
        n = 2 * len(rows)
        table = pa.table({"id": repeated(n), "logits": pa.array([[0.0] * 5] * n)})
    p = tmp_path / "bomb.parquet"
    pq.write_table(table.replace_schema_metadata({PARQUET_META_KEY: _meta(dataset)}), p,
                   compression="zstd")
    stats = benchmark.pedantic(lambda: _child(dataset, p), rounds=1, iterations=1)
    print(f"\ndictionary bomb in the {where}: {p.stat().st_size / 1024:.0f} KB of parquet, "
          f"{n * len(blob) / 2**30:.2f} GiB if decoded -> peak RSS {stats['peak_rss_mb']:.0f} MB "
          f"(ru_maxrss {stats['ru_maxrss_mb']:.0f} MB), "
          f"{stats['seconds']:.2f} s, {stats['outcome'][:90]}")
    benchmark.extra_info.update(stats)
    assert stats["outcome"] == "valid" if where == "extra column" else "decodes to more" in stats["outcome"]
    assert stats["peak_rss_mb"] < 500, f"peak RSS {stats['peak_rss_mb']:.0f} MB >= 500 MB"


@pytest.mark.parametrize("rows", ["long logits", "long text"])
def test_validate_jsonl_at_the_byte_cap(rows: str, dataset: Path, tmp_path: Path, benchmark: Any) -> None:
    """A JSONL of the largest size allowed: rows of thousands of one-character
    logits (refused at the first row: more logits than any question's options),
    or rows of five logits and a long ``text`` (read to the row cap, ~1x the file)."""
    from vlmrobust.evaluation.validate.dataset_index import BYTES_BASE, BYTES_PER_ROW, ROWS_FACTOR

    max_rows = ROWS_FACTOR * N_ROWS
    cap = BYTES_BASE + BYTES_PER_ROW * max_rows
    per_line = cap // max_rows
    if rows == "long logits":
        line = b'{"id": "r", "logits": [' + b"0," * (per_line // 2 - 40) + b"0]}\n"
    else:
        line = b'{"id": "r", "logits": [0, 0, 0, 0, 1], "text": "' + b"x" * (per_line - 80) + b'"}\n'
    p = tmp_path / "cap.jsonl"
    with p.open("wb") as fh:
        for _ in range(cap // len(line)):
            fh.write(line)
    write_meta(p, dataset)
    stats = benchmark.pedantic(lambda: _child(dataset, p), rounds=1, iterations=1)
    print(f"\nJSONL at the byte cap, {rows}: {p.stat().st_size / 2**20:.0f} MiB (cap "
          f"{cap / 2**20:.0f} MiB) -> peak RSS {stats['peak_rss_mb']:.0f} MB "
          f"(ru_maxrss {stats['ru_maxrss_mb']:.0f} MB), {stats['seconds']:.1f} s, "
          f"{stats['outcome'][:60]}…{stats['outcome'][-60:]}")
    benchmark.extra_info.update(stats)
    assert stats["outcome"].startswith("refused")
    if rows == "long logits":
        assert "line 1 has" in stats["outcome"] and stats["seconds"] < 10
        assert stats["peak_rss_mb"] < 500
    else:  # the texts are kept (the audit trail): about the file's size, never a multiple
        assert stats["peak_rss_mb"] < 250 + 2 * p.stat().st_size / 2**20


def _time(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def test_checksum_cost_on_predictions(tmp_path: Path, benchmark: Any) -> None:
    n = 50_000
    rng = np.random.default_rng(0)
    table = pa.table({"id": [f"row-{i:06d}" for i in range(n)],
                      "logits": pa.array(list(rng.normal(size=(n, 5)).astype(np.float32)),
                                         pa.list_(pa.float32()))})
    p = tmp_path / "p.parquet"
    pq.write_table(table, p, compression="zstd", write_page_checksum=True)
    data = p.read_bytes()

    def read(verify: bool) -> None:
        pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=verify).read()

    plain, verified = _time(lambda: read(False)), _time(lambda: read(True))
    benchmark.pedantic(lambda: read(True), rounds=3, iterations=1)
    print(f"\n50k-row predictions ({len(data) / 2**20:.1f} MiB): read {plain * 1e3:.1f} ms, "
          f"with checksums {verified * 1e3:.1f} ms (+{(verified - plain) * 1e3:.1f} ms)")
    benchmark.extra_info.update({"plain_ms": plain * 1e3, "verified_ms": verified * 1e3})


def test_checksum_cost_on_bench_c_shard(tmp_path: Path, benchmark: Any) -> None:
    rng = np.random.default_rng(0)
    pngs = []
    for _ in range(8):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)).save(buf, format="PNG")
        pngs.append(buf.getvalue())
    features = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                                  "question": datasets.Value("string"),
                                  "options": datasets.Sequence(datasets.Value("string")),
                                  "answer": datasets.Value("int32")})
    rows = ({"id": f"q{i}", "image": {"bytes": pngs[i % 8], "path": None}, "question": "What?",
             "options": ["a", "b", "c", "d"], "answer": 0} for i in range(960))
    ds = tmp_path / "bench-c"
    write_dataset(ds, configs={"default": rows}, features=features, card="perf",
                  info=BuildInfo("bench-c", "perf", 0))
    shard = sorted((ds / "data" / "default").glob("*.parquet"))[0]

    def read(verify: bool) -> None:
        pq.read_table(shard, page_checksum_verification=verify)

    plain, verified = _time(lambda: read(False)), _time(lambda: read(True))
    benchmark.pedantic(lambda: read(True), rounds=3, iterations=1)
    mib = shard.stat().st_size / 2**20
    print(f"\nBench-C-like shard (960 PNGs of 224x224, {mib:.0f} MiB): read {plain * 1e3:.0f} ms, "
          f"with checksums {verified * 1e3:.0f} ms (+{(verified - plain) * 1e3:.0f} ms, "
          f"{mib / max(verified - plain, 1e-9):.0f} MiB/s of CRC32)")
    benchmark.extra_info.update({"plain_ms": plain * 1e3, "verified_ms": verified * 1e3, "mib": mib})
