"""CPU counts from the affinity mask and cgroup quotas (fake cgroup trees)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vlmrobust.core.cpus import available_cpus, cgroup_cpu_limit


def test_cgroup_v2_quota(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpu_limit(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_limit(tmp_path) is None
    (tmp_path / "cpu.max").write_text("garbage\n")
    assert cgroup_cpu_limit(tmp_path) is None


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    v1 = tmp_path / "cpu,cpuacct"
    v1.mkdir()
    (v1 / "cpu.cfs_quota_us").write_text("200000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_limit(tmp_path) == 2.0
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_limit(tmp_path) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity API")
def test_available_cpus_is_the_affinity_capped_by_the_quota(tmp_path: Path) -> None:
    mask = len(os.sched_getaffinity(0))
    assert available_cpus(tmp_path) == mask  # no quota files: the mask
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a CPU rounds up to one
    assert available_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text(f"{(mask + 8) * 100000} 100000\n")
    assert available_cpus(tmp_path) == mask


def test_default_threads_leave_other_processes_cores(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from vlmrobust.core.cpus import default_threads

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    # 8 CPUs, no quota: idle -> 8; 4 other busy tasks -> 4; saturated -> 1
    assert default_threads(tmp_path, other=0.0, host_cpus=8) == 8
    assert default_threads(tmp_path, other=4.0, host_cpus=8) == 4
    assert default_threads(tmp_path, other=40.0, host_cpus=8) == 1
    # a 16-CPU host, half busy, of which we may use 8: the idle share of ours
    assert default_threads(tmp_path, other=8.0, host_cpus=16) == 4
    # a quota of 2 CPUs caps it; the host's load scales that share too
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert default_threads(tmp_path, other=0.0, host_cpus=8) == 2
    assert default_threads(tmp_path, other=6.0, host_cpus=8) == 1


def test_other_load_is_the_larger_of_average_and_run_queue(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import vlmrobust.core.cpus as cpus

    monkeypatch.setattr(cpus, "own_load", lambda: 1.0)
    for avg, now, expected in ((4.0, 1.0, 3.0),   # a load that has just stopped
                               (0.5, 2.0, 2.0),   # one that has just started
                               (0.5, None, 0.0),  # our own part is not another's
                               (None, 1.5, 1.5), (None, None, None)):
        monkeypatch.setattr(cpus, "host_load", lambda avg=avg: avg)
        monkeypatch.setattr(cpus, "runnable_others", lambda now=now: now)
        assert cpus.other_load() == expected


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="no /proc")
def test_runnable_others_sees_busy_processes() -> None:
    """Two busy processes started a moment ago show in the run queue at once
    (the 1-minute load average would take a minute to show them)."""
    import subprocess
    import sys
    import time

    from vlmrobust.core.cpus import runnable_others

    before = runnable_others()
    assert before is not None and before >= 0
    code = "import time\nend = time.time() + 20\nwhile time.time() < end: pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        time.sleep(0.5)
        during = runnable_others()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    # other agents' processes come and go on a shared machine: only the lower
    # bound (our two) is certain
    assert during is not None and during >= 1.5


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc")
def test_own_load_counts_this_process_cpu_use() -> None:
    """A process that has kept a core busy shows a share of the load average;
    one that slept shows (almost) none."""
    import subprocess
    import sys

    def measure(work: str) -> float:
        code = ("import time\n" + work + "\nfrom vlmrobust.core.cpus import own_load\n"
                "print(own_load())")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, check=True).stdout
        return float(out)

    busy = measure("while time.process_time() < 1.0: pass")
    idle = measure("time.sleep(1.0)")
    # busy: ~1 core for ~1 s of a 60 s window, ~1 - exp(-1/60) ~ 0.016 (startup adds)
    assert 0.005 < busy < 0.2
    assert idle < busy / 2
