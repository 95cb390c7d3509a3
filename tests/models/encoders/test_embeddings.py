"""The image-embedding hook with the real EfficientNet-Lite0."""

from __future__ import annotations

import io

import numpy as np
import pytest
import skimage.data
from PIL import Image

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.encoders.embeddings import class_prototypes, embed_images

MODEL = "classifier:efficientnet-lite0"


def test_embed_images_batched_equals_whole() -> None:
    photos = [Image.fromarray(a) for a in (skimage.data.chelsea(), skimage.data.coffee(),
                                           skimage.data.astronaut())]
    buf = io.BytesIO()
    photos[1].save(buf, format="PNG")
    inputs = [photos[0], {"bytes": buf.getvalue(), "path": None}, photos[2]]
    emb = embed_images(MODEL, inputs, device="cpu", batch_size=2)
    assert emb.shape == (3, 1280) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    whole = embed_images(MODEL, photos, device="cpu", batch_size=8)
    np.testing.assert_allclose(emb, whole, rtol=1e-4, atol=1e-5)
    # nearest prototype of the cat photo is a cat class, of the coffee photo espresso
    nearest = (emb @ class_prototypes(MODEL, device="cpu").T).argmax(axis=1)
    assert int(nearest[0]) in {281, 282, 285} and int(nearest[1]) == 967
    # different photos give different directions
    assert float(emb[0] @ emb[1]) < 0.9


def test_errors() -> None:
    with pytest.raises(VlmrobustError, match="at least one image"):
        embed_images(MODEL, [], device="cpu")
    with pytest.raises(VlmrobustError, match="batch_size"):
        embed_images(MODEL, [Image.new("RGB", (8, 8))], batch_size=0)
