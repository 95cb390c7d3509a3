"""The CPU micro-batch probe (issue 39.2): the fastest size per image wins
only when it beats the default by the margin; the adapter probes once per
process for a name and thread count, and its logits cache keeps the sizes apart."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.threads import one_torch_thread
from vlmrobust.models.classifiers import adapter as clf
from vlmrobust.models.classifiers.micro_batch import (
    CPU_MICRO_BATCH,
    PROBE_SIZES,
    fastest_micro_batch,
)


def fake(cost: dict[int, float]) -> tuple[Any, Any, list[int]]:
    """A forward costing ``cost[b]`` seconds per image on a fake clock."""
    now = [0.0]
    calls: list[int] = []

    def forward(b: int) -> None:
        calls.append(b)
        now[0] += cost[b] * b

    return forward, lambda: now[0], calls


def test_fastest_wins_beyond_the_margin() -> None:
    forward, clock, calls = fake({1: 0.030, 2: 0.020, 4: 0.025, 8: 0.040})
    chosen, per_image = fastest_micro_batch(forward, clock=clock, default=4)
    assert chosen == 2 and per_image == pytest.approx({1: 0.030, 2: 0.020, 4: 0.025, 8: 0.040})
    assert calls == [1, 1, 2, 2, 4, 4, 8, 8]  # one untimed forward before each timed one


def test_default_kept_within_the_margin() -> None:
    forward, clock, _ = fake({1: 0.030, 2: 0.0243, 4: 0.025, 8: 0.040})  # 2.8 % faster
    assert fastest_micro_batch(forward, clock=clock, default=4)[0] == 4
    forward, clock, _ = fake({1: 0.030, 2: 0.0243, 4: 0.025, 8: 0.040})
    assert fastest_micro_batch(forward, clock=clock, default=4, margin=0.0)[0] == 2
    forward, clock, _ = fake({1: 0.030, 2: 0.0243, 4: 0.025, 8: 0.040})
    assert fastest_micro_batch(forward, clock=clock)[0] == CPU_MICRO_BATCH


@pytest.mark.parametrize(("kwargs", "bad"), [
    ({"sizes": (1, 0)}, r"\[1, 0\]"), ({"sizes": ()}, r"\[\]"),
    ({"default": 3}, "micro-batch 3"), ({"margin": 1.5}, "1.5")])
def test_bad_arguments_named(kwargs: dict[str, Any], bad: str) -> None:
    with pytest.raises(ValueError, match=bad):
        fastest_micro_batch(lambda b: None, **kwargs)


@pytest.fixture(scope="module")
def lite0() -> clf.ClassifierAdapter:
    from vlmrobust.models import load_adapter

    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    assert isinstance(adapter, clf.ClassifierAdapter)
    return adapter


@pytest.mark.usefixtures(one_torch_thread.__name__)
def test_adapter_probes_once_per_process(lite0: clf.ClassifierAdapter,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clf, "_PROBED", {})
    sizes: list[int] = []
    real = clf.fastest_micro_batch

    def spy(forward: Any, **kwargs: Any) -> tuple[int, dict[int, float]]:
        chosen, per_image = real(lambda b: (sizes.append(b), forward(b)), **kwargs)
        assert set(per_image) == set(PROBE_SIZES) and min(per_image.values()) > 0
        return chosen, per_image

    monkeypatch.setattr(clf, "fastest_micro_batch", spy)
    assert lite0.micro_batch == CPU_MICRO_BATCH
    chosen = lite0.probe_micro_batch()
    assert chosen in PROBE_SIZES and lite0.micro_batch == chosen
    assert sizes == [b for b in PROBE_SIZES for _ in range(2)]
    lite0.micro_batch = CPU_MICRO_BATCH
    assert lite0.probe_micro_batch() == chosen and len(sizes) == 2 * len(PROBE_SIZES)


@pytest.mark.usefixtures(one_torch_thread.__name__)
def test_logits_cache_keeps_micro_batches_apart(lite0: clf.ClassifierAdapter,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Logits computed 2 per forward are not served to a run at 4 per forward
    (their rounding differs): the cache key holds the size."""
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))
    forwards: list[int] = []
    real = lite0._class_logits
    monkeypatch.setattr(lite0, "_class_logits", lambda ims: (forwards.append(len(ims)), real(ims))[1])
    # an empty process cache: another test on this worker may have computed the
    # same pixels at either size already (xdist decides which tests share a process)
    monkeypatch.setattr(clf, "_LOGITS_CACHE", OrderedDict())
    try:
        lite0.micro_batch = 2
        lite0.class_logits([image])
        lite0.micro_batch = 4
        lite0.class_logits([image])
        lite0.class_logits([image])  # served from the cache
    finally:
        lite0.micro_batch = CPU_MICRO_BATCH
    assert forwards == [1, 1]
