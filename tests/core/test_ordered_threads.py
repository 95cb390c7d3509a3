"""stream_in_order (issue 39.3): results in order, exactly ``width`` calls at
once, a new call as soon as any ends (a slow one does not hold the others),
the earliest failure raised after what came before it, nothing new started
after a failure."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from vlmrobust.core.ordered_threads import stream_in_order


class Probe:
    """A call that sleeps ``delays[x]`` and records how many ran at once."""

    def __init__(self, delays: dict[int, float]) -> None:
        self.delays = delays
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.started: list[int] = []

    def __call__(self, x: int) -> int:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.started.append(x)
        time.sleep(self.delays.get(x, 0.02))
        with self.lock:
            self.now -= 1
        return x * 10


def test_order_and_width() -> None:
    rng = np.random.default_rng(0)
    probe = Probe({i: float(d) for i, d in enumerate(rng.uniform(0, 0.03, 40))})
    assert list(stream_in_order(probe, range(40), width=6)) == [i * 10 for i in range(40)]
    assert probe.peak == 6


def test_a_slow_call_does_not_hold_the_window() -> None:
    """Item 0 takes 0.6 s; the 2 other slots go on through items 1..7
    (0.05 s each) meanwhile, instead of waiting for item 0 as a batch would."""
    probe = Probe({0: 0.6} | {i: 0.05 for i in range(1, 8)})
    start = time.perf_counter()
    got = stream_in_order(probe, range(8), width=3, ahead=8)
    assert next(got) == 0
    assert len(probe.started) == 8  # every other item started while item 0 ran
    assert list(got) == [i * 10 for i in range(1, 8)]
    assert time.perf_counter() - start < 1.5  # 0.6 s + scheduling on a loaded machine


def test_earliest_failure_after_what_came_before() -> None:
    def fn(x: int) -> int:
        if x in (3, 5):
            time.sleep(0.05 if x == 3 else 0.0)  # 5 fails first, 3 is earlier
            raise ValueError(f"bad {x}")
        time.sleep(0.01)
        return x

    got: list[int] = []
    with pytest.raises(ValueError, match="bad 3"):
        for value in stream_in_order(fn, range(100), width=4):
            got.append(value)
    assert got == [0, 1, 2]


def test_nothing_starts_after_a_failure() -> None:
    started: list[int] = []

    def fn(x: int) -> int:
        started.append(x)
        if x == 0:
            raise ValueError("first")
        time.sleep(0.05)
        return x

    with pytest.raises(ValueError, match="first"):
        list(stream_in_order(fn, range(100), width=2))
    time.sleep(0.2)
    assert max(started) < 4  # at most the items queued when item 0 failed


def test_source_failure_in_order() -> None:
    def source() -> Iterator[int]:
        yield from range(3)
        raise OSError("disk gone")

    got: list[int] = []
    with pytest.raises(OSError, match="disk gone"):
        for value in stream_in_order(lambda x: x, source(), width=3):
            got.append(value)
    assert got == [0, 1, 2]


@pytest.mark.parametrize(("width", "ahead", "bad"), [(0, None, "width"), (4, 2, "ahead")])
def test_bad_arguments_named(width: int, ahead: int | None, bad: str) -> None:
    with pytest.raises(ValueError, match=bad):
        list(stream_in_order(lambda x: x, range(3), width=width, ahead=ahead))
