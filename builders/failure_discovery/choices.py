"""The MCQ config of failure-discovery: one question per verified failure
(V = 1, C = 0) whose correct answer is known.

Reference answer (the records carry none): the answer some answerer gave to
the same question (same image bytes, same normalised question text) that the
verifier judged correct; when several differ, the most frequent (ties: the
first in sorted order). Records of several answerers over the same questions
(``discover sample`` with one questioner and seed asks the same questions
whatever the answerer) therefore give references to each other's failures.

Options: the reference, the answerer's wrong answer and ``n_options - 2``
distractors drawn (seeded per row) from the other answers, right or wrong, to
valid questions of the same type: the record's meta-skill when the taxonomy
gave one, else its first two words (LD's prefix). No two options are equal
after normalisation (case, spacing, final punctuation). The correct answer's
position is balanced over the rows (a seeded permutation of 0..K-1 repeated);
the other options are placed in a per-row seeded order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vlmrobust.core.discover_records import DiscoveryRecord
from vlmrobust.metrics.discovery.scores import prefix
from vlmrobust.metrics.subsets import item_seed

NO_REFERENCE = "no answer to the same question judged correct"
SAME_AS_REFERENCE = "the wrong answer equals the reference once normalised"
TOO_FEW = "too few distinct answers of its question type for the distractors"


def norm_answer(text: str) -> str:
    """What makes two options the same.

    >>> norm_answer("  Three  Shapes. "), norm_answer("red!") == norm_answer("RED")
    ('three shapes', True)
    """
    return " ".join(text.lower().split()).rstrip(".!?;:, ")


def norm_question(text: str) -> str:
    """The question as references are matched: case and spacing ignored.

    >>> norm_question("How many  shapes?") == norm_question("how many shapes ?")
    True
    """
    return " ".join(text.lower().replace("?", " ?").split())


def question_type(rec: DiscoveryRecord) -> str:
    return rec.meta_skill or prefix(rec.question or "")


def _clean(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Choice:
    """One MCQ row before its id is attached: ``source`` is the record's index."""

    source: int
    options: tuple[str, ...]
    answer: int
    wrong_option: int
    reference: str
    qtype: str


def _correct_votes(records: Sequence[DiscoveryRecord]
                   ) -> tuple[dict[tuple[str, str], Counter[str]], dict[str, str]]:
    """(image sha256, normalised question) -> votes per normalised answer judged
    correct, and each normalised answer's first text."""
    votes: dict[tuple[str, str], Counter[str]] = {}
    text: dict[str, str] = {}
    for r in records:
        if r.valid and r.correct and r.question and r.answer and norm_answer(r.answer):
            key = (r.image_sha256, norm_question(r.question))
            n = norm_answer(r.answer)
            votes.setdefault(key, Counter())[n] += 1
            text.setdefault(n, _clean(r.answer))
    return votes, text


def references(records: Sequence[DiscoveryRecord]) -> dict[tuple[str, str], str]:
    """(image sha256, normalised question) -> the reference answer text."""
    votes, text = _correct_votes(records)
    return {k: text[min(c, key=lambda a: (-c[a], a))] for k, c in votes.items()}


def answer_pools(records: Sequence[DiscoveryRecord]) -> dict[str, dict[str, str]]:
    """question type -> {normalised answer: its first text} over valid questions."""
    pools: dict[str, dict[str, str]] = {}
    for r in records:
        if r.valid and r.question and r.answer and norm_answer(r.answer):
            pools.setdefault(question_type(r), {}).setdefault(norm_answer(r.answer),
                                                              _clean(r.answer))
    return pools


def build_choices(records: Sequence[DiscoveryRecord], keys: Sequence[str], n_options: int,
                  seed: int) -> tuple[list[Choice], Counter[str]]:
    """The MCQ rows (in record order) and, per reason, the failures left out.
    ``keys[i]`` is record i's stable id, from which its seed is derived."""
    if n_options < 3:
        raise ValueError("n_options must be >= 3")
    refs = references(records)
    # every answer judged right to a question: none of them may be a distractor
    # of that question, or a row would have two correct options
    right = {k: set(c) for k, c in _correct_votes(records)[0].items()}
    pools = answer_pools(records)
    skipped: Counter[str] = Counter()
    drafts: list[tuple[int, str, str, list[str], str]] = []
    for i, r in enumerate(records):
        if not (r.failure and r.question and r.answer and norm_answer(r.answer)):
            continue
        qkey = (r.image_sha256, norm_question(r.question))
        ref = refs.get(qkey)
        if ref is None:
            skipped[NO_REFERENCE] += 1
            continue
        wrong = _clean(r.answer)
        if norm_answer(ref) == norm_answer(wrong):
            skipped[SAME_AS_REFERENCE] += 1
            continue
        qtype = question_type(r)
        pool: Mapping[str, str] = pools.get(qtype, {})
        barred = right[qkey] | {norm_answer(wrong)}
        cands = sorted(n for n in pool if n not in barred)
        if len(cands) < n_options - 2:
            skipped[TOO_FEW] += 1
            continue
        rng = np.random.default_rng(item_seed(seed, "failure-discovery", "distractors", keys[i]))
        picked = [pool[cands[j]] for j in sorted(rng.choice(len(cands), n_options - 2,
                                                            replace=False).tolist())]
        drafts.append((i, ref, wrong, picked, qtype))
    positions = np.random.default_rng(item_seed(seed, "failure-discovery", "positions")) \
        .permutation(np.arange(len(drafts)) % n_options)
    out = []
    for (i, ref, wrong, picked, qtype), pos in zip(drafts, positions.tolist(), strict=True):
        rng = np.random.default_rng(item_seed(seed, "failure-discovery", "order", keys[i]))
        others = [wrong, *picked]
        order = rng.permutation(len(others)).tolist()
        rest = [others[j] for j in order]
        options = (*rest[:pos], ref, *rest[pos:])
        out.append(Choice(i, options, pos, options.index(wrong), ref, qtype))
    return out, skipped
