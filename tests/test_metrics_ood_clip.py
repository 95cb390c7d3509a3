"""MCM on a tiny randomly initialised open_clip model equals a hand computation
from its embeddings: the adapter's logits, with the logit scale undone."""

from __future__ import annotations

import json

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from vlmrobust.metrics.ood_scores import clip_cosines, mcm, msp
from vlmrobust.models import load_adapter
from vlmrobust.models.clip import ClipAdapter

TINY_CFG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 24, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}
SCALE = 37.0  # not CLIP's 100: the scale must come from the model, not a constant


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> ClipAdapter:
    import open_clip

    folder = tmp_path_factory.mktemp("tiny_clip_mcm")
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": TINY_CFG}))
    with torch.random.fork_rng():
        torch.manual_seed(1)
        model = open_clip.create_model(f"local-dir:{folder}")
    with torch.no_grad():
        model.logit_scale.fill_(np.log(SCALE))
    torch.save(model.state_dict(), folder / "open_clip_pytorch_model.bin")
    adapter = load_adapter(f"clip:local-dir:{folder}", device="cpu")
    assert isinstance(adapter, ClipAdapter)
    return adapter


def test_mcm_from_adapter_logits_equals_hand_computation(clip: ClipAdapter) -> None:
    images = [Image.fromarray(skimage.data.chelsea()), Image.fromarray(skimage.data.coffee())]
    options = [["tabby cat", "espresso", "rocket"], ["espresso", "tabby cat"]]
    out = clip.option_logits([{"id": str(i), "image": im, "options": o}
                              for i, (im, o) in enumerate(zip(images, options, strict=True))])
    logits = np.where(np.isnan(out), -np.inf, out)  # the scorer pads with -inf
    scale = float(clip.model.logit_scale.detach().exp())
    assert scale == pytest.approx(SCALE)
    got = mcm(clip_cosines(logits, scale))

    img = clip.embed_images(images).astype(np.float64)
    want = []
    for i, opts in enumerate(options):
        cos = clip.embed_texts(opts).astype(np.float64) @ img[i]  # unit vectors: cosines
        want.append(np.exp(cos).max() / np.exp(cos).sum())  # τ = 1
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # MSP of the scaled logits is a different score (softmax at temperature 1/scale)
    assert not np.allclose(msp(logits), want, rtol=1e-3)
