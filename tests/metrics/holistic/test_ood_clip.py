"""MCM on a tiny randomly initialised open_clip model equals a hand computation
from open_clip's own embeddings (its own preprocessing, tokenizer and forward,
not the adapter's): the adapter's logits, with the logit scale undone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from tests.fixtures.clip import make_open_clip
from vlmrobust.metrics.holistic.ood_scores import clip_cosines, mcm, msp
from vlmrobust.models import load_adapter
from vlmrobust.models.clip.openclip import ClipAdapter

SCALE = 37.0  # not CLIP's 100: the scale must come from the model, not a constant


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_open_clip(tmp_path_factory.mktemp("tiny_clip_mcm"), seed=1, logit_scale=SCALE)


@pytest.fixture(scope="module")
def clip(clip_dir: Path) -> ClipAdapter:
    adapter = load_adapter(f"clip:local-dir:{clip_dir}", device="cpu")
    assert isinstance(adapter, ClipAdapter)
    return adapter


def _open_clip_cosines(folder: Path, images: list[Image.Image],
                       options: list[list[str]]) -> list[np.ndarray]:
    """Cosines from open_clip's own model, preprocessing and tokenizer, with the
    adapter's default prompt 'a photo of a {option}' written out."""
    import open_clip

    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}", device="cpu")
    model.eval()
    tok = open_clip.get_tokenizer(f"local-dir:{folder}")
    with torch.no_grad():
        img = model.encode_image(torch.stack([preprocess(im) for im in images])).double()
        img = img / img.norm(dim=-1, keepdim=True)
        out = []
        for i, opts in enumerate(options):
            txt = model.encode_text(tok([f"a photo of a {o}" for o in opts])).double()
            txt = txt / txt.norm(dim=-1, keepdim=True)
            out.append((txt @ img[i]).numpy())
    return out


def test_mcm_from_adapter_logits_equals_hand_computation(clip: ClipAdapter, clip_dir: Path) -> None:
    images = [Image.fromarray(skimage.data.chelsea()), Image.fromarray(skimage.data.coffee())]
    options = [["tabby cat", "espresso", "rocket"], ["espresso", "tabby cat"]]
    out = clip.option_logits([{"id": str(i), "image": im, "options": o}
                              for i, (im, o) in enumerate(zip(images, options, strict=True))])
    logits = np.where(np.isnan(out), -np.inf, out)  # the scorer pads with -inf
    scale = float(clip.model.logit_scale.detach().exp())
    assert scale == pytest.approx(SCALE)
    got = mcm(clip_cosines(logits, scale))

    assert clip.templates == ("a photo of a {option}",)
    want = [np.exp(cos).max() / np.exp(cos).sum()  # τ = 1
            for cos in _open_clip_cosines(clip_dir, images, options)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # MSP of the scaled logits is a different score (softmax at temperature 1/scale)
    assert not np.allclose(msp(logits), want, rtol=1e-3)
