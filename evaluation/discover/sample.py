"""``discover sample``: questions from a questioner over a folder of images, the
answerer's answers, the verifier's verdicts, as records (:mod:`.records`).

:func:`judge_completions` is the one path from completions to verdicts, shared
with training's reward: parse the k ``<response_i>`` slots (a missing slot is
invalid, never sent to a model), answer the present questions, verify them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.discover_records import METHODS, DiscoveryRecord, write_records
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.discover.images import ImageRef
from vlmrobust.evaluation.discover.questioner import Questioner
from vlmrobust.evaluation.discover.roles import Answerer, Verdict, Verifier
from vlmrobust.metrics.discovery.scores import parse_questions

SkillTagger = Callable[[Sequence[Any], Sequence[str | None]], list[list[str]]]


@dataclass(frozen=True)
class Judged:
    """One question slot of one completion, judged."""

    question: str | None
    answer: str | None
    verdict: Verdict


def judge_completions(images: Sequence[Any], completions: Sequence[str], k: int,
                      answerer: Answerer, verifier: Verifier) -> list[list[Judged]]:
    """(n completions) -> n rows of k judged slots; ``images[i]`` is completion i's image."""
    if len(images) != len(completions):
        raise ValueError("one image per completion")
    slots = [parse_questions(c, k) for c in completions]
    flat = [(i, q) for i, row in enumerate(slots) for q in row]
    asked = [(i, q) for i, q in flat if q is not None]
    answers = answerer.answer([images[i] for i, _ in asked], [q for _, q in asked])
    by_slot = iter(answers)
    flat_answers = [None if q is None else next(by_slot) for _, q in flat]
    verdicts = verifier.verify([images[i] for i, _ in flat], [q for _, q in flat], flat_answers)
    out: list[list[Judged]] = [[] for _ in completions]
    for (i, q), a, v in zip(flat, flat_answers, verdicts, strict=True):
        out[i].append(Judged(q, a, v))
    return out


def item_seed(seed: int, image_index: int, sample: int) -> int:
    """The per-completion sampling seed (no global RNG; order-independent).

    >>> item_seed(0, 3, 1) != item_seed(0, 1, 3)
    True
    """
    return (seed * 1_000_003 + image_index * 1009 + sample) % (2**31 - 1)


@dataclass(frozen=True)
class SampleConfig:
    """How ``discover sample`` samples: the questioner's ``method`` (recorded in
    every record), the seed of each completion, completions per image, images
    per batch and the training step the questioner comes from."""

    method: str
    seed: int = 0
    samples_per_image: int = 1
    batch_size: int = 8
    step: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise VlmrobustError(f"--method {self.method!r}: use one of {list(METHODS)}")
        if not 1 <= self.samples_per_image <= 1024 or self.batch_size < 1:
            raise VlmrobustError("--samples-per-image must be 1..1024 and --batch-size >= 1")


def run_sample(refs: Sequence[ImageRef], questioner: Questioner, answerer: Answerer,
               verifier: Verifier, out: Path, config: SampleConfig, *,
               skill_tagger: SkillTagger | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[DiscoveryRecord]:
    """Ask, answer, verify for every image (``config.samples_per_image``
    completions each) and write the records to ``out`` atomically."""
    method, seed, step = config.method, config.seed, config.step
    samples_per_image, batch_size = config.samples_per_image, config.batch_size
    jobs = [(ii, s) for ii in range(len(refs)) for s in range(samples_per_image)]
    records: list[DiscoveryRecord] = []
    for start in range(0, len(jobs), batch_size):
        batch = jobs[start:start + batch_size]
        loaded = {ii: refs[ii].load() for ii, _ in dict.fromkeys(batch)}
        images = [loaded[ii][0] for ii, _ in batch]
        completions = questioner.complete(images, [item_seed(seed, ii, s) for ii, s in batch])
        judged = judge_completions(images, completions, questioner.k, answerer, verifier)
        for (ii, s), row, im in zip(batch, judged, images, strict=True):
            skills = (skill_tagger([im] * len(row), [j.question for j in row])
                      if skill_tagger else [[] for _ in row])
            for slot, (j, sk) in enumerate(zip(row, skills, strict=True), start=1):
                records.append(DiscoveryRecord(
                    image=refs[ii].name, image_sha256=loaded[ii][1],
                    completion_id=f"{refs[ii].name}#{s}", slot=slot, question=j.question,
                    answer=j.answer, valid=j.verdict.valid, correct=j.verdict.correct,
                    valid_reason=j.verdict.valid_reason,
                    correct_reason=j.verdict.correct_reason,
                    verifier_parsed=j.verdict.parsed, method=method,
                    questioner=questioner.name, answerer=answerer.name,
                    verifier=verifier.name, seed=seed, step=step, skills=tuple(sk)))
        if progress is not None:
            progress(min(start + batch_size, len(jobs)), len(jobs))
    write_records(out, records)
    return records
