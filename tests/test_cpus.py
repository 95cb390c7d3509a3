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
    assert default_threads(tmp_path, load=0.0, own=0.0, host_cpus=8) == 8
    assert default_threads(tmp_path, load=4.0, own=0.0, host_cpus=8) == 4
    assert default_threads(tmp_path, load=40.0, own=0.0, host_cpus=8) == 1
    # our own part of the load average is not another process's
    assert default_threads(tmp_path, load=4.0, own=4.0, host_cpus=8) == 8
    # a 16-CPU host, half busy, of which we may use 8: the idle share of ours
    assert default_threads(tmp_path, load=8.0, own=0.0, host_cpus=16) == 4
    # a quota of 2 CPUs caps it; the host's load scales that share too
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert default_threads(tmp_path, load=0.0, own=0.0, host_cpus=8) == 2
    assert default_threads(tmp_path, load=6.0, own=0.0, host_cpus=8) == 1


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
