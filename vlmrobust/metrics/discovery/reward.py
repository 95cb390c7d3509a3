"""Seed 004's reward (its Eq. 5) with its two memory banks.

Per question q about image x, with verifier verdicts V (valid) and C (the
answerer was correct):

    R(q) = λ_scale · (δ_emb + δ_ifreq) · V · (1 − C) − λ_penalty · (1 − V)

- δ_emb = 1 − max_{b ∈ B_x} cos(e(q), b), B_x the per-image bank of
  embeddings of questions the answerer failed on x;
- δ_ifreq = 1 / (1 + N(prefix_L(q))), N the count of the question's first-L
  word prefix in a global bank.

Choices where the seed is silent (each a :class:`RewardConfig` field):

- ``lambda_scale`` = ``lambda_penalty`` = 1;
- an empty per-image bank scores δ_emb = ``empty_bank_emb`` = 1 (nothing
  alike has been found: maximal novelty); δ_emb is not clipped, so a question
  opposed to every banked one (cos < 0) scores above 1;
- the prefix is :func:`vlmrobust.metrics.discovery.scores.prefix` (lower-cased
  whitespace words, edge punctuation stripped), L = ``prefix_len`` = 2;
- the k = 2 per-question rewards become one completion reward by their
  ``aggregate`` = mean (``"sum"`` selectable), a missing question (malformed
  completion) counting as invalid: −λ_penalty;
- both banks hold the failures only: questions with V = 1 and C = 0
  (``bank = "failures"``; ``"valid"`` banks every valid question's prefix
  too); a question enters the banks *after* its whole group is scored, so
  rewards within a GRPO group never depend on the order of its completions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.discovery.scores import prefix, unit_rows


@dataclass(frozen=True)
class RewardConfig:
    """Eq. 5's constants and the choices the seed leaves open (module docstring)."""

    k: int = 2
    prefix_len: int = 2
    lambda_scale: float = 1.0
    lambda_penalty: float = 1.0
    empty_bank_emb: float = 1.0
    aggregate: Literal["mean", "sum"] = "mean"
    bank: Literal["failures", "valid"] = "failures"
    # ablations (seed 004 Table 4): drop a novelty term from the reward; the
    # banks are kept either way, so the dropped term can still be reported
    use_emb: bool = True
    use_ifreq: bool = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.prefix_len < 1:
            raise ValueError(f"prefix_len must be >= 1, got {self.prefix_len}")
        for name in ("lambda_scale", "lambda_penalty", "empty_bank_emb"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        if self.aggregate not in ("mean", "sum"):
            raise ValueError(f"aggregate must be 'mean' or 'sum', got {self.aggregate!r}")
        if self.bank not in ("failures", "valid"):
            raise ValueError(f"bank must be 'failures' or 'valid', got {self.bank!r}")
        if not (isinstance(self.use_emb, bool) and isinstance(self.use_ifreq, bool)):
            raise ValueError("use_emb and use_ifreq must be booleans")


def question_reward(delta_emb: ArrayLike, delta_ifreq: ArrayLike, valid: ArrayLike,
                    correct: ArrayLike, lambda_scale: float = 1.0,
                    lambda_penalty: float = 1.0) -> NDArray[np.float64]:
    """Eq. 5, elementwise: λ_s·(δ_emb + δ_ifreq)·V·(1 − C) − λ_p·(1 − V).

    >>> question_reward([0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [1, 1, 0], [0, 1, 0], 2.0, 0.5).tolist()
    [3.0, 0.0, -0.5]
    """
    de = np.asarray(delta_emb, dtype=np.float64)
    di = np.asarray(delta_ifreq, dtype=np.float64)
    v = np.asarray(valid, dtype=np.float64)
    c = np.asarray(correct, dtype=np.float64)
    if not (de.shape == di.shape == v.shape == c.shape):
        raise ValueError("delta_emb, delta_ifreq, valid and correct must share one shape")
    out: NDArray[np.float64] = lambda_scale * (de + di) * v * (1.0 - c) - lambda_penalty * (1.0 - v)
    return out


@dataclass(frozen=True)
class GroupRewards:
    """One scored group: per-completion rewards (n,) and the per-question
    terms (n, k) they came from."""

    completion: NDArray[np.float64]
    question: NDArray[np.float64]
    delta_emb: NDArray[np.float64]
    delta_ifreq: NDArray[np.float64]
    valid: NDArray[np.bool_]


def _verdicts(values: ArrayLike, name: str, n: int, k: int) -> NDArray[np.bool_]:
    arr = np.asarray(values)
    if n == 0:
        return np.zeros((0, k), dtype=bool)
    if arr.shape != (n, k):
        raise ValueError(f"{name} must be (n, k) = ({n}, {k}), got shape {arr.shape}")
    if arr.dtype != np.bool_ and not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must hold booleans or 0/1")
    return arr.astype(bool)


class DiscoveryReward:
    """Eq. 5 with its memory banks: per-image failure embeddings and a global
    prefix count. :meth:`score_group` scores a group against the banks as they
    stood before it, then adds the group's failures."""

    def __init__(self, config: RewardConfig | None = None) -> None:
        self.config = config or RewardConfig()
        self._images: dict[str, NDArray[np.float64]] = {}
        self.prefixes: Counter[str] = Counter()

    def image_bank(self, image_id: str) -> NDArray[np.float64]:
        """The unit-norm embeddings banked for one image, (m, d); m = 0 if none."""
        return self._images.get(image_id, np.zeros((0, 0)))

    def delta_emb(self, image_id: str, embedding: ArrayLike) -> float:
        """1 − max cosine similarity to the image's bank; ``empty_bank_emb`` if empty."""
        bank = self._images.get(image_id)
        if bank is None or bank.shape[0] == 0:
            return float(self.config.empty_bank_emb)
        e = unit_rows(np.asarray(embedding, dtype=np.float64).reshape(1, -1))[0]
        if e.shape[0] != bank.shape[1]:
            raise ValueError(f"embedding has {e.shape[0]} dimensions, the bank {bank.shape[1]}")
        return float(1.0 - np.max(bank @ e))

    def delta_ifreq(self, question: str) -> float:
        """1 / (1 + count of the question's first-L prefix in the global bank)."""
        return 1.0 / (1.0 + self.prefixes[prefix(question, self.config.prefix_len)])

    def score_group(self, image_ids: Sequence[str], questions: Sequence[Sequence[str | None]],
                    embeddings: ArrayLike, valid: ArrayLike, correct: ArrayLike,
                    update: bool = True) -> GroupRewards:
        """Rewards of n completions, k questions each.

        ``questions`` (n × k, None = missing from a malformed completion),
        ``embeddings`` (n, k, d; rows of missing questions are ignored),
        ``valid`` and ``correct`` (n, k) verdicts. A missing question counts as
        invalid whatever ``valid`` says. With ``update``, the group's failures
        (V = 1, C = 0) enter the banks after every reward is computed.
        """
        cfg = self.config
        n = len(image_ids)
        if len(questions) != n or any(len(qs) != cfg.k for qs in questions):
            raise ValueError(f"questions must be {n} rows of k = {cfg.k} slots")
        v = _verdicts(valid, "valid", n, cfg.k)
        c = _verdicts(correct, "correct", n, cfg.k)
        present = np.array([[q is not None for q in qs] for qs in questions],
                           dtype=bool).reshape(n, cfg.k)
        v = v & present
        emb = np.asarray(embeddings, dtype=np.float64)
        if n and (emb.ndim != 3 or emb.shape[:2] != (n, cfg.k)):
            raise ValueError(f"embeddings must be (n, k, d) = ({n}, {cfg.k}, d), got {emb.shape}")
        de = np.zeros((n, cfg.k))
        di = np.zeros((n, cfg.k))
        for i, (img, qs) in enumerate(zip(image_ids, questions, strict=True)):
            for j, q in enumerate(qs):
                # invalid questions score −λ_p whatever the novelty terms say
                if q is not None and v[i, j]:
                    de[i, j] = self.delta_emb(img, emb[i, j])
                    di[i, j] = self.delta_ifreq(q)
        per_q = question_reward(de if cfg.use_emb else np.zeros_like(de),
                                di if cfg.use_ifreq else np.zeros_like(di), v, c,
                                cfg.lambda_scale, cfg.lambda_penalty)
        per_c = per_q.mean(axis=1) if cfg.aggregate == "mean" else per_q.sum(axis=1)
        if update:
            self._update(image_ids, questions, emb, v, c)
        return GroupRewards(completion=per_c, question=per_q, delta_emb=de,
                            delta_ifreq=di, valid=v)

    def state(self) -> dict[str, NDArray[Any]]:
        """The banks as plain arrays (for ``np.savez`` in a run's checkpoint):
        ``images`` (m,) ids, ``offsets`` (m + 1,) row ranges into ``embeddings``
        (Σ rows, d), ``prefixes`` (p,) and ``prefix_counts`` (p,)."""
        ids = sorted(self._images)
        rows = [self._images[i] for i in ids]
        offsets = np.cumsum([0, *(r.shape[0] for r in rows)])
        d = rows[0].shape[1] if rows else 0
        return {"images": np.array(ids, dtype=np.str_),
                "offsets": offsets.astype(np.int64),
                "embeddings": np.concatenate(rows) if rows else np.zeros((0, d)),
                "prefixes": np.array(sorted(self.prefixes), dtype=np.str_),
                "prefix_counts": np.array([self.prefixes[p] for p in sorted(self.prefixes)],
                                          dtype=np.int64)}

    @classmethod
    def from_state(cls, state: Mapping[str, ArrayLike],
                   config: RewardConfig | None = None) -> DiscoveryReward:
        """Banks back from :meth:`state`; a damaged state is refused, not guessed at."""
        try:
            ids = [str(i) for i in np.asarray(state["images"]).tolist()]
            offsets = np.asarray(state["offsets"], dtype=np.int64)
            emb = np.asarray(state["embeddings"], dtype=np.float64)
            prefixes = [str(p) for p in np.asarray(state["prefixes"]).tolist()]
            counts = np.asarray(state["prefix_counts"], dtype=np.int64)
        except KeyError as exc:
            raise ValueError(f"reward bank state lacks {exc.args[0]!r}") from None
        if (offsets.shape != (len(ids) + 1,) or offsets[0] != 0 or np.any(np.diff(offsets) < 1)
                or emb.ndim != 2 or offsets[-1] != emb.shape[0] or len(set(ids)) != len(ids)):
            raise ValueError("reward bank state: image offsets do not match the embeddings")
        if counts.shape != (len(prefixes),) or (counts < 1).any() \
                or len(set(prefixes)) != len(prefixes):
            raise ValueError("reward bank state: prefixes and counts do not match")
        out = cls(config)
        for i, img in enumerate(ids):
            out._images[img] = unit_rows(emb[offsets[i]:offsets[i + 1]])
        out.prefixes = Counter(dict(zip(prefixes, counts.tolist(), strict=True)))
        return out

    def _update(self, image_ids: Sequence[str], questions: Sequence[Sequence[str | None]],
                emb: NDArray[np.float64], v: NDArray[np.bool_], c: NDArray[np.bool_]) -> None:
        failed = v & ~c
        to_prefix = failed if self.config.bank == "failures" else v
        new: dict[str, list[NDArray[np.float64]]] = {}
        for i, (img, qs) in enumerate(zip(image_ids, questions, strict=True)):
            for j, q in enumerate(qs):
                if q is None:
                    continue
                if to_prefix[i, j]:
                    self.prefixes[prefix(q, self.config.prefix_len)] += 1
                if failed[i, j]:
                    new.setdefault(img, []).append(emb[i, j])
        for img, rows in new.items():
            add = unit_rows(np.stack(rows))
            old = self._images.get(img)
            if old is not None and old.shape[1] != add.shape[1]:
                raise ValueError(f"image {img!r}: embeddings have {add.shape[1]} dimensions, "
                                 f"the bank {old.shape[1]}")
            self._images[img] = add if old is None else np.concatenate([old, add])
