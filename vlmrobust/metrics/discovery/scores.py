"""Failure-discovery metrics of seed 004 (RL questioner against a frozen answerer).

Per generated question the verifier returns V (the question is valid:
grammatical, atomic, visually grounded, objective) and C (the answerer's
answer is correct). Over a set of questions:

- QVR = Σ V / n, the valid-question rate;
- FDR = Σ V·(1 − C) / Σ V, the failure-discovery rate over valid questions;
- SD, semantic diversity: the Vendi score of the question embeddings with the
  cosine-similarity kernel, exp(−Σ λ_i ln λ_i) over the eigenvalues λ of K/n;
- LD, lexical diversity: the entropy of the first-two-word prefix
  distribution (natural log), normalised by ln n by default;
- #Skills: skills tagged on more than 20 questions;
- SC, skill coverage: the mean number of distinct skills a question needs
  (seed 004 Table 1, "Skill Cov.": RL 3.30);
- taxonomy coverage (not a seed metric): the share of a reference taxonomy's
  skills tagged on at least one question.

Questions are parsed from the questioner's completion by :func:`parse_questions`
and cut into prefixes by :func:`prefix` (shared with the reward, Eq. 5).
Embeddings come in as arrays: this layer does not import the models.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

MAX_COMPLETION_CHARS = 65536
_RESPONSE = re.compile(r"<response_(\d{1,3})>(.*?)</response_\1>", re.DOTALL)
_ANY_TAG = re.compile(r"</?response_\d+>")
_PUNCT = string.punctuation + "“”‘’«»¿¡…"


def parse_questions(completion: str, k: int,
                    max_chars: int = MAX_COMPLETION_CHARS) -> list[str | None]:
    """The k questions of a completion written as ``<response_i>…</response_i>``.

    Slot i (1-based in the tags) holds the stripped text of the first
    well-formed ``<response_i>…</response_i>`` pair, or None when that pair is
    missing, unclosed, empty or holds another response tag. Tags beyond k and text outside the tags are
    ignored. A malformed completion thus yields fewer questions, and every
    None slot counts as invalid (V = 0) downstream. A completion longer than
    ``max_chars`` is not read at all (all slots None): the bound keeps a
    runaway generation from costing unbounded regex time.

    >>> parse_questions("<response_1> How many dogs? </response_1><response_2>Is it red?</response_2>", 2)
    ['How many dogs?', 'Is it red?']
    >>> parse_questions("<response_2>Is it red?</response_2><response_1>What is", 2)
    [None, 'Is it red?']
    >>> parse_questions("<response_1><response_2>Is it red?</response_2></response_1>", 2)
    [None, None]
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    slots: list[str | None] = [None] * k
    if not isinstance(completion, str) or len(completion) > max_chars:
        return slots
    for m in _RESPONSE.finditer(completion):
        i = int(m.group(1))
        text = m.group(2).strip()
        # a slot holding another response tag is a malformed nesting, not a question
        if 1 <= i <= k and slots[i - 1] is None and text and _ANY_TAG.search(text) is None:
            slots[i - 1] = text
    return slots


def prefix(question: str, n_words: int = 2) -> str:
    """The question's first ``n_words`` words: lower-cased, split on
    whitespace, each word stripped of leading/trailing punctuation (empty words
    dropped), joined by one space. The same tokenisation serves the reward's
    L-token prefix bank and LD.

    >>> prefix("  How MANY   dogs are there?")
    'how many'
    >>> prefix("What?", 2)
    'what'
    >>> prefix("What's the colour of the car?", 3)
    "what's the colour"
    """
    if n_words < 1:
        raise ValueError(f"n_words must be >= 1, got {n_words}")
    words = (w.strip(_PUNCT) for w in question.lower().split())
    return " ".join([w for w in words if w][:n_words])


def _flags(values: ArrayLike, name: str) -> NDArray[np.bool_]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype != np.bool_:
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must hold booleans or 0/1")
        arr = arr.astype(bool)
    return arr


def qvr(valid: ArrayLike) -> float:
    """QVR = Σ V / n, the share of questions the verifier judged valid.

    >>> qvr([1, 1, 0, 1])
    0.75
    """
    v = _flags(valid, "valid")
    if v.size == 0:
        raise ValueError("qvr needs at least one question")
    return float(v.mean())


def fdr(valid: ArrayLike, correct: ArrayLike) -> float:
    """FDR = Σ V·(1 − C) / Σ V: among valid questions, the share the answerer
    got wrong. C of an invalid question is ignored. NaN when no question is
    valid (there is no rate to report).

    >>> fdr([1, 1, 0, 1], [0, 1, 0, 0])
    0.6666666666666666
    """
    v = _flags(valid, "valid")
    c = _flags(correct, "correct")
    if v.shape != c.shape:
        raise ValueError(f"valid and correct differ in length: {v.size} vs {c.size}")
    n_valid = int(v.sum())
    if n_valid == 0:
        return math.nan
    return float((v & ~c).sum() / n_valid)


def fdr_by_group(valid: ArrayLike, correct: ArrayLike,
                 groups: Sequence[str]) -> dict[str, tuple[float, int]]:
    """FDR within each group (e.g. meta-skill, seed 004 Fig. 5), with the
    group's number of valid questions: {group: (FDR, n_valid)}; NaN where a
    group has no valid question. Groups come out sorted by name.

    >>> fdr_by_group([1, 1, 1, 0], [0, 1, 0, 0], ["count", "count", "ocr", "ocr"])
    {'count': (0.5, 2), 'ocr': (1.0, 1)}
    """
    v = _flags(valid, "valid")
    c = _flags(correct, "correct")
    if not (v.size == c.size == len(groups)):
        raise ValueError(f"valid, correct and groups differ in length: "
                         f"{v.size}, {c.size}, {len(groups)}")
    g = np.asarray(groups, dtype=np.str_)
    return {str(name): (fdr(v[g == name], c[g == name]), int(v[g == name].sum()))
            for name in np.unique(g)}


def fdr_curve(valid: ArrayLike, correct: ArrayLike) -> NDArray[np.float64]:
    """FDR over the first m questions, for m = 1..n, in the order given
    (seed 004 Fig. 8: FDR against the number of questions asked):
    Σ_{i≤m} V_i(1 − C_i) / Σ_{i≤m} V_i, NaN until the first valid question.

    >>> fdr_curve([0, 1, 1, 1], [0, 0, 1, 0]).round(4).tolist()
    [nan, 1.0, 0.5, 0.6667]
    """
    v = _flags(valid, "valid")
    c = _flags(correct, "correct")
    if v.shape != c.shape:
        raise ValueError(f"valid and correct differ in length: {v.size} vs {c.size}")
    n_valid = np.cumsum(v)
    n_fail = np.cumsum(v & ~c)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(n_valid > 0, n_fail / np.maximum(n_valid, 1), np.nan)
    return np.asarray(out, dtype=np.float64)


def fdr_spread(fdrs: ArrayLike) -> tuple[float, float, float]:
    """(mean, min, σ) of per-answerer FDRs, σ the sample standard deviation
    (ddof = 1) as seed 004's Tables 8–9 report it.

    >>> fdr_spread([40.0, 50.0, 60.0])
    (50.0, 40.0, 10.0)
    """
    x = np.asarray(fdrs, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise ValueError("fdr_spread needs a 1-D array of at least two FDRs (σ has ddof = 1)")
    if not np.isfinite(x).all():
        raise ValueError("FDRs must be finite")
    return float(x.mean()), float(x.min()), float(x.std(ddof=1))


def unit_rows(embeddings: ArrayLike) -> NDArray[np.float64]:
    """Rows scaled to unit L2 norm (cosine similarity becomes a dot product).

    >>> unit_rows([[3.0, 4.0]]).tolist()
    [[0.6, 0.8]]
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"embeddings must be (n, d) with d >= 1, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("embeddings must be finite")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("an embedding of norm 0 has no cosine similarity")
    return np.asarray(x / norms, dtype=np.float64)


def vendi_score(embeddings: ArrayLike) -> float:
    """SD, the Vendi score (Friedman & Dieng 2023) with the cosine kernel:

        K_ij = cos(x_i, x_j),  λ = eigenvalues of K / n,  VS = exp(−Σ λ_i ln λ_i)

    (0 · ln 0 = 0). It runs from 1 (all questions alike) to n (pairwise
    orthogonal). K/n = X Xᵀ/n shares its non-zero eigenvalues with Xᵀ X/n, so
    the smaller of the two Gram matrices is decomposed.

    >>> vendi_score([[1.0, 0.0], [2.0, 0.0]])
    1.0
    >>> round(vendi_score(np.eye(3)), 12)
    3.0
    """
    x = unit_rows(embeddings)
    n, d = x.shape
    if n == 0:
        raise ValueError("vendi_score needs at least one embedding")
    gram = x @ x.T if n <= d else x.T @ x
    lam = np.linalg.eigvalsh(gram / n)
    lam = lam[lam > 1e-12]  # round-off below zero carries no mass
    return float(np.exp(-np.sum(lam * np.log(lam))))


LDNorm = Literal["n_questions", "n_prefixes", "none"]


def prefix_entropy(questions: Sequence[str], n_words: int = 2,
                   normalise: LDNorm = "n_questions") -> float:
    """LD: H = −Σ_p f_p ln f_p over the distribution f of the questions'
    first-``n_words`` prefixes (:func:`prefix`), in nats.

    Seed 004 names neither the log base nor a normaliser; its LD values lie in
    [0, 1], so the default divides by ln n (n = number of questions), the
    entropy when every prefix differs: 1 = no prefix repeats, 0 = one prefix
    for all. ``"n_prefixes"`` divides by ln(#distinct prefixes) instead
    (evenness), ``"none"`` returns H in nats. One question (or one distinct
    prefix under ``"n_prefixes"``) gives 0.

    >>> prefix_entropy(["How many cats?", "how many dogs?", "What colour is it?", "Is it red?"])
    0.75
    >>> round(prefix_entropy(["a b", "a b", "c d", "c d"], normalise="none"), 12)   # ln 2
    0.69314718056
    """
    if not questions:
        raise ValueError("prefix_entropy needs at least one question")
    counts = np.array(list(Counter(prefix(q, n_words) for q in questions).values()),
                      dtype=np.float64)
    f = counts / counts.sum()
    h = float(-np.sum(f * np.log(f)))
    if normalise == "none":
        return h
    if normalise == "n_questions":
        denom = math.log(len(questions))
    elif normalise == "n_prefixes":
        denom = math.log(counts.size)
    else:
        raise ValueError(f"normalise must be n_questions, n_prefixes or none, got {normalise!r}")
    return h / denom if denom > 0 else 0.0


def skill_counts(skills: Iterable[Iterable[str]]) -> Counter[str]:
    """Questions per skill; a question tagged twice with one skill counts once.

    >>> sorted(skill_counts([["counting", "counting"], ["colour", "counting"]]).items())
    [('colour', 1), ('counting', 2)]
    """
    out: Counter[str] = Counter()
    for tags in skills:
        if isinstance(tags, str):
            raise ValueError("skills must be one list of skill names per question, not a string")
        out.update(set(tags))
    return out


def n_skills(skills: Iterable[Iterable[str]], min_questions: int = 20) -> int:
    """#Skills: skills tagged on strictly more than ``min_questions`` questions
    (seed 004: more than 20).

    >>> n_skills([["a"]] * 3 + [["b"]] * 2, min_questions=2)
    1
    """
    if min_questions < 0:
        raise ValueError(f"min_questions must be >= 0, got {min_questions}")
    return sum(1 for c in skill_counts(skills).values() if c > min_questions)


def skill_coverage(skills: Iterable[Iterable[str]]) -> float:
    """SC, seed 004 §4.1: "Skill Coverage (SC): The average number of distinct
    cognitive skills required to answer a generated question, serving as a
    proxy for question complexity" (§4.2: RL questions require "3.30
    simultaneous skills per query"):

        SC = (1/n) Σ_q |distinct skills(q)|

    over the n questions given, one list of skill names each (a skill tagged
    twice on one question counts once). The caller picks the questions: seed
    004 computes every metric over valid questions only.

    >>> skill_coverage([["counting", "spatial"], ["ocr"], ["colour", "colour", "counting"]])
    1.6666666666666667
    """
    per_question = []
    for tags in skills:
        if isinstance(tags, str):
            raise ValueError("skills must be one list of skill names per question, not a string")
        per_question.append(len(set(tags)))
    if not per_question:
        raise ValueError("skill_coverage needs at least one question")
    return float(np.mean(np.asarray(per_question, dtype=np.float64)))


def taxonomy_coverage(skills: Iterable[Iterable[str]], taxonomy: Iterable[str],
                      min_questions: int = 1) -> float:
    """Share of a reference taxonomy's skills tagged on at least
    ``min_questions`` of the questions: |{s ∈ T : count(s) ≥ m}| / |T|.
    Skills outside the taxonomy do not count. Not seed 004's skill coverage
    (:func:`skill_coverage`): a breadth measure against a fixed skill list.

    >>> taxonomy_coverage([["counting"], ["colour"], ["ocr?"]], ["counting", "colour", "spatial", "ocr"])
    0.5
    """
    tax = set(taxonomy)
    if not tax:
        raise ValueError("taxonomy_coverage needs a non-empty taxonomy")
    if min_questions < 1:
        raise ValueError(f"min_questions must be >= 1, got {min_questions}")
    counts = skill_counts(skills)
    return sum(1 for s in tax if counts[s] >= min_questions) / len(tax)
