"""Recognise-then-answer pipelines: an ImageNet classifier names the object, a
text answerer picks the option given that name.

``pipeline:efficientnet-lite0+minilm``: EfficientNet-Lite0's top-1 class (its
unique display name from vlmrobust/core/classes.py) replaces "this object" in the
question, and all-MiniLM-L6-v2 scores each option by cosine similarity (cloze
questions: each completed sentence against the class name). Option logits are
``scale · cos``. This is the knowledge-question baseline of the ImageWikiQA seed
("VLMs know the facts once told the class; they fail at recognising it"): its
accuracy is bounded by the classifier's recognition. Note the ImageWikiQA filter
keeps questions that this same MiniLM answerer gets right with the true class
name, so with a perfect classifier it scores 100% by construction; it measures
recognition, not knowledge.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.base import ADAPTER_FAMILIES, AdapterFamily, AdapterSpec, pad_rows
from vlmrobust.models.classifiers.adapter import ClassifierAdapter

ANSWERERS = ("minilm",)
# cosines of MiniLM sentence embeddings differ by ~0.05-0.3 between options;
# x20 turns that into softmax confidences of the order a classifier gives
DEFAULT_SCALE = 20.0


class RecogniseThenAnswer:
    family = "other"

    def __init__(self, name: str, classifier: ClassifierAdapter, guesser: Any,
                 class_names: Mapping[int, str], scale: float = DEFAULT_SCALE) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.name = name
        self.classifier = classifier
        self.guesser = guesser
        self.class_names = class_names
        self.scale = scale
        self.vision_encoder = classifier.vision_encoder
        self.params = classifier.params

    def recognise(self, images: Sequence[Any]) -> list[str]:
        top = self.classifier.class_logits(images).argmax(axis=1)
        return [self.class_names[int(c)] for c in top]

    def option_logits(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        names = self.recognise([row["image"] for row in rows])
        scores = self.guesser.option_scores(
            [(str(row["question"]), [str(o) for o in row["options"]]) for row in rows], names)
        return pad_rows([self.scale * s for s in scores])

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        return self.classifier.embed_images(images)


def _split(target: str) -> tuple[str, str]:
    classifier, sep, answerer = target.rpartition("+")
    if not sep or not classifier:
        raise VlmrobustError(
            f"pipeline {target!r} must look like CLASSIFIER+ANSWERER "
            "(e.g. pipeline:efficientnet-lite0+minilm)")
    if answerer not in ANSWERERS:
        import difflib

        close = difflib.get_close_matches(answerer, ANSWERERS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise VlmrobustError(f"unknown answerer {answerer!r}{hint} (known: {', '.join(ANSWERERS)})")
    return classifier, answerer


def _parse(name: str, target: str) -> AdapterSpec:
    from vlmrobust.models.lookup import parse_adapter_name

    classifier, _ = _split(target)
    parse_adapter_name(f"classifier:{classifier}")  # unknown classifier: suggest the closest
    return AdapterSpec(name=name, family="other", target=target)


def _load(spec: AdapterSpec, device: str | None, **opts: Any) -> RecogniseThenAnswer:
    from vlmrobust.core.classes import load_imagenet_classes
    from vlmrobust.models.encoders.minilm import MiniLMGuesser, TextEmbedder, load_minilm
    from vlmrobust.models.lookup import load_adapter

    classifier_name, _ = _split(spec.target)
    classifier = load_adapter(f"classifier:{classifier_name}", device=device)
    if not isinstance(classifier, ClassifierAdapter):  # pragma: no cover - registry invariant
        raise VlmrobustError(f"{spec.name}: {classifier_name} is not an ImageNet classifier")
    guesser = MiniLMGuesser(TextEmbedder(load_minilm(device)))
    names = {c.index: c.name for c in load_imagenet_classes()}
    return RecogniseThenAnswer(spec.name, classifier, guesser, names, **opts)


ADAPTER_FAMILIES.add(
    "pipeline",
    AdapterFamily("pipeline", _parse, _load,
                  help="recognise-then-answer: an ImageNet classifier + a text answerer"),
)
