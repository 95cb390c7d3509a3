"""A planted-blind-spot world for failure discovery: PIL-drawn scenes whose
questions have known answers, a rule-based answerer that is wrong on chosen
question types, a rule-based verifier and a rule-based skill tagger.

A scene is 1–4 same-coloured shapes (circles or squares) in the left or right
half of a 64×64 white canvas. Everything is read back from the pixels
(connected components, mean colour, fill ratio, centroid), never from a side
table, so the answerer and verifier see the same images a VLM would.

Question types, each with its accepted phrasings (:data:`TEMPLATES`):
``count`` (how many), ``color``, ``shape`` and ``side``. The verifier accepts a
question as valid (grammatical, atomic, grounded, objective) exactly when its
normalised text is one of the phrasings; the answer is correct when it holds
the true value as a word and no other value of that type. ``count`` has four
phrasings under one two-word prefix ("how many"), the others one each: with
the embedding term alone a questioner can keep finding "new" counting
questions, while the prefix term (δ_ifreq) makes it pay for the shared prefix.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError

SIZE = 64
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30), "green": (30, 170, 40), "blue": (30, 60, 220), "yellow": (230, 200, 20)}
KINDS = ("circle", "square")
SIDES = ("left", "right")
TEMPLATES: dict[str, tuple[str, ...]] = {
    "count": ("how many shapes are there ?", "how many objects are in the image ?",
              "how many things can you see ?", "how many shapes are drawn ?"),
    "color": ("what color are the shapes ?",),
    "shape": ("what shape are the objects ?",),
    "side": ("which side are the shapes on ?",),
}
QUESTION_TYPES = tuple(TEMPLATES)
_TYPE_OF = {q: t for t, qs in TEMPLATES.items() for q in qs}
_VALUES: dict[str, tuple[str, ...]] = {
    "count": ("1", "2", "3", "4", "5"), "color": tuple(PALETTE), "shape": KINDS, "side": SIDES}
_WORDS = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Scene:
    """What a planted image shows."""

    count: int
    color: str
    kind: str
    side: str

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 4:
            raise ValueError(f"count must be 1..4, got {self.count}")
        if self.color not in PALETTE or self.kind not in KINDS or self.side not in SIDES:
            raise ValueError(f"unknown scene {self}")

    def truth(self, qtype: str) -> str:
        return {"count": str(self.count), "color": self.color, "shape": self.kind,
                "side": self.side}[qtype]


def scene_for(index: int, seed: int = 0) -> Scene:
    """The scene of planted image ``index`` (seeded per image, no global RNG)."""
    rng = np.random.default_rng([seed, index])
    return Scene(count=int(rng.integers(1, 5)), color=str(rng.choice(list(PALETTE))),
                 kind=str(rng.choice(KINDS)), side=str(rng.choice(SIDES)))


def draw(scene: Scene) -> Any:
    """The scene as a 64×64 RGB PIL image: shapes of radius 5 on a 2×2 grid of
    one half (cells 16 px wide, 32 px tall), never touching."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (SIZE, SIZE), (255, 255, 255))
    pen = ImageDraw.Draw(im)
    x0 = 0 if scene.side == "left" else SIZE // 2
    cells = [(x0 + 8 + 16 * c, 16 + 32 * r) for r in range(2) for c in range(2)]
    for cx, cy in cells[: scene.count]:
        box = (cx - 5, cy - 5, cx + 5, cy + 5)
        if scene.kind == "circle":
            pen.ellipse(box, fill=PALETTE[scene.color])
        else:
            pen.rectangle(box, fill=PALETTE[scene.color])
    return im


def read_scene(image: Any) -> Scene:
    """The scene back from the pixels: shapes are the connected components of
    the non-white pixels; colour the nearest palette entry to their mean; kind
    from the fill ratio of each component's bounding box (a disc fills ~0.8,
    a square 1); side from the centroid."""
    from scipy import ndimage

    arr = np.asarray(image.convert("RGB"), dtype=np.int32)
    mask = (arr < 200).any(axis=2)
    labels, n = ndimage.label(mask)
    if n == 0:
        raise VlmrobustError("planted image has no shape; it is not a planted scene")
    mean = arr[mask].mean(axis=0)
    color = min(PALETTE, key=lambda c: float(np.sum((mean - PALETTE[c]) ** 2)))
    fills = [float(s.sum() / s.size) for s in (labels[sl] == i + 1 for i, sl in
                                                enumerate(ndimage.find_objects(labels)))]
    kind = "square" if np.mean(fills) > 0.9 else "circle"
    side = "left" if np.nonzero(mask)[1].mean() < SIZE / 2 else "right"
    return Scene(count=min(int(n), 4), color=color, kind=kind, side=side)


def normalise(question: str) -> str:
    """Lower case, words and '?' separated by single spaces.

    >>> normalise("How many  shapes are there?")
    'how many shapes are there ?'
    """
    q = question.lower().replace("?", " ?")
    return " ".join(q.split())


def question_type(question: str | None) -> str | None:
    """The planted type of a question, None when it is none of the phrasings.

    >>> question_type("What color are the shapes?"), question_type("why ?")
    ('color', None)
    """
    return None if question is None else _TYPE_OF.get(normalise(question))


def wrong_value(qtype: str, truth: str) -> str:
    """The blind answerer's answer: the next value of the type (a count one too high)."""
    vals = _VALUES[qtype]
    return vals[(vals.index(truth) + 1) % len(vals)]


class RuleAnswerer:
    """Answers planted questions from the pixels, wrong on the ``blind`` types
    (a count one too high, the next colour, ...) and right on the others;
    anything else gets "I don't know".

    ``rates`` makes a blind spot partial: a type with rate r < 1 is answered
    wrongly on a fixed fraction r of the images (chosen by a hash of the image's
    pixels and the type, so the same image always gets the same answer, whatever
    the phrasing), like a model that miscounts some scenes. A partial blind spot
    keeps the reward noisy after training saturates, which is what lets a
    neutral drift between two blind spots run on (see docs/discover.md).
    """

    def __init__(self, blind: Sequence[str] = ("count",),
                 rates: Sequence[float] | None = None) -> None:
        bad = sorted(set(blind) - set(QUESTION_TYPES))
        if bad:
            raise VlmrobustError(f"unknown blind-spot types {bad}; use {list(QUESTION_TYPES)}")
        rs = tuple(float(r) for r in (rates if rates is not None else [1.0] * len(blind)))
        if len(rs) != len(blind) or not all(0.0 < r <= 1.0 for r in rs):
            raise VlmrobustError(f"blind-spot rates must be one per type in (0, 1], got {rs}")
        self.blind = tuple(blind)
        self.rates = dict(zip(self.blind, rs, strict=True))
        self.name = "rule-answerer:blind=" + ",".join(
            t if r == 1.0 else f"{t}@{r:g}" for t, r in self.rates.items())

    def is_wrong(self, image: Any, qtype: str) -> bool:
        """Whether this answerer answers ``qtype`` wrongly on ``image``."""
        rate = self.rates.get(qtype, 0.0)
        if rate >= 1.0 or rate == 0.0:
            return rate >= 1.0
        digest = hashlib.sha256(np.asarray(image.convert("RGB")).tobytes() + qtype.encode())
        return int.from_bytes(digest.digest()[:8], "big") / 2.0**64 < rate

    def answer(self, images: Sequence[Any], questions: Sequence[str]) -> list[str]:
        out = []
        for image, q in zip(images, questions, strict=True):
            qtype = question_type(q)
            if qtype is None:
                out.append("I don't know")
                continue
            truth = read_scene(image).truth(qtype)
            out.append(wrong_value(qtype, truth) if self.is_wrong(image, qtype) else truth)
        return out


def answer_value(qtype: str, answer: str) -> str | None:
    """The one value of ``qtype`` named in ``answer`` ("There are 3." -> '3');
    None when it names none or several."""
    words = set(_WORDS.findall(answer.lower()))
    named = [v for v in _VALUES[qtype] if v in words or (v + "s") in words]
    return named[0] if len(named) == 1 else None


@dataclass(frozen=True)
class RuleVerdict:
    valid: bool
    correct: bool
    valid_reason: str
    correct_reason: str


class RuleVerifier:
    """V = the question is one of the planted phrasings; C = the answer names
    the value read from the pixels (see :func:`answer_value`)."""

    name = "rule-verifier:planted"

    def judge(self, image: Any, question: str | None, answer: str | None) -> RuleVerdict:
        qtype = question_type(question)
        if qtype is None:
            return RuleVerdict(False, False, "not a grammatical, grounded planted question",
                               "question invalid")
        truth = read_scene(image).truth(qtype)
        got = answer_value(qtype, answer or "")
        ok = got == truth
        return RuleVerdict(True, ok, f"a {qtype} question about the drawn shapes",
                           f"the image shows {truth}; the answer says {got or 'nothing definite'}")


def tag_skills(question: str | None) -> list[str]:
    """Rule-based skills of a planted question: its type ("counting", ...)."""
    qtype = question_type(question)
    names = {"count": "counting", "color": "color recognition", "shape": "shape recognition",
             "side": "spatial position"}
    return [] if qtype is None else [names[qtype]]
