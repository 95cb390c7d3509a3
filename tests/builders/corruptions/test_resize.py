"""Pixelate's compiled resize pair against Pillow's own BOX and NEAREST resizes."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.corruption import natural
from vlmrobust.builders.corruptions import digital, resize
from vlmrobust.builders.corruptions.reference import LegacyDraws

SIZES = [(224, 224), (37, 45), (333, 500), (5, 7), (1, 1), (2, 3), (101, 203), (1, 40),
         (40, 1), (97, 131), (768, 1024)]


def pillow_pixelate(x: np.ndarray, severity: int) -> np.ndarray:
    h, w = x.shape[:2]
    c = digital.PIXELATE[severity - 1]
    small = Image.fromarray(x).resize((max(1, int(w * c)), max(1, int(h * c))), Image.BOX)
    return np.asarray(small.resize((w, h), Image.NEAREST))


@pytest.mark.parametrize("hw", SIZES)
def test_pixelate_is_pillows_box_then_nearest(hw: tuple[int, int]) -> None:
    rng = np.random.default_rng(hw[0] * 1000 + hw[1])
    for x in (natural(*hw), rng.integers(0, 256, (*hw, 3), np.uint8),
              np.full((*hw, 3), 255, np.uint8)):
        for severity in range(1, 6):
            got = digital.pixelate(x, severity, LegacyDraws(0))
            assert got.dtype == np.uint8 and got.flags.c_contiguous
            assert np.array_equal(got, pillow_pixelate(x, severity)), (hw, severity)


def test_box_and_nearest_at_odd_ratios() -> None:
    """Ratios beyond pixelate's (enlarging boxes of 1, shrinking by 7.3x) still
    give Pillow's pixels."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (61, 83, 3), np.uint8)
    for sw, sh in ((83, 61), (11, 9), (82, 60), (40, 59), (1, 61)):
        expected = np.asarray(Image.fromarray(x).resize((sw, sh), Image.BOX)
                              .resize((83, 61), Image.NEAREST))
        assert np.array_equal(resize.box_down_nearest_up(x, sw, sh), expected), (sw, sh)


def test_box_plan_is_a_partition_with_pillows_weights() -> None:
    plan = resize.box_plan(224, 89)
    assert plan is not None
    first, count, weight = plan
    assert first[0] == 0 and (first[1:] == first[:-1] + count[:-1]).all()
    assert first[-1] + count[-1] <= 224
    assert weight.tolist() == [int(0.5 + (1 << 22) / n) for n in count.tolist()]
    assert resize.nearest_index(3, 7, 0).tolist() == resize.nearest_index(3, 7, 1).tolist()
