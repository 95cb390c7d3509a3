"""Recognise-then-describe embeddings: image and caption embeddings in one
sentence space without a CLIP model, for the retrieval kind.

``describe:efficientnet-lite0+minilm``: the ImageNet classifier's top-k classes
(k = 5) describe the image as sentences "a photo of a {class name}." (unique
display names of vlmrobust/core/classes.py); the image embedding is

    e(x) = normalise( Σ_{c ∈ top-k} w_c · m("a photo of a {name_c}.") ),
    w_c = softmax(logits(x))_c / Σ_{c' ∈ top-k} softmax(logits(x))_{c'}

with m the L2-normalised all-MiniLM-L6-v2 embedding; a caption's embedding is
m(caption). Retrieval then compares captions with what the classifier
recognised, so its Recall@K is bounded by recognition and by how much of a
caption the class name says (nothing of colour, action or scene). A baseline
that exists because no CLIP weights ship on this machine, not a CLIP stand-in
on any leaderboard line: its family is ``other``. It answers retrieval datasets
only (image + captions); an MCQ or classification dataset is refused before any
row is read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.base import ADAPTER_FAMILIES, AdapterFamily, AdapterSpec
from vlmrobust.models.classifiers.adapter import ClassifierAdapter

TEMPLATE = "a photo of a {}."
TOP_K = 5
TEXT_MODELS = ("minilm",)


def describe_weights(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(top-k class indices, their softmax probabilities renormalised to sum 1)
    per row, highest first.

    >>> idx, w = describe_weights(np.log(np.array([[0.1, 0.6, 0.3]])), 2)
    >>> idx.tolist(), np.round(w, 4).tolist()
    ([[1, 2]], [[0.6667, 0.3333]])
    """
    if logits.ndim != 2 or not 1 <= k <= logits.shape[1]:
        raise ValueError(f"need (B, C) logits and 1 <= k <= C, got {logits.shape} and k={k}")
    z = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    idx = np.argsort(-p, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(p, idx, axis=1)
    return idx, top / top.sum(axis=1, keepdims=True)


class RecogniseThenDescribe:
    family = "other"

    def __init__(self, name: str, classifier: ClassifierAdapter, text: Any,
                 class_names: Mapping[int, str], k: int = TOP_K) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.name = name
        self.classifier = classifier
        self.text = text  # texts -> (N, D) L2-normalised float32
        self.class_names = class_names
        self.k = k
        self.vision_encoder = classifier.vision_encoder
        self.params = classifier.params

    def option_logits(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        raise VlmrobustError(f"{self.name} gives image and caption embeddings only; use it on "
                             "a retrieval dataset")

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        idx, w = describe_weights(np.asarray(self.classifier.class_logits(images)), self.k)
        sentences = [TEMPLATE.format(self.class_names[int(c)]) for c in idx.ravel()]
        emb = np.asarray(self.text(sentences), np.float64).reshape(idx.shape[0], self.k, -1)
        mixed = np.einsum("bk,bkd->bd", w, emb)
        return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)

    def embed_captions(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.text(list(texts)), np.float32)


def _split(target: str) -> str:
    classifier, sep, text = target.rpartition("+")
    if not sep or not classifier or text not in TEXT_MODELS:
        raise VlmrobustError(f"describe {target!r} must look like CLASSIFIER+minilm "
                             "(e.g. describe:efficientnet-lite0+minilm)")
    return classifier


def _parse(name: str, target: str) -> AdapterSpec:
    from vlmrobust.models.lookup import parse_adapter_name

    classifier = _split(target)
    parse_adapter_name(f"classifier:{classifier}")  # unknown classifier: suggest the closest
    return AdapterSpec(name=name, family="other", target=target,
                       required_columns=("id", "image", "captions"))


def _load(spec: AdapterSpec, device: str | None, **opts: Any) -> RecogniseThenDescribe:
    from vlmrobust.core.classes import load_imagenet_classes
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm
    from vlmrobust.models.lookup import load_adapter

    classifier = load_adapter(f"classifier:{_split(spec.target)}", device=device)
    if not isinstance(classifier, ClassifierAdapter):  # pragma: no cover - registry invariant
        raise VlmrobustError(f"{spec.name}: not an ImageNet classifier")
    names = {c.index: c.name for c in load_imagenet_classes()}
    return RecogniseThenDescribe(spec.name, classifier, TextEmbedder(load_minilm(device)),
                                 names, **opts)


ADAPTER_FAMILIES.add(
    "describe",
    AdapterFamily("describe", _parse, _load,
                  help="image and caption embeddings in MiniLM's sentence space: an ImageNet "
                  "classifier's top-5 classes as sentences (retrieval without CLIP)"),
)
