"""describe:efficientnet-lite0+minilm (models/describe.py): image embeddings from
the real EfficientNet-Lite0's top-5 classes as MiniLM sentences, caption
embeddings from MiniLM; checked against a hand computation, then predicted and
scored on a cut of the retrieval sample with Recall@K recomputed in numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import softmax

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.models.describe import TEMPLATE, RecogniseThenDescribe, describe_weights

pytest.importorskip("efficientnet_lite_pytorch")


def test_describe_weights_closed_form() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 30)) * 3
    idx, w = describe_weights(logits, 5)
    p = softmax(logits, axis=1)
    for b in range(4):
        want = np.argsort(p[b])[::-1][:5]
        assert idx[b].tolist() == want.tolist()
        np.testing.assert_allclose(w[b], p[b, want] / p[b, want].sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="k"):
        describe_weights(logits, 31)


def test_embeddings_equal_a_hand_computation() -> None:
    from PIL import Image

    from vlmrobust.builders.sample import load_sample
    from vlmrobust.core.classes import load_imagenet_classes
    from vlmrobust.models.encoders.minilm import load_minilm
    from vlmrobust.models.registration import load_adapter

    adapter = load_adapter("describe:efficientnet-lite0+minilm", device="cpu")
    assert isinstance(adapter, RecogniseThenDescribe)
    photos = [im for im in load_sample() if im.group == "photo"][:3]
    images = [Image.open(im.path).convert("RGB") for im in photos]
    got = adapter.embed_images(images)
    logits = np.asarray(adapter.classifier.class_logits(images), np.float64)
    names = {c.index: c.name for c in load_imagenet_classes()}
    minilm = load_minilm("cpu")
    for b in range(3):
        p = softmax(logits[b])
        top = np.argsort(p)[::-1][:5]
        sent = minilm.encode([TEMPLATE.format(names[int(c)]) for c in top],
                             normalize_embeddings=True)
        e = (p[top] / p[top].sum()) @ np.asarray(sent, np.float64)
        np.testing.assert_allclose(got[b], e / np.linalg.norm(e), atol=1e-5)
    caps = ["A cat looks at the camera.", "A cup of coffee."]
    np.testing.assert_allclose(adapter.embed_captions(caps),
                               minilm.encode(caps, normalize_embeddings=True), atol=1e-6)
    with pytest.raises(VlmrobustError, match="retrieval dataset"):
        adapter.option_logits([])


def test_names_are_checked_before_loading() -> None:
    from vlmrobust.models.registration import parse_adapter_name

    with pytest.raises(VlmrobustError, match="CLASSIFIER\\+minilm"):
        parse_adapter_name("describe:efficientnet-lite0+bert")
    spec = parse_adapter_name("describe:efficientnet-lite0+minilm")
    assert spec.family == "other" and "captions" in spec.required_columns


def _recall_i2t(img: np.ndarray, txt: np.ndarray, owner: np.ndarray, k: int) -> float:
    sim = img @ txt.T
    hits = [owner[np.argsort(-sim[i], kind="stable")[:k]] == i for i in range(len(img))]
    return float(np.mean([h.any() for h in hits]))


def _recall_t2i(img: np.ndarray, txt: np.ndarray, owner: np.ndarray, k: int) -> float:
    sim = txt @ img.T
    return float(np.mean([owner[j] in np.argsort(-sim[j], kind="stable")[:k]
                          for j in range(len(txt))]))


def test_predict_and_score_on_the_retrieval_sample(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.builders.families import BuildOptions, get_builder
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.scoring.dataset import score

    spec = resolve_spec("retrieval")
    data = tmp_path / "ret"
    get_builder("retrieval")(load_spec_yaml(spec), spec,
                             BuildOptions(out=data, sample=True, limit=10, progress=False))
    pred = tmp_path / "pred.parquet"
    predict_dataset(RunSpec(
        "describe:efficientnet-lite0+minilm", data, pred, progress=False,
        backend=BackendOptions(batch_size=4)))
    t = pq.read_table(pred).to_pylist()
    img = np.array([r["image_embedding"] for r in t], np.float64)
    txt = np.array([e for r in t for e in r["text_embeddings"]], np.float64)
    owner = np.array([i for i, r in enumerate(t) for _ in r["text_embeddings"]])
    assert img.shape == (10, 384) and txt.shape == (20, 384)
    result = score(data, pred, tmp_path / "scores.json")
    cfg = result["datasets"]["retrieval"]["configs"]["sample-photo"]
    saved = json.loads((tmp_path / "scores.json").read_text())
    assert saved["datasets"]["retrieval"]["configs"]["sample-photo"]["n"] == 10
    for k in (1, 5):
        assert cfg["image_to_text"][f"recall@{k}"] == pytest.approx(
            _recall_i2t(img, txt, owner, k))
        assert cfg["text_to_image"][f"recall@{k}"] == pytest.approx(
            _recall_t2i(img, txt, owner, k))
