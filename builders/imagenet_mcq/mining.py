"""Visual-neighbour mining: class prototypes in an image-embedding space and
exact inner-product search with FAISS (``IndexFlatIP``; on GPU when faiss was
built with CUDA and sees a GPU). Embeddings are L2-normalised, so the inner
product is the cosine similarity."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.errors import VlmrobustError


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), float32.

    >>> l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def image_prototypes(
    embeddings: np.ndarray, labels: Sequence[int], classes: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Prototype of class c = normalised mean of the normalised embeddings of the
    images labelled c. Returns ``(prototypes (len(classes), D), has_images mask)``;
    classes without images get a zero row (never a neighbour above a real one).

    >>> e = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> p, ok = image_prototypes(e, [0, 0, 2], [0, 1, 2])
    >>> np.round(p.astype(float), 3).tolist(), ok.tolist()
    ([[0.707, 0.707], [0.0, 0.0], [0.707, 0.707]], [True, False, True])
    """
    emb = l2_normalise(embeddings)
    pos = {c: i for i, c in enumerate(classes)}
    sums = np.zeros((len(classes), emb.shape[1]), dtype=np.float64)
    counts = np.zeros(len(classes), dtype=np.int64)
    for row, label in zip(emb, labels, strict=True):
        if label in pos:
            sums[pos[label]] += row
            counts[pos[label]] += 1
    return l2_normalise(sums), counts > 0


def faiss_gpu_available() -> bool:
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def nearest_prototypes(
    queries: np.ndarray, prototypes: np.ndarray, k: int, use_gpu: bool | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` inner-product search: ``(scores (N, k), indices (N, k))``,
    best first. ``use_gpu=None`` picks the GPU when faiss has one.

    >>> protos = np.eye(3, dtype=np.float32)
    >>> s, i = nearest_prototypes(np.array([[0.1, 0.9, 0.3]], np.float32), protos, 2)
    >>> i.tolist()
    [[1, 2]]
    """
    import faiss

    q = np.ascontiguousarray(queries, dtype=np.float32)
    p = np.ascontiguousarray(prototypes, dtype=np.float32)
    if q.ndim != 2 or p.ndim != 2 or q.shape[1] != p.shape[1]:
        raise ValueError(f"queries {q.shape} and prototypes {p.shape} must be (N, D) and (M, D)")
    k = min(k, p.shape[0])
    index: Any = faiss.IndexFlatIP(p.shape[1])
    if use_gpu is None:
        use_gpu = faiss_gpu_available()
    if use_gpu:
        index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    index.add(p)
    scores, idx = index.search(q, k)
    return scores, idx.astype(np.int64)


def embed_files(
    embed: Callable[[list[Any]], np.ndarray], paths: Sequence[Path], batch_size: int,
    progress: bool = True, desc: str = "embedding images",
) -> np.ndarray:
    """Embeddings (N, D) of image files, in order, batch by batch with a progress bar."""
    from PIL import Image
    from tqdm import tqdm

    chunks: list[np.ndarray] = []
    bar = tqdm(total=len(paths), desc=desc, unit="img", disable=not progress)
    for start in range(0, len(paths), batch_size):
        images = []
        for path in paths[start:start + batch_size]:
            try:
                with Image.open(path) as im:
                    images.append(im.convert("RGB"))
            except (OSError, ValueError) as exc:
                raise VlmrobustError(
                    f"{path}: cannot decode image ({exc}); replace or remove the file"
                ) from None
        chunks.append(np.asarray(embed(images), dtype=np.float32))
        bar.update(len(images))
    bar.close()
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    return l2_normalise(np.concatenate(chunks))
