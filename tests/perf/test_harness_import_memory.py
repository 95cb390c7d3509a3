"""Peak RSS of `vlmrobust import` on hostile harness files (issue 41.1: a
10 MB VLMEvalKit TSV peaked at 3.0 GB, a 160 MB lmms-eval samples file at
1.7 GB, as every row was read and kept first). Each import runs in a child
(tests/perf/child.py) and must stay under 500 MB, as ``validate`` does.

Inputs, for a 12-row dataset: a 10 MB TSV and a 10 MB JSONL result of
short rows (refused at the 13th row), and an lmms-eval samples file of
12 valid rows each padded with a 3.9 MB list of numbers (imported).

Run: python -m pytest tests/perf/test_harness_import_memory.py \\
         --benchmark-only -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.perf.child import run_child

CHILD = textwrap.dedent("""
    import contextlib, io, json, sys, time
    from tests.perf.child import peak_rss_mb
    from vlmrobust.cli.main import main

    argv = json.loads(sys.argv[1])
    t0 = time.perf_counter()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    print(json.dumps({"rc": rc, "seconds": time.perf_counter() - t0,
                      "peak_rss_mb": peak_rss_mb(), "error": err.getvalue()[-300:]}))
""")
LIMIT_MB = 500


def _inputs(tmp: Path, capsys: Any) -> tuple[Path, dict[str, tuple[Path, list[str]]]]:
    from tests.evaluation.harness.lmms_eval.test_bridge import CONFIGS, _export, _log, _losses
    from tests.fixtures.score import write_mcq

    ds = write_mcq(tmp / "ds", n=6, k=4)
    tsv, jsonl = tmp / "M_vr-mcq.tsv", tmp / "M_vr-mcq.jsonl"
    with tsv.open("w") as f:
        f.write("vlmrobust_id\tprediction\n")
        for i in range(1_000_000):
            f.write(f"x{i}\tA\n")
    with jsonl.open("w") as f:
        for i in range(300_000):
            f.write(json.dumps({"vlmrobust_id": f"x{i}", "prediction": "A"}) + "\n")
    tasks = tmp / "tasks"
    _export(ds, tasks, capsys)
    (samples,) = _log(ds, tasks, tmp / "logs", "multiple_choice", _losses, configs=CONFIGS[:1])
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    for line in lines:
        line["resps"] = [0.5] * 780_000  # ~3.9 MB of text per line, as logged extras
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ds, {"vlmevalkit-tsv": (tsv, ["vlmevalkit"]), "vlmevalkit-jsonl": (jsonl, ["vlmevalkit"]),
                "lmms-eval": (samples, ["lmms-eval"])}


def test_import_peak_rss_on_hostile_inputs(benchmark: Any, tmp_path: Path, capsys: Any) -> None:
    ds, inputs = _inputs(tmp_path, capsys)

    def run_all() -> dict[str, dict[str, Any]]:
        out = {}
        for name, (path, cmd) in inputs.items():
            argv = ["import", *cmd, str(path), "--dataset", str(ds), "--out",
                    str(tmp_path / f"{name}.parquet"), "--model", "m"]
            out[name] = run_child(CHILD, json.dumps(argv))
            out[name]["file_mb"] = path.stat().st_size / 2**20
        return out

    got = benchmark.pedantic(run_all, rounds=1, iterations=1)
    for name, s in got.items():
        print(f"\nimport {name}: {s['file_mb']:.1f} MB file, rc {s['rc']}, {s['seconds']:.1f} s, "
              f"peak RSS {s['peak_rss_mb']:.0f} MB ({s['error'].strip()[:120]})")
        benchmark.extra_info[f"{name}_peak_rss_mb"] = s["peak_rss_mb"]
    assert got["vlmevalkit-tsv"]["rc"] == got["vlmevalkit-jsonl"]["rc"] == 1
    assert got["lmms-eval"]["rc"] == 0, got["lmms-eval"]["error"]
    for name, s in got.items():
        if s["peak_rss_mb"] >= LIMIT_MB:
            pytest.fail(f"import {name}: peak RSS {s['peak_rss_mb']:.0f} MB >= {LIMIT_MB} MB")
