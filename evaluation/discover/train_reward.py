"""The reward TRL's GRPO trainer calls: completions -> parsed questions ->
answerer -> verifier -> MiniLM embeddings -> Eq. 5 (:class:`DiscoveryReward`),
one reward per completion; every question slot is appended to the run's
journal (the record format, with the reward terms and the step).

Banks are updated once per call, after every reward of the call is computed:
one call is one generation batch (``images_per_step`` images × the group size),
which is one optimizer step with the trainer settings ``discover train`` uses
(``steps_per_generation = 1``), so "after a step's rewards".
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.discover_records import DiscoveryRecord, iter_records
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import MIB
from vlmrobust.evaluation.discover.images import ImageRef
from vlmrobust.evaluation.discover.roles import Answerer, Verifier
from vlmrobust.evaluation.discover.sample import judge_completions
from vlmrobust.metrics.discovery.reward import DiscoveryReward

Embed = Callable[[Sequence[str]], np.ndarray]
IMAGE_CACHE = 512


def completion_text(completion: Any) -> str:
    """TRL passes a string (plain prompts) or the assistant's messages (chat prompts)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        content = completion[-1].get("content", "")
        if isinstance(content, list):
            return "".join(c.get("text", "") for c in content if isinstance(c, dict))
        return str(content)
    return ""


class RewardFunction:
    """Callable as a TRL reward function (``reward_funcs=[RewardFunction(...)]``)."""

    __name__ = "discovery_eq5"

    def __init__(self, refs: Sequence[ImageRef], reward: DiscoveryReward, answerer: Answerer,
                 verifier: Verifier, embed: Embed, journal: Path, *, questioner: str,
                 seed: int) -> None:
        self.refs = {r.name: r for r in refs}
        self.reward = reward
        self.answerer = answerer
        self.verifier = verifier
        self.embed = embed
        self.journal = journal
        self.questioner = questioner
        self.seed = seed
        self._images: OrderedDict[str, tuple[Any, str]] = OrderedDict()
        self.history: list[dict[str, Any]] = []

    def image(self, name: str) -> tuple[Any, str]:
        if name not in self._images:
            if name not in self.refs:
                raise VlmrobustError(f"image {name!r} is not in the training folder")
            self._images[name] = self.refs[name].load()
            if len(self._images) > IMAGE_CACHE:
                self._images.popitem(last=False)
        self._images.move_to_end(name)
        return self._images[name]

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 image_name: Sequence[str], trainer_state: Any = None,
                 **_: Any) -> list[float]:
        k = self.reward.config.k
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        texts = [completion_text(c) for c in completions]
        loaded = [self.image(n) for n in image_name]
        judged = judge_completions([im for im, _ in loaded], texts, k, self.answerer,
                                   self.verifier)
        questions = [[j.question for j in row] for row in judged]
        flat = [q or "" for row in questions for q in row]
        emb = np.asarray(self.embed(flat), dtype=np.float64)
        emb = emb.reshape(len(texts), k, -1) if flat else np.zeros((0, k, 1))
        valid = [[j.verdict.valid for j in row] for row in judged]
        correct = [[j.verdict.correct for j in row] for row in judged]
        scored = self.reward.score_group(list(image_name), questions, emb, valid, correct)
        self._journal(step, image_name, loaded, judged, scored)
        v = np.asarray(valid, dtype=bool)
        c = np.asarray(correct, dtype=bool)
        self.history.append({"step": step, "reward": float(scored.completion.mean()),
                             "qvr": float(v.mean()),
                             # undefined without a valid question, as in metrics.discovery.fdr
                             "fdr": float((v & ~c).sum() / v.sum()) if v.any() else None})
        return [float(x) for x in scored.completion]

    def _journal(self, step: int, names: Sequence[str], loaded: Sequence[tuple[Any, str]],
                 judged: Sequence[Sequence[Any]], scored: Any) -> None:
        seen: dict[str, int] = {}
        lines = []
        for i, (name, (_, sha), row) in enumerate(zip(names, loaded, judged, strict=True)):
            g = seen[name] = seen.get(name, -1) + 1
            for j, item in enumerate(row):
                rec = DiscoveryRecord(
                    image=name, image_sha256=sha, completion_id=f"s{step}/{name}#{g}",
                    slot=j + 1, question=item.question, answer=item.answer,
                    valid=item.verdict.valid, correct=item.verdict.correct,
                    valid_reason=item.verdict.valid_reason,
                    correct_reason=item.verdict.correct_reason,
                    verifier_parsed=item.verdict.parsed, method="rl",
                    questioner=self.questioner, answerer=self.answerer.name,
                    verifier=self.verifier.name, seed=self.seed, step=step,
                    reward=float(scored.question[i, j]),
                    delta_emb=float(scored.delta_emb[i, j]),
                    delta_ifreq=float(scored.delta_ifreq[i, j]))
                lines.append(rec.to_json() + "\n")
        with self.journal.open("a", encoding="utf-8") as fh:
            fh.writelines(lines)
            fh.flush()


def truncate_journal(journal: Path, before_step: int) -> int:
    """Keep the journal's records of steps < ``before_step`` (a resumed run
    redoes the later ones); returns how many were kept. Rewritten atomically."""
    from vlmrobust.core.files.atomic import atomic_file

    if not journal.is_file():
        return 0
    kept = [r for r in iter_records(journal, 64 * 1024 * MIB) if r.step < before_step]
    with atomic_file(journal, "w") as fh:
        for r in kept:
            fh.write(r.to_json() + "\n")
    return len(kept)


def save_banks(reward: DiscoveryReward, folder: Path) -> None:
    from vlmrobust.core.files.atomic import atomic_file

    with atomic_file(folder / "discover_banks.npz", "wb") as fh:
        state: dict[str, Any] = dict(reward.state())
        np.savez(fh, **state)


def load_banks(folder: Path, reward: DiscoveryReward) -> DiscoveryReward:
    path = folder / "discover_banks.npz"
    if not path.is_file():
        raise VlmrobustError(f"{folder}: the checkpoint has no discover_banks.npz; it was not "
                             "written by `discover train`; start a new run with a new --out")
    try:
        with np.load(path, allow_pickle=False) as z:
            return DiscoveryReward.from_state({k: z[k] for k in z.files}, reward.config)
    except (ValueError, OSError) as exc:
        raise VlmrobustError(f"{path}: damaged reward banks ({exc}); resume from an earlier "
                             "checkpoint (delete this one) or start a new run") from None


def history_json(history: Sequence[dict[str, float]]) -> str:
    return json.dumps(list(history))
