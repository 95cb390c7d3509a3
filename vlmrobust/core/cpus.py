"""How many CPUs this process can actually use: the affinity mask, capped by a
cgroup CPU quota (containers and batch schedulers set one; ``os.cpu_count()``
sees the whole host). Thread pools default to this, since oversubscribing a
quota makes torch and OpenMP spin and throughput collapse."""

from __future__ import annotations

import math
import os
from pathlib import Path

_CGROUP = Path("/sys/fs/cgroup")


def _read(path: Path, limit: int = 256) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read(limit).strip()
    except (OSError, UnicodeDecodeError):
        return None


def cgroup_cpu_limit(root: Path = _CGROUP) -> float | None:
    """The CPU quota of the cgroup at ``root`` in CPUs (quota / period), or None
    when there is none. Reads cgroup v2 ``cpu.max`` ("max 100000" means no
    quota), else v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (−1: none).

    >>> cgroup_cpu_limit(Path("/nonexistent")) is None
    True
    """
    text = _read(root / "cpu.max")
    if text is not None:
        parts = text.split()
        if len(parts) == 2 and parts[0] != "max":
            try:
                quota, period = int(parts[0]), int(parts[1])
            except ValueError:
                return None
            return quota / period if quota > 0 and period > 0 else None
        return None
    for v1 in (root / "cpu", root / "cpu,cpuacct", root):
        quota_s = _read(v1 / "cpu.cfs_quota_us")
        period_s = _read(v1 / "cpu.cfs_period_us")
        if quota_s is None or period_s is None:
            continue
        try:
            quota, period = int(quota_s), int(period_s)
        except ValueError:
            return None
        return quota / period if quota > 0 and period > 0 else None
    return None


def available_cpus(root: Path = _CGROUP) -> int:
    """CPUs this process may run on (affinity mask), capped by the cgroup quota
    rounded up; at least 1."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    limit = cgroup_cpu_limit(root)
    if limit is not None:
        n = min(n, max(1, math.ceil(limit)))
    return max(1, n)


# The kernel's 1-minute load average is an exponential average sampled every
# 5 s with this time constant: a process that has run for t seconds shows in it
# only as (1 - exp(-t / 60)) of its CPU use, and a load that began seconds ago
# hardly shows at all; the run queue sampled now sees it at once.
_LOAD_WINDOW_S = 60.0
_RUNQUEUE_SAMPLES = 10
_RUNQUEUE_INTERVAL_S = 0.005  # 10 reads within 45 ms: a few scheduler slices


def host_load() -> float | None:
    """The host's 1-minute load average (runnable + waiting tasks), or None
    where the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _proc_start_age() -> float | None:
    """Seconds since this process started (Linux /proc), else None."""
    stat = _read(Path("/proc/self/stat"), 4096)
    uptime = _read(Path("/proc/uptime"))
    if stat is None or uptime is None:
        return None
    try:
        # field 22 (starttime, clock ticks after boot); the command name (field 2)
        # may hold spaces, so count from its closing parenthesis
        start = int(stat[stat.rindex(")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")
        return float(uptime.split()[0]) - start
    except (ValueError, IndexError, OSError):
        return None


def own_load() -> float:
    """This process's own share of :func:`host_load`: its CPU time (every
    thread) over its lifetime as busy cores, weighted by how much of the load
    average's window it has been alive for. 0.0 where the process start time is
    unknown (non-Linux)."""
    import time

    age = _proc_start_age()
    if age is None or age <= 0:
        return 0.0
    return time.process_time() / age * (1.0 - math.exp(-age / _LOAD_WINDOW_S))


def _own_running_threads() -> int:
    n = 0
    task = Path("/proc/self/task")
    try:
        tids = list(task.iterdir())
    except OSError:
        return 1
    for tid in tids:
        stat = _read(tid / "stat", 4096)
        if stat is not None and stat[stat.rfind(")") + 2:][:1] == "R":
            n += 1
    return max(1, n)  # the reading thread is running


def runnable_others(samples: int = _RUNQUEUE_SAMPLES,
                    interval: float = _RUNQUEUE_INTERVAL_S) -> float | None:
    """Tasks of other processes runnable right now: the host's run queue
    (``procs_running`` in /proc/stat) less this process's running threads,
    averaged over ``samples`` reads ``interval`` seconds apart; None without
    /proc/stat."""
    import time

    counts = []
    for k in range(samples):
        if k:
            time.sleep(interval)
        text = _read(Path("/proc/stat"), 1 << 20)
        if text is None:
            return None
        running = next((line.split()[1] for line in text.splitlines()
                        if line.startswith("procs_running ")), None)
        if running is None or not running.isdigit():
            return None
        counts.append(max(0, int(running) - _own_running_threads()))
    return sum(counts) / len(counts)


def other_load() -> float | None:
    """How many CPUs other processes keep busy: the larger of the 1-minute load
    average less this process's part of it and the run queue sampled now (a
    load that has just started, or one that just stopped), or None where
    neither can be read. Erring high costs at most a thread too few; erring low
    oversubscribes, and torch's threads then spin while they wait."""
    load = host_load()
    now = runnable_others()
    if load is None and now is None:
        return None
    return max(0.0 if load is None else load - own_load(), 0.0 if now is None else now)


def default_threads(root: Path = _CGROUP, other: float | None = None,
                    host_cpus: int | None = None) -> int:
    """Threads to use by default: :func:`available_cpus`, scaled by the share of
    the host's ``host_cpus`` that ``other`` processes leave idle (default:
    :func:`other_load`), rounded, at least 1. On an idle machine that is every
    available CPU; on a loaded one extra threads only wait and spin
    (EfficientNet-Lite0 on 2 cores, 2 busy processes beside it: 14 img/s with
    1 thread, 2.9 img/s with 2). Read from the machine now, so the answer
    changes with the load: a caller whose results depend on the thread count
    (float rounding) must choose once and record it (``predict`` keeps it in
    its resume journal).

    >>> default_threads(Path("/nonexistent"), other=1e9)
    1
    >>> default_threads(Path("/nonexistent"), other=0.0) == available_cpus(Path("/nonexistent"))
    True
    """
    n = available_cpus(root)
    if other is None:
        other = other_load()
        if other is None:
            return n
    host = max(n, host_cpus if host_cpus is not None else (os.cpu_count() or n))
    busy = min(float(host), max(0.0, other))
    return max(1, min(n, math.floor(n * (1.0 - busy / host) + 0.5)))


def check_threads(threads: int, flag: str = "--threads") -> int:
    """``threads`` if it is 1 .. :func:`available_cpus`, else one refusal line:
    ``predict --threads 100000`` made torch start 100,000 threads and crash with
    SIGSEGV (issue 40.12), and more threads than CPUs only slows a run down."""
    from vlmrobust.core.errors import VlmrobustError

    cpus = available_cpus()
    if not 1 <= threads <= cpus:
        raise VlmrobustError(f"{flag} {threads}: give 1 to {cpus} (the CPUs this process may use)")
    return threads
