"""The CPU micro-batch of a classifier forward, chosen by a short probe
(issue 39.2).

On a CPU the images per forward that run fastest depend on the cache sizes
and the model (EfficientNet-Lite0 at one thread: 2-4 here, 8+ is slower per
image once the activations leave L2). A run long enough to repay it times one
forward of each candidate size on fixed random pixels (after one untimed
forward of that shape: oneDNN builds its kernels on first use) in CPU time of
the calling thread, so that other processes on a shared machine do not decide
it, and keeps the default unless another size is clearly faster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

# the fastest on the 2-core machine this was measured on: EfficientNet-Lite0,
# channels-last, one thread, CPU ms per image at 1/2/4/8: 32.1 / 28.8 / 33.9 /
# 38.5 (tests/perf/test_classifier_forward_ratio.py; 4 was fastest in NCHW)
CPU_MICRO_BATCH = 2
PROBE_SIZES = (1, 2, 4, 8)
# ~0.6 s of forwards at 25 ms an image: repaid by a 5 % gain after ~500 images
PROBE_MIN_ROWS = 512
PROBE_MARGIN = 0.05


def fastest_micro_batch(forward: Callable[[int], object],
                        sizes: Sequence[int] = PROBE_SIZES,
                        default: int = CPU_MICRO_BATCH, margin: float = PROBE_MARGIN,
                        clock: Callable[[], float] = time.thread_time,
                        ) -> tuple[int, dict[int, float]]:
    """(chosen size, seconds per image of each size): ``forward(b)`` runs one
    forward of ``b`` images; the size with the least time per image wins when
    it beats ``default``'s by more than ``margin`` (a fraction), else ``default``.

    >>> cost = {1: 3.0, 2: 2.0, 4: 2.5, 8: 4.0}  # seconds per image
    >>> now = [0.0]
    >>> fastest_micro_batch(lambda b: now.__setitem__(0, now[0] + cost[b] * b),
    ...                     clock=lambda: now[0])[0]
    2
    """
    if not sizes or any(int(b) != b or b < 1 for b in sizes):
        raise ValueError(f"probe sizes must be positive ints, got {list(sizes)!r}")
    if default not in sizes:
        raise ValueError(f"default micro-batch {default} is not among the sizes {list(sizes)}")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}")
    per_image: dict[int, float] = {}
    for b in sizes:
        forward(b)  # untimed: kernel creation and allocation for this shape
        start = clock()
        forward(b)
        per_image[b] = (clock() - start) / b
    best = min(sizes, key=lambda b: (per_image[b], b))
    if per_image[best] < per_image[default] * (1 - margin):
        return best, per_image
    return default, per_image
