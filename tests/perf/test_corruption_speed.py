"""The corruption engine against the patched imagecorruptions 1.1.2 reference
and against ``corrupt-tta`` (a newer ImageNet-C library on PyPI), side by side
in one run, per corruption, at 224² and at 1024×768, on one core, one thread.

Target (issue 39 item 1): every corruption ≥ 2× the reference and ≥ 1× corrupt-tta
at both sizes, times summed over severities 1-5. Two are held to a lower floor
(``LIBRARY_BOUND``) and printed as misses: they spend their time in the same
library call as the reference, which their bytes depend on.

The three are timed interleaved, severity by severity, with the order rotated
each round, in process CPU time, and the median of the rounds is kept: on a
shared machine the ratios are what is stable, not the seconds. Calls under
2 ms are repeated within a round (the clock is too coarse for one 0.1 ms
call); a runner whose first call takes over ``SLOW_S`` gets fewer rounds (the
reference's and corrupt-tta's glass blur are Python loops, ~15 s a call at
1024×768). OpenCV is held to one thread for all three. Prints one table per
size and stores the ratios in the benchmark's extra_info.

Run: python -m pytest tests/perf/test_corruption_speed.py --benchmark-only -s \
         -p no:doctest -o addopts=""
(about 5 minutes on an idle core, 3 of them the two libraries' glass blur at
1024×768; VLMROBUST_PERF_SIZE=1024x768 and VLMROBUST_PERF_CORRUPTIONS=a,b time
one size or a subset)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from PIL import Image

from vlmrobust.builders.corruptions import ALL_CORRUPTIONS, SEVERITIES, apply_corruption
from vlmrobust.builders.corruptions.draws import draws_for
from vlmrobust.builders.corruptions.reference import reference_corrupt

corrupt_tta = pytest.importorskip("corrupt_tta")

ROUNDS = int(os.environ.get("VLMROBUST_PERF_ROUNDS", "5"))
# a comma list to time a subset (the table and the assertions cover only those)
ONLY = tuple(n for n in os.environ.get("VLMROBUST_PERF_CORRUPTIONS", "").split(",") if n)
SIZE_ONLY = os.environ.get("VLMROBUST_PERF_SIZE", "")
SLOW_S = 0.3  # a runner slower than this per call gets ~1.5 s of rounds, at least one
SIZES = {"224x224": (224, 224), "1024x768": (768, 1024)}
WHO = ("engine", "reference", "tta")
# defocus_blur: OpenCV's float64 DFT correlation (filter2D), ~87 % of the
# reference's own time; a float32 DFT or a direct sum over the disk's distinct
# weights was measured slower or not byte-exact. jpeg_compression: one
# libjpeg-turbo encode and decode, the reference's too (Pillow).
LIBRARY_BOUND = {"defocus_blur": 1.3, "jpeg_compression": 1.5}
Table = dict[str, dict[str, list[float]]]


def _image(hw: tuple[int, int]) -> np.ndarray:
    import skimage.data

    return np.asarray(Image.fromarray(skimage.data.astronaut()).resize((hw[1], hw[0]),
                                                                        Image.BILINEAR))


def _one_core_one_thread() -> None:
    import cv2

    cv2.setNumThreads(1)
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[-1]})


def _cpu(fn: Callable[[], object], reps: int = 1) -> float:
    """CPU seconds per call, over ``reps`` calls in a row."""
    start = time.process_time()
    for _ in range(reps):
        fn()
    return (time.process_time() - start) / reps


def time_side_by_side(img: np.ndarray, rounds: int = ROUNDS,
                      names: tuple[str, ...] = ALL_CORRUPTIONS) -> Table:
    """{corruption: {"engine"|"reference"|"tta": [CPU seconds at severity 1..5]}},
    each the median of its rounds."""
    table: Table = {}
    for name in names:
        median: dict[str, list[float]] = {who: [] for who in WHO}
        for s in SEVERITIES:
            runners: list[tuple[str, Callable[[], object]]] = [
                ("engine", lambda name=name, s=s: apply_corruption(
                    img, name, s, draws_for(0, "perf", name, s))),
                ("reference", lambda name=name, s=s: reference_corrupt(img, name, s, s)),
                ("tta", lambda name=name, s=s: corrupt_tta.corrupt(img, s, name)),
            ]
            # the first call warms caches and compiled kernels and sets the repeats
            first = {who: _cpu(fn) for who, fn in runners}
            reps = {who: max(1, int(0.002 / max(t, 1e-6))) for who, t in first.items()}
            allowed = {who: rounds if t < SLOW_S else max(1, min(rounds, int(1.5 / t)))
                       for who, t in first.items()}
            got: dict[str, list[float]] = {who: [] for who in WHO}
            for r in range(rounds):
                for who, fn in runners[r % 3:] + runners[:r % 3]:
                    if r < allowed[who]:
                        got[who].append(_cpu(fn, reps[who]))
            for who in WHO:
                median[who].append(float(np.median(got[who])))
        table[name] = median
    return table


def ratio(table: Table, name: str, slow: str) -> float:
    return sum(table[name][slow]) / sum(table[name]["engine"])


def format_table(table: Table) -> str:
    """Per corruption: summed times, both ratios, and the reference ratio at
    each severity; then the corruptions that miss the targets."""
    lines = [f"{'corruption':18s} {'engine ms':>10s} {'ref ms':>10s} {'tta ms':>10s} "
             f"{'ref/eng':>8s} {'tta/eng':>8s}   ref/eng by severity 1-5"]
    for name, row in table.items():
        per = " ".join(f"{a / e:5.1f}" for a, e in zip(row["reference"], row["engine"],
                                                        strict=True))
        lines.append(f"{name:18s} {sum(row['engine']) * 1e3:10.2f} "
                     f"{sum(row['reference']) * 1e3:10.2f} {sum(row['tta']) * 1e3:10.2f} "
                     f"{ratio(table, name, 'reference'):8.2f} {ratio(table, name, 'tta'):8.2f}"
                     f"   {per}")
    total = {who: sum(sum(r[who]) for r in table.values()) for who in WHO}
    lines.append(f"{'all 95 variants':18s} {total['engine'] * 1e3:10.2f} "
                 f"{total['reference'] * 1e3:10.2f} {total['tta'] * 1e3:10.2f} "
                 f"{total['reference'] / total['engine']:8.2f} "
                 f"{total['tta'] / total['engine']:8.2f}")
    lines.append("under 2x the reference or 1x corrupt-tta: " + (", ".join(misses(table))
                                                                 or "none"))
    return "\n".join(lines)


def misses(table: Table) -> list[str]:
    return [f"{name} ({who} {ratio(table, name, who):.2f}x)" for name in table
            for who, floor in (("reference", 2.0), ("tta", 1.0))
            if ratio(table, name, who) < floor]


@pytest.mark.parametrize("size", list(SIZES))
def test_engine_reference_and_corrupt_tta_per_corruption(benchmark: Any, size: str) -> None:
    if SIZE_ONLY and size != SIZE_ONLY:
        pytest.skip(f"VLMROBUST_PERF_SIZE={SIZE_ONLY}")
    _one_core_one_thread()
    img = _image(SIZES[size])
    names = ONLY or ALL_CORRUPTIONS
    table = benchmark.pedantic(time_side_by_side, args=(img, ROUNDS, names), rounds=1,
                               iterations=1)
    print(f"\n{size}, one core, one thread, CPU time, median of {ROUNDS} interleaved rounds, "
          "summed over severities 1-5")
    print(format_table(table))
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} cores")
    total = {who: sum(sum(r[who]) for r in table.values()) for who in WHO}
    benchmark.extra_info["speedup_vs_reference"] = round(total["reference"] / total["engine"], 2)
    benchmark.extra_info["speedup_vs_corrupt_tta"] = round(total["tta"] / total["engine"], 2)
    benchmark.extra_info["per_corruption"] = {
        name: {"vs_reference": round(ratio(table, name, "reference"), 2),
               "vs_corrupt_tta": round(ratio(table, name, "tta"), 2)}
        for name in table}
    assert set(table) == set(names)
    below = [name for name in table
             if ratio(table, name, "reference") < LIBRARY_BOUND.get(name, 2.0)
             or ratio(table, name, "tta") < 1.0]
    assert not below, misses(table)


def test_engine_95_variants(benchmark: Any) -> None:
    """Wall time of the engine alone on all 95 variants of a 224² image
    (pytest-benchmark stats)."""
    _one_core_one_thread()
    img = _image((224, 224))

    def engine_all() -> int:
        n = 0
        for name in ALL_CORRUPTIONS:
            for s in SEVERITIES:
                n += apply_corruption(img, name, s, draws_for(0, "perf", name, s)).shape[0] > 0
        return n

    engine_all()
    benchmark.group = "95 variants 224x224"
    assert benchmark.pedantic(engine_all, rounds=3, iterations=1) == 95
