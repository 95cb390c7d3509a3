"""The corruption engine: every corruption at every severity on every kind of
input, reproducibility across processes, and fidelity to the patched
imagecorruptions 1.1.2 reference."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from vlmrobust.builders.corruptions import (
    ALL_CORRUPTIONS,
    GROUPS,
    SEVERITIES,
    apply_corruption,
    check_corruptions,
    check_severity,
    corrupt,
    encode_png,
    to_rgb_array,
)
from vlmrobust.builders.corruptions.draws import derive_seed
from vlmrobust.builders.corruptions.reference import LegacyDraws, load_reference, reference_corrupt
from vlmrobust.core.errors import VlmrobustError

RANDOM = {"gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "glass_blur",
          "motion_blur", "fog", "frost", "snow", "spatter", "elastic_transform"}


def natural(h: int, w: int) -> np.ndarray:
    import skimage.data

    return np.asarray(Image.fromarray(skimage.data.astronaut()).resize((w, h), Image.BILINEAR))


def test_registry_has_the_19_corruptions() -> None:
    assert len(ALL_CORRUPTIONS) == 19 == len(set(ALL_CORRUPTIONS))
    assert sum(len(g) for g in GROUPS.values()) == 19
    assert set(ALL_CORRUPTIONS) == set(load_reference().corruption_dict)


INPUTS = {
    "rgb-64x48": lambda: Image.fromarray(natural(48, 64)),
    "grey-97x131": lambda: Image.fromarray(natural(131, 97)).convert("L"),
    "rgba-odd": lambda: Image.fromarray(
        np.dstack([natural(41, 33), np.linspace(0, 255, 41 * 33).reshape(41, 33).astype(np.uint8)]),
        "RGBA"),
    "tiny-32": lambda: Image.fromarray(natural(32, 32)),
    "palette": lambda: Image.fromarray(natural(36, 40)).convert("P"),
    "tinier-7x5": lambda: Image.fromarray(natural(5, 7)),
}


@pytest.mark.parametrize("kind", list(INPUTS))
def test_every_corruption_and_severity_gives_rgb_of_input_size(kind: str) -> None:
    image = INPUTS[kind]()
    clean = to_rgb_array(image)
    changed = 0
    for name in ALL_CORRUPTIONS:
        for severity in SEVERITIES:
            out = corrupt(image, name, severity, item_id=kind)
            assert out.dtype == np.uint8, (name, severity)
            assert out.shape == (image.size[1], image.size[0], 3), (name, severity)
            changed += int(not np.array_equal(out, clean))
    # almost every variant changes the image (a tiny image may survive e.g. pixelate)
    assert changed >= 90


def test_rgba_is_composited_over_white_and_grey_is_replicated() -> None:
    rgba = np.zeros((4, 4, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[0, 0, 3] = 255
    out = to_rgb_array(rgba)
    assert out[0, 0].tolist() == [200, 0, 0]
    assert out[1, 1].tolist() == [255, 255, 255]
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert (to_rgb_array(grey) == grey[..., None]).all()
    with pytest.raises(VlmrobustError, match="uint8"):
        to_rgb_array(np.zeros((4, 4), np.float32))


def test_same_item_corruption_severity_gives_same_bytes_in_another_process() -> None:
    img = natural(40, 52)
    here = hashlib.sha256()
    for name in ALL_CORRUPTIONS:
        for s in (1, 5):
            here.update(encode_png(corrupt(img, name, s, item_id="q-7", seed=11)))
    code = textwrap.dedent("""
        import hashlib, sys
        import numpy as np
        from PIL import Image
        import skimage.data
        from vlmrobust.builders.corruptions import ALL_CORRUPTIONS, corrupt, encode_png
        img = np.asarray(Image.fromarray(skimage.data.astronaut()).resize((52, 40), Image.BILINEAR))
        h = hashlib.sha256()
        for name in ALL_CORRUPTIONS:
            for s in (1, 5):
                h.update(encode_png(corrupt(img, name, s, item_id="q-7", seed=11)))
        print(h.hexdigest())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert proc.stdout.strip() == here.hexdigest()


def test_seed_depends_on_every_part_of_the_key() -> None:
    base = derive_seed(0, "a", "fog", 1)
    others = {derive_seed(1, "a", "fog", 1), derive_seed(0, "b", "fog", 1),
              derive_seed(0, "a", "snow", 1), derive_seed(0, "a", "fog", 2)}
    assert base not in others and len(others) == 4
    img = natural(40, 40)
    for name in sorted(RANDOM):
        a = corrupt(img, name, 3, item_id="a")
        b = corrupt(img, name, 3, item_id="b")
        assert not np.array_equal(a, b), name
    # the global numpy state is neither read nor changed
    np.random.seed(5)
    before = np.random.get_state()[1].copy()
    corrupt(img, "gaussian_noise", 2, item_id="a")
    assert (np.random.get_state()[1] == before).all()


@pytest.mark.parametrize("name", ALL_CORRUPTIONS)
def test_matches_the_patched_reference(name: str) -> None:
    """With the legacy stream the reference consumes after np.random.seed(k),
    every corruption reproduces the reference pixel for pixel (±1 where the
    floating-point summation order differs: motion blur's kernel sum)."""
    for shape in ((64, 80), (37, 45)):
        img = natural(*shape)
        for severity in SEVERITIES:
            seed = 100 + severity
            ref = reference_corrupt(img, name, severity, seed)
            ours = apply_corruption(img, name, severity, LegacyDraws(seed))
            diff = np.abs(ref.astype(np.int16) - ours.astype(np.int16))
            assert diff.max() <= 1, (name, shape, severity, int(diff.max()))
            assert (diff > 0).mean() < 0.01, (name, shape, severity)


@pytest.mark.parametrize("name", ["gaussian_noise", "shot_noise", "impulse_noise",
                                  "speckle_noise", "spatter", "elastic_transform"])
def test_random_corruptions_follow_the_reference_distribution(name: str) -> None:
    """With the production Generator (not the legacy stream) the corruption has
    the reference's distribution: same mean change and spread per pixel."""
    img = natural(64, 64)
    for severity in (1, 5):
        ours = np.stack([corrupt(img, name, severity, item_id=str(i)) for i in range(6)])
        ref = np.stack([reference_corrupt(img, name, severity, 1000 + i) for i in range(6)])
        d_ours = ours.astype(float) - img
        d_ref = ref.astype(float) - img
        scale = max(d_ref.std(), 1.0)
        assert abs(d_ours.mean() - d_ref.mean()) < 0.1 * scale, (name, severity)
        assert abs(d_ours.std() - d_ref.std()) < 0.1 * scale, (name, severity)


def test_salt_and_pepper_codes_have_the_reference_probabilities() -> None:
    """The production draw splits one uniform per value; salt and pepper must each
    come with probability amount/2 (binomial bound), and impulse noise must keep
    every other byte as it was."""
    from vlmrobust.builders.corruptions.draws import draws_for

    n = 300_000
    for amount in (0.03, 0.27):
        codes = draws_for(0, "sp", "impulse_noise", 1).salt_and_pepper((n,), amount)
        sd = np.sqrt(n * amount / 2 * (1 - amount / 2))
        for code in (1, 2):
            assert abs(int((codes == code).sum()) - n * amount / 2) < 5 * sd, (amount, code)
        assert set(np.unique(codes).tolist()) <= {0, 1, 2}
    img = natural(64, 64)
    out = corrupt(img, "impulse_noise", 5, item_id="sp")
    changed = out != img
    assert set(np.unique(out[changed]).tolist()) <= {0, 255}
    assert abs(changed.mean() - 0.27 * (1 - (img == 0).mean() / 2 - (img == 255).mean() / 2)) < 0.02


def test_noise_parameters_closed_form() -> None:
    grey = np.full((200, 200, 3), 128, np.uint8)
    out = corrupt(grey, "gaussian_noise", 1, item_id="g").astype(float) / 255
    # σ = 0.08 on [0, 1]; truncation to uint8 shifts the mean by −0.5/255
    assert abs(out.std() - 0.08) < 0.004
    assert abs(out.mean() - (128 - 0.5) / 255) < 0.003
    imp = corrupt(grey, "impulse_noise", 4, item_id="i")
    flipped = imp != 128
    assert abs(flipped.mean() - 0.17) < 0.01
    assert abs((imp[flipped] == 255).mean() - 0.5) < 0.03


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


def test_bad_names_and_severities_fail_clearly() -> None:
    img = natural(32, 32)
    with pytest.raises(VlmrobustError, match="did you mean 'motion_blur'"):
        corrupt(img, "motion_blurr", 1, item_id="x")
    with pytest.raises(VlmrobustError, match="did you mean 'jpeg_compression'"):
        check_corruptions(["fog", "jpeg_compresion"])
    with pytest.raises(VlmrobustError, match="twice"):
        check_corruptions(["fog", "fog"])
    for bad in (0, 6, 2.5, True, "3"):
        with pytest.raises(VlmrobustError, match=r"1\.\.5"):
            check_severity(bad)
        with pytest.raises(VlmrobustError, match=r"1\.\.5"):
            corrupt(img, "fog", bad, item_id="x")  # type: ignore[arg-type]


def test_sixteen_bit_and_premultiplied_modes() -> None:
    sixteen = Image.fromarray(np.array([[0, 256, 65535]], np.uint16))
    assert sixteen.mode.startswith("I;16")
    assert to_rgb_array(sixteen)[0, :, 0].tolist() == [0, 1, 255]
    assert to_rgb_array(Image.new("RGBa", (3, 2))).shape == (2, 3, 3)
    with pytest.raises(VlmrobustError, match="'La' cannot be converted"):
        to_rgb_array(Image.new("La", (3, 2)))


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


def test_plasma_is_the_reference_fractal_and_fog_its_pixels() -> None:
    """The compiled diamond-square consumes the reference's draws in its order
    and gives its map exactly; fog built on it gives the reference's bytes."""
    from vlmrobust.builders.corruptions import weather

    ref_module = load_reference()
    for size, decay in ((256, 1.7), (64, 2.0), (4, 1.4)):
        np.random.seed(11)
        expected = ref_module.corruptions.plasma_fractal(mapsize=size, wibbledecay=decay)
        assert np.array_equal(weather.plasma(size, decay, LegacyDraws(11)), expected), size
    img = natural(50, 70)
    for severity in SEVERITIES:
        ours = apply_corruption(img, "fog", severity, LegacyDraws(7))
        assert np.array_equal(ours, reference_corrupt(img, "fog", severity, 7)), severity


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


def test_jpeg_through_opencv_equals_pillow() -> None:
    """The engine's JPEG round trip (OpenCV) gives Pillow's pixels, which is what
    the reference uses, on photos and noise of awkward sizes."""
    import io as _io

    import skimage.data

    from vlmrobust.builders.corruptions import digital

    rng = np.random.default_rng(2)
    images = [natural(37, 45), natural(101, 203), rng.integers(0, 256, (17, 3, 3), np.uint8),
              np.asarray(Image.fromarray(skimage.data.coffee()).resize((75, 50)))]
    for img in images:
        for severity in SEVERITIES:
            buf = _io.BytesIO()
            Image.fromarray(img).save(buf, "JPEG", quality=digital.JPEG_QUALITY[severity - 1])
            with Image.open(buf) as im:
                expected = np.asarray(im.convert("RGB"))
            ours = digital.jpeg_compression(img, severity, LegacyDraws(0))
            assert np.array_equal(ours, expected), (img.shape, severity)
