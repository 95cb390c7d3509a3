"""The memory benchmarks' two shared pieces: a child process's own peak RSS,
and running a benchmark's code in such a child.

A benchmark measures in a child so that its peak RSS is its own, not the
pytest process's. The child reads VmHWM (/proc/self/status): on Linux a
child's ``ru_maxrss`` also counts the parent's RSS at the fork, kept across
exec. The child imports :func:`peak_rss_mb` from here, so this module's own
imports wait inside :func:`run_child` (in the child they would count in the
figure it measures).
"""

from __future__ import annotations

from typing import Any


def peak_rss_mb() -> float:
    """This process's peak RSS in MB (VmHWM; ``ru_maxrss`` where /proc is absent)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def overconfident_logits(n: int, c: int = 1000, seed: int = 0) -> tuple[Any, Any]:
    """(z, y): n × c float32 logits, filled 2,000 rows at a time (no float64
    copy), of a model at twice a calibrated scale (overconfident: fitted T ≈ 2),
    and the labels, each row's label raised by 18."""
    import numpy as np

    rng = np.random.default_rng(seed)
    z = np.empty((n, c), dtype=np.float32)
    y = rng.integers(0, c, size=n)
    for s in range(0, n, 2000):
        block = z[s:s + 2000]
        rng.standard_normal(out=block, dtype=np.float32)
        block *= 6
        block[np.arange(block.shape[0]), y[s:s + 2000]] += 18
    return z, y


def run_child(code: str, *args: str) -> dict[str, Any]:
    """Run ``python -c code args`` from the repository root (so the child can
    import ``tests.perf.child``) and return the JSON object its last stdout line
    prints; a failing child fails the test with the end of its stderr."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        pytest.fail(proc.stderr[-3000:])
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
