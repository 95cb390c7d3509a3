"""scores.json section and per-row results for kind ``retrieval``.

Per config (its gallery: every image and every caption of the config), with
embeddings L2-normalised and S = cosine similarity computed in blocks
(vlmrobust.metrics.holistic.retrieval.retrieval_ranks), as CLIP_benchmark computes it:

- ``image_to_text`` Recall@K (CLIP_benchmark's ``text_retrieval_recall@K``):
  share of images with one of their captions among their K nearest captions;
- ``text_to_image`` Recall@K (its ``image_retrieval_recall@K``): share of
  captions whose image is among their K nearest images;
- K in :data:`KS`; each with a percentile bootstrap interval over images
  (text→image resamples an image with all its captions), seeded per config
  and direction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.evaluation.scoring.common import (
    DEFAULT_SEED,
    dataset_entry,
    derived_seed,
    scores_document,
)
from vlmrobust.evaluation.validate.check import partial_note
from vlmrobust.evaluation.validate.retrieval import RetrievalReport
from vlmrobust.metrics.holistic.retrieval import clustered_recall_ci, recall_at_k, retrieval_ranks

KS = (1, 5, 10)
N_BOOT = 1000
LEVEL = 0.95
DIRECTIONS = ("image_to_text", "text_to_image")


def config_ranks(report: RetrievalReport) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """config -> (image→text ranks per image, text→image ranks per caption, the
    image of each caption), all in dataset order."""
    out = {}
    for cfg in report.configs:
        img, txt, text_image = cfg.embeddings(report.file)
        try:
            i2t, t2i = retrieval_ranks(img, txt, text_image)
        except ValueError as exc:  # validated already; a zero-caption image lands here
            raise VlmrobustError(f"{report.file.path}: config {cfg.name}: {exc}") from None
        out[cfg.name] = (i2t, t2i, text_image)
    return out


def _direction(ranks: np.ndarray, clusters: np.ndarray, n_images: int, config: str,
               direction: str, seed: int, n_boot: int) -> dict[str, Any]:
    block: dict[str, Any] = {}
    queries = np.bincount(clusters, minlength=n_images)
    for k in KS:
        hit = (ranks < k).astype(np.int64)
        block[f"recall@{k}"] = recall_at_k(ranks, k)
        ci = clustered_recall_ci(np.bincount(clusters, weights=hit, minlength=n_images), queries,
                                 n_boot=n_boot, level=LEVEL,
                                 seed=derived_seed(seed, "retrieval", config, direction, str(k)))
        block[f"recall@{k}_ci"] = None if ci is None else list(ci)
    return block


def retrieval_section(report: RetrievalReport, seed: int = DEFAULT_SEED,
                      n_boot: int = N_BOOT) -> dict[str, Any]:
    """The dataset's section of scores.json."""
    configs: dict[str, Any] = {}
    for name, (i2t, t2i, text_image) in config_ranks(report).items():
        n = len(i2t)
        configs[name] = {
            "kind": "retrieval", "n": n, "accuracy": None, "n_captions": len(t2i),
            "embedding_dim": report.file.dim,
            "image_to_text": _direction(i2t, np.arange(n), n, name, "image_to_text", seed,
                                        n_boot),
            "text_to_image": _direction(t2i, text_image, n, name, "text_to_image", seed, n_boot),
        }
    return {
        "dataset": dataset_entry(report.name, report.manifest),
        "kind": "retrieval",
        "predictions_sha256": report.sha256,
        "has_logits": False, "has_text": False, "no_answer": 0,
        "reference_variant": None,
        "configs": configs,
        "bench_c": None,
        **({"partial": dict(report.partial)} if report.partial is not None else {}),
    }


def retrieval_scores(report: RetrievalReport, model_id: str | None = None,
                     seed: int = DEFAULT_SEED, n_boot: int = N_BOOT) -> dict[str, Any]:
    """scores.json content (one dataset section) for a validated report."""
    return scores_document(report.name, retrieval_section(report, seed, n_boot), model_id,
                           report.meta)


def retrieval_rows(report: RetrievalReport) -> list[Mapping[str, Any]]:
    """Per image: its config, image→text rank (0-based rank of its best caption)
    and the text→image rank of each of its captions."""
    out: list[Mapping[str, Any]] = []
    ranks = config_ranks(report)
    for cfg in report.configs:
        i2t, t2i, _ = ranks[cfg.name]
        starts = np.concatenate([[0], np.cumsum(cfg.n_captions)])
        for i, rid in enumerate(cfg.ids.tolist()):
            out.append({"id": rid, "config": cfg.name, "image_to_text_rank": int(i2t[i]),
                        "text_to_image_ranks": t2i[starts[i]:starts[i + 1]].tolist()})
    return out


def stored_bytes(report: RetrievalReport, predictions: Path) -> bytes:
    """What `submit` stores: the parquet file itself when it carries its metadata,
    else (JSONL + sidecar) the same rows as parquet with the metadata embedded."""
    import io

    import pyarrow.parquet as pq

    from vlmrobust.core.files.bounded import read_bytes_bounded
    from vlmrobust.core.writer import WRITE_CHECKSUMS
    from vlmrobust.evaluation.predict.retrieval import embeddings_table
    from vlmrobust.evaluation.predictions.meta import attach_meta
    from vlmrobust.evaluation.predictions.read import DEFAULT_MAX_BYTES

    ef = report.file
    if ef.format == "parquet" and ef.embedded_meta is not None:
        data = read_bytes_bounded(predictions, DEFAULT_MAX_BYTES, "predictions file",
                                  SubmissionError)
        if hashlib.sha256(data).hexdigest() != report.sha256:
            raise SubmissionError(f"{predictions} changed while it was being submitted; submit again")
        return data
    off = ef.text_offsets
    table = embeddings_table(ef.ids.tolist(), list(ef.image),
                             [ef.text[off[i]:off[i + 1]] for i in range(ef.n_rows)])
    buf = io.BytesIO()
    pq.write_table(attach_meta(table, dict(report.meta or {})), buf, compression="zstd",
                   **WRITE_CHECKSUMS)
    return buf.getvalue()


def retrieval_summary(name: str, section: Mapping[str, Any]) -> list[str]:
    """What `vlmrobust score` prints for a retrieval section: Recall@5 both ways
    per config (no accuracy)."""
    return [f"{name}: " + ", ".join(
        f"{c} R@5 image→text {v['image_to_text']['recall@5']:.3f} text→image "
        f"{v['text_to_image']['recall@5']:.3f}" for c, v in section["configs"].items())
        + (f"; {partial_note(section['partial'])}" if section.get("partial") else "")]


def retrieval_headlines(section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per config, Recall@5 both ways (the rows `vlmrobust eval` reports)."""
    return [{"config": config, "metric": f"recall@5 {way}", "value": c[way]["recall@5"],
             "ci": c[way].get("recall@5_ci"), "n": c.get("n")}
            for config, c in (section.get("configs") or {}).items()
            for way in ("image_to_text", "text_to_image")]
