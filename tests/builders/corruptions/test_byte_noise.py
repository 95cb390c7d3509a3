"""Gaussian and speckle noise drawn as output bytes (byte_noise.py) against the
closed form of the reference's quantised distribution (scipy.stats.norm)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tests.fixtures.corruption import natural
from vlmrobust.builders.corruptions import byte_noise, corrupt
from vlmrobust.builders.corruptions.noise import GAUSSIAN_SCALE, SPECKLE_SCALE


def closed_form(level: int, scale: float, multiplicative: bool) -> np.ndarray:
    """P(uint8(clip(t, 0, 1)·255) = b) for t = f + σz or f(1 + σz), f = level/255,
    from the normal CDF at the 255 byte edges b/255 (an independent statement)."""
    f = level / 255.0
    edges = np.arange(1, 256) / 255.0
    if multiplicative:
        if level == 0:
            return np.eye(256)[0]
        cdf = stats.norm.cdf((edges / f - 1.0) / scale)
    else:
        cdf = stats.norm.cdf(edges, loc=f, scale=scale)
    return np.diff(np.concatenate([[0.0], cdf, [1.0]]))


@pytest.mark.parametrize("multiplicative,scales", [(False, GAUSSIAN_SCALE),
                                                   (True, SPECKLE_SCALE)])
def test_alias_tables_sample_the_closed_form(multiplicative: bool, scales: tuple) -> None:
    for scale in scales:
        table = byte_noise.alias_table(scale, multiplicative)
        sampled = byte_noise.table_probabilities(table)
        expected = np.stack([closed_form(v, scale, multiplicative) for v in range(256)])
        assert np.abs(sampled - expected).max() < 1e-8, scale
        assert np.abs(sampled.sum(axis=1) - 1.0).max() < 1e-12


@pytest.mark.parametrize("name,scale,multiplicative", [
    ("gaussian_noise", GAUSSIAN_SCALE[0], False), ("gaussian_noise", GAUSSIAN_SCALE[4], False),
    ("speckle_noise", SPECKLE_SCALE[0], True), ("speckle_noise", SPECKLE_SCALE[4], True)])
def test_corrupted_bytes_follow_the_closed_form(name: str, scale: float,
                                                multiplicative: bool) -> None:
    """A chi-square test of the production stream's output bytes, per input level."""
    severity = 1 if scale in (GAUSSIAN_SCALE[0], SPECKLE_SCALE[0]) else 5
    for level in (0, 3, 128, 250, 255):
        img = np.full((200, 200, 3), level, np.uint8)
        out = corrupt(img, name, severity, item_id=f"chi{level}")
        counts = np.bincount(out.reshape(-1), minlength=256)
        p = closed_form(level, scale, multiplicative)
        expected = p * out.size
        keep = expected >= 5  # pool the thin tails into one cell
        observed = np.append(counts[keep], counts[~keep].sum())
        wanted = np.append(expected[keep], expected[~keep].sum())
        if wanted[-1] < 5:
            observed, wanted = observed[:-1], wanted[:-1]
            wanted = wanted * observed.sum() / wanted.sum()
        if len(observed) == 1:
            assert observed[0] == out.size, (level, name)
            continue
        assert stats.chisquare(observed, wanted).pvalue > 1e-4, (name, scale, level)


def test_sampling_reads_both_halves_of_each_draw_and_checks_its_input() -> None:
    table = byte_noise.alias_table(0.2, False)
    levels = np.full(4, 128, np.uint8)
    # column = top 8 bits of each 32-bit half; threshold 0 never keeps -> alias
    raw = np.array([(0x05FFFFFF << 32) | 0x03000000, (0x07000000 << 32) | 0xFF000000],
                   np.uint64)
    got = byte_noise.sample_bytes(levels, raw, table)
    entries = table[128, [3, 5, 255, 7]]
    keep_low = np.array([0x000000, 0xFFFFFF, 0x000000, 0x000000]) < (entries >> 8)
    expected = np.where(keep_low, [3, 5, 255, 7], entries & 255)
    assert got.tolist() == expected.tolist()
    with pytest.raises(ValueError, match="cannot cover"):
        byte_noise.sample_bytes(np.zeros(5, np.uint8), raw, table)
    with pytest.raises(ValueError, match="positive"):
        byte_noise.byte_probabilities(0.0, False)


def test_noise_keeps_the_image_shape_and_differs_by_item() -> None:
    img = natural(33, 47)
    for name in ("gaussian_noise", "speckle_noise"):
        a = corrupt(img, name, 3, item_id="a")
        assert a.shape == img.shape and a.dtype == np.uint8
        assert not np.array_equal(a, corrupt(img, name, 3, item_id="b"))
