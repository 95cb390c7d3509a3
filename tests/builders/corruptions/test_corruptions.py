"""The corruption engine's contract: every corruption at every severity on every
kind of input, reproducibility across processes, seeding, and clear errors."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.corruption import natural
from vlmrobust.builders.corruptions import (
    ALL_CORRUPTIONS,
    GROUPS,
    SEVERITIES,
    check_corruptions,
    check_severity,
    corrupt,
    encode_png,
    to_rgb_array,
)
from vlmrobust.builders.corruptions.draws import derive_seed
from vlmrobust.builders.corruptions.reference import load_reference
from vlmrobust.core.errors import VlmrobustError

RANDOM = {"gaussian_noise", "shot_noise", "impulse_noise", "speckle_noise", "glass_blur",
          "motion_blur", "fog", "frost", "snow", "spatter", "elastic_transform"}



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
    # the global numpy state is neither read nor changed (restored for the next test)
    saved = np.random.get_state()
    try:
        np.random.seed(5)
        before = np.random.get_state()[1].copy()
        corrupt(img, "gaussian_noise", 2, item_id="a")
        assert (np.random.get_state()[1] == before).all()
    finally:
        np.random.set_state(saved)


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


