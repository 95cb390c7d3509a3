"""Fidelity to the patched imagecorruptions 1.1.2 reference: pixel for pixel
with the legacy stream, in distribution with the production Generator, and in
closed form for the noise parameters."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.corruption import natural
from vlmrobust.builders.corruptions import ALL_CORRUPTIONS, SEVERITIES, apply_corruption, corrupt
from vlmrobust.builders.corruptions.reference import LegacyDraws, load_reference, reference_corrupt


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


def test_plasma_is_the_reference_fractal_and_fog_its_pixels() -> None:
    """The compiled diamond-square consumes the reference's draws in its order
    and gives its map exactly; fog built on it gives the reference's bytes."""
    from vlmrobust.builders.corruptions import weather

    ref_module = load_reference()
    saved = np.random.get_state()  # the reference draws from the global state
    try:
        for size, decay in ((256, 1.7), (64, 2.0), (4, 1.4)):
            np.random.seed(11)
            expected = ref_module.corruptions.plasma_fractal(mapsize=size, wibbledecay=decay)
            assert np.array_equal(weather.plasma(size, decay, LegacyDraws(11)), expected), size
    finally:
        np.random.set_state(saved)
    img = natural(50, 70)
    for severity in SEVERITIES:
        ours = apply_corruption(img, "fog", severity, LegacyDraws(7))
        assert np.array_equal(ours, reference_corrupt(img, "fog", severity, 7)), severity


@pytest.mark.parametrize("decoder", ["fastest", "opencv"])
def test_jpeg_through_opencv_equals_pillow(decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's JPEG round trip (OpenCV's encoder, simplejpeg's decoder when
    installed, else OpenCV's) gives Pillow's pixels, which is what the reference
    uses, on photos and noise of awkward sizes."""
    import io as _io

    import skimage.data

    from vlmrobust.builders.corruptions import digital

    if decoder == "opencv":
        monkeypatch.setattr(digital, "_SIMPLEJPEG", None)
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
