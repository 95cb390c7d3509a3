"""The engine's compiled kernels against independent implementations: scipy,
scikit-image, plain Python loops and closed-form distributions."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures.corruption import natural


def test_glass_scramble_is_the_reference_one_way_copy() -> None:
    """The compiled loop against a plain-Python statement of the reference's
    loop semantics (x[a], x[b] = x[b], x[a] on views copies b into a)."""
    from vlmrobust.builders.corruptions.glass import _scramble

    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, size=(12, 10, 3), dtype=np.uint8)
    reach = 2
    shifts = rng.integers(-reach, reach, size=(2, 12 - 2 * reach, 10 - 2 * reach, 2))
    expected = img.copy()
    for it in range(2):
        for i, h in enumerate(range(12 - reach, reach, -1)):
            for j, w in enumerate(range(10 - reach, reach, -1)):
                dx, dy = shifts[it, i, j]
                a, b = expected[h, w], expected[h + dy, w + dx]
                expected[h, w], expected[h + dy, w + dx] = b, a
    got = img.copy()
    _scramble(got, shifts.astype(np.int64), reach)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("saturation,settings", [
    (False, [(1.0, c) for c in (0.1, 0.2, 0.3, 0.4, 0.5)]),
    (True, [(0.3, 0.0), (0.1, 0.0), (2.0, 0.0), (5.0, 0.1), (20.0, 0.2)]),
])
def test_hsv_kernel_equals_scikit_images_float64_round_trip(saturation: bool,
                                                            settings: list) -> None:
    """The sorted-channel kernel must give scikit-image's pixels exactly, on
    random colours, on every red-green pair at five blue levels, and on the
    cases where rounding or the sector decides (greys, ties at the maximum or
    minimum, black, white)."""
    import skimage.color

    from vlmrobust.builders.corruptions import hsv

    rng = np.random.default_rng(17)
    colours = [rng.integers(0, 256, (20000, 3))]
    levels = np.arange(256)
    colours.append(np.stack([levels] * 3, axis=1))  # greys
    for blue in (0, 1, 128, 254, 255):
        red, green = np.meshgrid(levels, levels, indexing="ij")
        colours.append(np.stack([red.ravel(), green.ravel(), np.full(red.size, blue)], axis=1))
    a, b = rng.integers(0, 256, (2, 4000))
    for order in ((0, 0, 1), (0, 1, 0), (1, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)):
        colours.append(np.stack([np.where(np.array(order) == 0, hi, lo)
                                 for hi, lo in zip(np.maximum(a, b), np.minimum(a, b), strict=True)]))
    img = np.concatenate(colours).astype(np.uint8).reshape(1, -1, 3)
    for gain, offset in settings:
        ref_hsv = skimage.color.rgb2hsv(img / 255.0)
        if saturation:
            ref_hsv[..., 1] = np.clip(ref_hsv[..., 1] * gain + offset, 0, 1)
        else:
            ref_hsv[..., 2] = np.clip(ref_hsv[..., 2] + offset, 0, 1)
        expected = np.uint8(np.clip(skimage.color.hsv2rgb(ref_hsv), 0, 1) * 255)
        ours = hsv.hsv_adjust(img, saturation=saturation, gain=gain, offset=offset)
        assert np.array_equal(ours, expected), (gain, offset, int((ours != expected).sum()))
        # any shape and memory layout (the kernel works on planar copies)
        tile = img[0, :4 * 37 * 5].reshape(4 * 5, 37, 3)[::-1, :, :]
        assert np.array_equal(hsv.hsv_adjust(tile, saturation=saturation, gain=gain, offset=offset),
                              expected[0, :4 * 37 * 5].reshape(4 * 5, 37, 3)[::-1])


def test_fma_divisions_are_correctly_rounded_on_the_kernels_whole_domain() -> None:
    """kernels.div_exact replaces the reference's divisions by 255 and by 6. It must
    equal true division for every byte / 255 and for every hue numerator
    base ± (mid − min)/(max − min) that sorted bytes produce."""
    import numba

    from vlmrobust.builders.corruptions import kernels

    @numba.njit
    def mismatches() -> int:  # pragma: no cover - compiled
        bad = 0
        tab = np.empty(256)
        for i in range(256):
            tab[i] = i / 255.0
            bad += kernels.div_exact(np.float64(i), 255.0, 1.0 / 255.0) != tab[i]
        for mx in range(256):
            for mn in range(mx + 1):
                delta = tab[mx] - tab[mn]
                for md in range(mn, mx + 1):
                    z = (tab[md] - tab[mn]) / (delta if mx > mn else 1.0)
                    for base in (0.0, 2.0, 4.0):
                        for x in (base + z, base - z):
                            bad += kernels.div_exact(x, 6.0, 1.0 / 6.0) != x / 6.0
        return bad

    assert mismatches() == 0
    # and the identity is not vacuous: the plain product is off for some bytes
    ints = np.arange(256.0)
    assert (ints * (1.0 / 255.0) != ints / 255.0).any()


def test_saturation_keeps_every_byte_of_the_maximum() -> None:
    """The saturation kernel writes max(R, G, B) unchanged for the channel
    holding V; that is what uint8(clip(m/255)·255) gives for every byte."""
    m = np.arange(256)
    assert np.array_equal(np.uint8(np.clip(m / 255.0, 0, 1) * 255), m)


def test_gaussian_is_scipys_arithmetic_bit_for_bit() -> None:
    """float64 filtering repeats scipy's correlate1d operation for operation, so
    the results are identical (both borders, kernels longer than the image,
    channels); float32 (OpenCV) stays within float32 rounding."""
    from scipy import ndimage

    from vlmrobust.builders.corruptions import filters, kernels

    rng = np.random.default_rng(3)
    for shape in ((61, 47), (9, 5), (1, 30)):
        noise = rng.normal(size=shape)
        for mode in ("nearest", "reflect"):
            for sigma in (0.7, 2.0, 6.0):
                ours = filters.gaussian(noise, sigma, channels=False, mode=mode)
                ref = ndimage.gaussian_filter(noise, sigma, mode=mode, truncate=4.0)
                assert np.array_equal(ours, ref), (shape, mode, sigma)
    img = natural(33, 29)
    unit = kernels.unit(img)
    assert np.array_equal(unit, img / 255.0)
    for sigma in (1.0, 3.0):
        ours = filters.gaussian(unit, sigma, channels=True)
        ref = ndimage.gaussian_filter(img / 255.0, [sigma, sigma, 0.0], mode="nearest",
                                      truncate=4.0)
        assert np.array_equal(ours, ref)
    f32 = filters.gaussian(noise.astype(np.float32), 2.0, channels=False)
    ref32 = ndimage.gaussian_filter(noise, 2.0, mode="nearest", truncate=4.0)
    assert f32.dtype == np.float32 and np.abs(f32 - ref32).max() < 1e-5


def test_motion_blur_taps_equal_a_loop_of_replicated_shifts() -> None:
    """Independent check of the compiled shift-and-add: np.pad + slicing."""
    from vlmrobust.builders.corruptions import filters

    img = natural(23, 31)
    for angle in (-44.0, 0.0, 30.0, 90.0):
        dys, dxs, ws = filters.motion_taps(6, 3, angle, img.shape[:2])
        expected = np.zeros(img.shape, np.float64)
        padded = np.pad(img, ((40, 40), (40, 40), (0, 0)), mode="edge")
        for dy, dx, w in zip(dys, dxs, ws, strict=True):
            expected = expected + w * padded[40 - dy:40 - dy + 23, 40 - dx:40 - dx + 31]
        assert np.array_equal(filters.motion_blur(img, 6, 3, angle), expected), angle


def test_center_zoom_accumulates_in_place() -> None:
    from vlmrobust.builders.corruptions import filters

    f = (natural(40, 36) / 255.0).astype(np.float32)
    acc = np.zeros_like(f)
    total = np.zeros_like(f)
    for factor in (1.06, 1.21):
        filters.center_zoom(f, factor, out_hw=f.shape[:2], add_to=acc)
        total += filters.center_zoom(f, factor, out_hw=f.shape[:2])
    assert np.array_equal(acc, total)


def test_poisson_levels_has_the_truncated_poisson_distribution() -> None:
    """The inverse-CDF sampler against scipy's Poisson pmf, per count, for a
    few rates (counts at or above the cap are reported as the cap)."""
    from scipy.stats import poisson

    from vlmrobust.builders.corruptions.draws import SeededDraws

    n = 200_000
    for level, lam in ((0, 60), (128, 12), (255, 3), (40, 25)):
        counts = SeededDraws(level * 1000 + lam).poisson_levels(
            np.full(n, level, np.uint8), lam, lam)
        rate = level / 255 * lam
        expected = poisson.pmf(np.arange(lam), rate)
        expected = np.append(expected, 1 - expected.sum())  # the cap collects the tail
        observed = np.bincount(counts, minlength=lam + 1) / n
        sd = np.sqrt(expected * (1 - expected) / n)
        assert (np.abs(observed - expected) <= 5 * sd + 1e-12).all(), (level, lam)


def test_elastic_resampling_equals_scipy_map_coordinates() -> None:
    """The compiled order-1 'reflect' resampling against scipy itself, with
    displacements that leave the image on every side (far beyond one period)."""
    from scipy import ndimage

    from vlmrobust.builders.corruptions.digital import _displace

    rng = np.random.default_rng(5)
    h, w = 19, 26
    f = (rng.random((h, w, 3)) * 1.1).astype(np.float32)  # some values clip at 1
    for scale in (0.7, 4.0, 60.0):
        dy = rng.normal(0, scale, (h, w)).astype(np.float32)
        dx = rng.normal(0, scale, (h, w)).astype(np.float32)
        yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        coords = np.stack([yy + dy, xx + dx])
        ref = np.stack([ndimage.map_coordinates(f[..., c], coords, order=1, mode="reflect")
                        for c in range(3)], axis=-1)
        expected = (np.clip(ref, 0, 1) * 255).astype(np.uint8)
        ours = np.empty((h, w, 3), np.uint8)
        _displace(f, dy, dx, ours)
        assert np.array_equal(ours, expected), scale


