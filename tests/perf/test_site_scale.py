"""Benchmark (issue 37.2): the site of 400 and 4,000 models made from a real demo's
submissions (leaderboard.synthetic.copy_submissions: each copy's predictions are
the original's rows in a file of its own, so every model is re-scored from real
predictions against the demo's datasets). Prints the site's size, its largest page
and the seconds of each build stage (and the re-scoring's seconds per model).

Goals: at 400 models the site is under 30 MB and no page over 300 kB; at 4,000 it
is under 300 MB and builds, re-scoring included, in under 15 minutes.

Needs a demo output: ``vlmrobust demo --out DIR`` (about 9 minutes), then
``VLMROBUST_DEMO_OUT=DIR pytest tests/perf/test_site_scale.py -k 400-models -s``.
``VLMROBUST_PERF_RECORDS=1`` builds from the copies' scores.json without re-scoring
(the re-scoring stage then reads 0 s; the other stages and the sizes are the same).
``VLMROBUST_PERF_JOBS=N`` re-scores in N processes (default: the usable CPUs, as
``leaderboard build``). The 1,000-model run gives the growth between 400 and 4,000
without the long run; it has no goal of its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.synthetic import copy_submissions
from vlmrobust.leaderboard.trust.parallel import check_jobs

GOALS: dict[int, tuple[int | None, int | None, int | None]] = {
    400: (30_000_000, 300_000, None), 1000: (None, None, None), 4000: (300_000_000, None, 15 * 60)}


def _demo() -> Path:
    raw = os.environ.get("VLMROBUST_DEMO_OUT")
    if not raw or not (Path(raw) / "submissions").is_dir():
        pytest.fail("set VLMROBUST_DEMO_OUT to the folder of a `vlmrobust demo --out DIR` run "
                    f"(it holds submissions/ and datasets/); got {raw!r}", pytrace=False)
    return Path(raw)


def _workers_cpu() -> float:
    """CPU seconds of the finished re-scoring workers: the forkserver reaps them, so
    they are its children's times (/proc/<pid>/stat cutime + cstime)."""
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _sizes(site: Path) -> dict[str, int]:
    return {p.relative_to(site).as_posix(): p.stat().st_size
            for p in site.rglob("*") if p.is_file()}


@pytest.mark.parametrize("n", sorted(GOALS), ids=lambda n: f"{n}-models")
def test_site_of_demo_copies(n: int, tmp_path: Path) -> None:
    demo = _demo()
    subs = tmp_path / "submissions"
    records = os.environ.get("VLMROBUST_PERF_RECORDS") == "1"
    jobs = int(os.environ["VLMROBUST_PERF_JOBS"]) if os.environ.get("VLMROBUST_PERF_JOBS") else None
    t0 = time.perf_counter()
    copy_submissions(demo / "submissions", subs, n, predictions=not records)
    copying = time.perf_counter() - t0
    timings: dict[str, float] = {}
    t0, cpu0, workers0 = time.perf_counter(), time.process_time(), _workers_cpu()
    if records:
        source = load_submissions(subs)
        timings["load scores.json (no re-scoring)"] = time.perf_counter() - t0
        build_site(source, tmp_path / "site", timings=timings,
                   reference_runs=demo / "reference-runs.yaml")
    else:
        build_site(subs, tmp_path / "site", timings=timings,
                   datasets=sorted(p for p in (demo / "datasets").iterdir() if p.is_dir()),
                   reference_runs=demo / "reference-runs.yaml", jobs=jobs)
    total_s, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    time.sleep(1)  # the forkserver reaps the last workers
    workers_s = _workers_cpu() - workers0
    sizes = _sizes(tmp_path / "site")
    total = sum(sizes.values())
    pages = {k: v for k, v in sizes.items() if k.endswith(".html")}
    largest = max(pages, key=lambda k: pages[k])
    folders: dict[str, int] = {}
    for k, v in sizes.items():
        top = k.split("/", 1)[0] if "/" in k else k
        folders[top] = folders.get(top, 0) + v
    print(f"\n{n} models (copies of {demo / 'submissions'}; copying {copying:.0f} s): "
          f"{len(sizes)} files, {total / 1e6:.1f} MB; largest page {largest} "
          f"{pages[largest] / 1e3:.0f} kB; build {total_s:.0f} s = " + ", ".join(
              f"{stage} {s:.1f} s" for stage, s in timings.items()))
    if not records:  # issue 37.2: the re-scoring cost per model at this scale
        rescore_cpu = timings["load + re-score CPU"] + workers_s
        print(f"  load + re-score per model: {timings['load + re-score'] / n:.3f} s wall, "
              f"{rescore_cpu / n:.3f} s CPU of all processes ({check_jobs(jobs)} jobs; "
              f"load average {os.getloadavg()[0]:.1f} at the end); CPU of the whole build "
              f"{cpu_s + workers_s:.0f} s")
    print("  by folder: " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(
        folders.items(), key=lambda kv: -kv[1])[:8]))
    assert len([k for k in pages if k.startswith("models/")]) == n
    max_total, max_page, max_s = GOALS[n]
    if max_total is not None:
        assert total < max_total, f"{total / 1e6:.1f} MB"
    if max_page is not None:
        assert pages[largest] < max_page, f"{largest}: {pages[largest] / 1e3:.0f} kB"
    if max_s is not None and not records:
        assert total_s < max_s, f"{total_s:.0f} s"
