"""A natural test photo at any size, shared by the corruption engine tests."""

from __future__ import annotations

import numpy as np
from PIL import Image


def natural(h: int, w: int) -> np.ndarray:
    import skimage.data

    return np.asarray(Image.fromarray(skimage.data.astronaut()).resize((w, h), Image.BILINEAR))
