"""A 50,000-row, 1,000-logit predictions file (issue 23: full-label-space
logits) written the way ``vlmrobust predict`` writes it and read back the way
``validate`` / ``score`` read it, each in a child process whose peak RSS
(VmHWM) is printed; both must stay under 2 GB.

Write: batches of 64 rows appended to the resume journal
(``predictions_io.JournalWriter``: one fsynced line per batch), then predict's
merge (``predict._merge``: journal rows -> the parquet file, row group by row
group, atomically). Read: ``predictions_read.read_predictions`` with the
dataset's bound of 1,000 logits per row; every logit is compared with the
value written (regenerated from the same seeds), so a fast wrong reader fails.
The same run on 12,500 rows gives the time per row at a quarter of the size.

Run: python -m pytest tests/perf/test_predictions_io_memory.py \\
         --benchmark-only -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.perf.child import run_child

CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import numpy as np

    from tests.perf.child import peak_rss_mb

    phase, n, folder = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    C, B = 1000, 64
    out = folder / "preds.parquet"

    def batch(b):
        rows = min(B, n - b * B)
        return np.random.default_rng(b).standard_normal((rows, C), dtype=np.float32) * 5

    t0 = time.perf_counter()
    if phase == "write":
        from vlmrobust.evaluation.predict.dataset import _merge
        from vlmrobust.evaluation.predictions.write import (JournalWriter, journal_path,
                                                         partial_dir, read_journal_rows)
        from vlmrobust.evaluation.predict.rows import PlannedRow

        pdir = partial_dir(out)
        pdir.mkdir(parents=True)
        writer = JournalWriter(journal_path(pdir, 0, 1))
        for b in range(-(-n // B)):
            z = batch(b)
            writer.append([(b * B + i, f"id-{b * B + i:06d}", z[i], {}) for i in range(len(z))])
        writer.close()
        t1 = time.perf_counter()
        plan = [PlannedRow(i, "val", i, f"id-{i:06d}") for i in range(n)]
        meta = {"model": "perf", "family": "other",
                "dataset": {"name": "perf", "version": "0", "fingerprint": "0" * 64}}
        _merge(out, plan, read_journal_rows(pdir), pdir, meta)
        t2 = time.perf_counter()
        stats = {"journal_s": t1 - t0, "merge_s": t2 - t1,
                 "journal_mb": journal_path(pdir, 0, 1).stat().st_size / 2**20}
    else:
        from vlmrobust.evaluation.predictions.read import read_predictions

        pf = read_predictions(out, max_logits=C)
        t1 = time.perf_counter()
        assert pf.n_rows == n and pf.logits_len is not None and (pf.logits_len == C).all()
        flat = pf.logits_flat
        for b in range(-(-n // B)):
            z = batch(b)
            got = flat[b * B * C:(b * B + len(z)) * C].reshape(len(z), C)
            assert np.array_equal(got, z.astype(got.dtype)), b
        assert pf.ids[0] == "id-000000" and pf.ids[-1] == f"id-{n - 1:06d}"
        stats = {"read_s": t1 - t0}
    stats.update(phase=phase, rows=n, seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb(),
                 file_mb=out.stat().st_size / 2**20)
    print(json.dumps(stats))
""")


def _both(rows: int, folder: Path) -> dict[str, dict[str, Any]]:
    folder.mkdir()
    return {phase: run_child(CHILD, phase, str(rows), str(folder)) for phase in ("write", "read")}


def test_predictions_50k_x_1000_write_and_read_peak_rss(benchmark: Any, tmp_path: Path) -> None:
    small = _both(12_500, tmp_path / "small")
    big = benchmark.pedantic(_both, args=(50_000, tmp_path / "big"), rounds=1, iterations=1)
    w, r = big["write"], big["read"]
    print(f"\n50,000 × 1,000 float32 logits: write {w['seconds']:.1f} s (journal "
          f"{w['journal_s']:.1f} s, {w['journal_mb']:.0f} MB; merge {w['merge_s']:.1f} s), peak RSS "
          f"{w['peak_rss_mb']:.0f} MB; file {w['file_mb']:.0f} MB; read {r['read_s']:.1f} s, peak "
          f"RSS {r['peak_rss_mb']:.0f} MB. 12,500 rows: write {small['write']['seconds']:.1f} s "
          f"({small['write']['peak_rss_mb']:.0f} MB), read {small['read']['read_s']:.1f} s "
          f"({small['read']['peak_rss_mb']:.0f} MB)")
    benchmark.extra_info.update({f"{k}_{p}": v for p, s in big.items() for k, v in s.items()})
    for phase, stats in big.items():
        if stats["peak_rss_mb"] >= 2048:
            pytest.fail(f"{phase}: peak RSS {stats['peak_rss_mb']:.0f} MB >= 2 GB")
