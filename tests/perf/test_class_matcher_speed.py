"""Text answers of a 50,000-row classification submission matched against the
1,000-class ImageNet label space (vlmrobust.core.text.class_matcher.ClassMatcher: names
and synonyms indexed once per label space), and against 100 candidates per row
(a K = 100 config). Prints rows per second; checks a sample against the
unindexed matcher.

Run: python -m pytest tests/perf/test_class_matcher_speed.py --benchmark-only -s
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tests.evaluation.validate.test_validate_classification import MATCHER, _reference

N_ROWS = 50_000


def _texts() -> tuple[list[str], list[int], list[list[int]]]:
    rng = np.random.default_rng(0)
    texts, labels, cands = [], [], []
    for i in range(N_ROWS):
        label = int(rng.integers(1000))
        others = [int(c) for c in rng.choice(1000, size=99, replace=False) if c != label][:99]
        kind = i % 4
        if kind == 0:
            text = f"The answer is {MATCHER.names[label]}."
        elif kind == 1:
            text = f"This photo shows a {(MATCHER.synonyms[label] or ('thing',))[-1]} on a table."
        elif kind == 2:
            text = ("<think>" + f"Is it a {MATCHER.names[others[0]]}? " * 5 + "</think>"
                    f"It is a {MATCHER.names[label]}.")
        else:
            text = "I cannot tell what this is."
        texts.append(text)
        labels.append(label)
        cands.append([label, *others])
    return texts, labels, cands


def test_class_matcher_speed(benchmark: Any) -> None:
    texts, labels, cands = _texts()

    def full() -> list[int | None]:
        return [MATCHER.match(t) for t in texts]

    t0 = time.perf_counter()
    got = full()
    first = time.perf_counter() - t0
    benchmark.pedantic(full, rounds=1, iterations=1)
    warm = benchmark.stats.stats.min
    t0 = time.perf_counter()
    got_k = [MATCHER.match(t, c) for t, c in zip(texts, cands, strict=True)]
    k100 = time.perf_counter() - t0
    print(f"\nClassMatcher over 1,000 classes: {N_ROWS} texts, first pass {first:.2f} s "
          f"({N_ROWS / first:,.0f} rows/s), warm {warm:.2f} s ({N_ROWS / warm:,.0f} rows/s); "
          f"over 100 candidates per row {k100:.2f} s ({N_ROWS / k100:,.0f} rows/s)")
    assert sum(g == lab for g, lab in zip(got, labels, strict=True)) >= N_ROWS // 2
    assert all(g is None for g in got[3::4])
    sample = np.random.default_rng(1).choice(N_ROWS, size=200, replace=False).tolist()
    for i in sample:
        assert got[i] == _reference(MATCHER, texts[i], None)
        assert got_k[i] == _reference(MATCHER, texts[i], cands[i])
