"""Peak memory of a whole Bench-C build on 1024×768 sources.

Target (issue 17): peak RSS under 2 GB at 1024×768 sources. The copies of a
question are 96 arrays of 2.4 MB (226 MB); the build holds at most 1 GiB of
them waiting for the selectors (``copies.PENDING_BYTES``), the question in use
with its PIL images, and the writer's two row groups. The build runs in a
child process (2 workers, all 19 corruptions × 5 severities, stand-in
selectors) so that its peak RSS (ru_maxrss) is the build's alone; the workers'
own peak is printed too (each holds one question's copies).

Run: python -m pytest tests/perf/test_bench_c_memory.py --benchmark-only -s \\
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from pathlib import Path
    import tests.perf.test_bench_c_generation as gen
    from vlmrobust.builders.bench_c.build import build_dataset
    from vlmrobust.builders.bench_c.sources import load_source
    from vlmrobust.builders.bench_c.spec import parse_spec
    from vlmrobust.builders.corruptions import ALL_CORRUPTIONS
    from vlmrobust.builders.families import BuildOptions

    root = Path(sys.argv[1])
    gen.N_QUESTIONS, gen.SIZE = int(sys.argv[2]), (1024, 768)
    gen._source(root)
    raw = {"family": "bench-c", "name": "bench-c", "version": "perf", "seed": 0,
           "corruptions": list(ALL_CORRUPTIONS), "severities": [1, 2, 3, 4, 5],
           "selection": {"selectors": ["other:r", "other:g"], "image_embedder": "other:r",
                         "batch_size": 32},
           "sources": [{"name": "perf", "path": "src", "category_column": "variant"}]}
    spec = parse_spec(raw, root / "bench-c.yaml")
    src = load_source(spec.sources[0], root)
    models = {"other:r": gen.StandIn(0), "other:g": gen.StandIn(1)}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    m = build_dataset(spec, spec.selection, [src],
                      options=BuildOptions(out=root / "out", progress=False, workers=2),
                      loader=models.__getitem__, text_embedder=gen._text)
    print(json.dumps({"questions": len(src.candidates), "kept": len(m["selection"]["kept"]),
                      "rows": m["num_rows"], "seconds": time.perf_counter() - t0,
                      "rss_before_mb": before / 1024,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "worker_peak_rss_mb":
                          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
""")


def test_bench_c_build_peak_rss_at_1024x768(benchmark: Any, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]

    def run() -> dict[str, Any]:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), "8"], cwd=root,
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            pytest.fail(proc.stderr[-3000:])
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))

    stats = benchmark.pedantic(run, rounds=1, iterations=1)
    print(f"\n{stats['questions']} questions of 1024×768, {stats['kept']} kept, "
          f"{stats['rows']} rows in {stats['seconds']:.1f} s: peak RSS {stats['peak_rss_mb']:.0f} MB "
          f"(before building {stats['rss_before_mb']:.0f} MB); workers' peak "
          f"{stats['worker_peak_rss_mb']:.0f} MB each at most")
    benchmark.extra_info.update(stats)
    if stats["peak_rss_mb"] >= 2048:
        pytest.fail(f"peak RSS {stats['peak_rss_mb']:.0f} MB >= 2 GB")
