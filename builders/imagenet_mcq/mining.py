"""Visual-neighbour mining: class prototypes in an image-embedding space and
exact inner-product search with FAISS (``IndexFlatIP``; on GPU when faiss was
built with CUDA and sees a GPU). Embeddings are L2-normalised, so the inner
product is the cosine similarity."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_bytes_atomic


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


def _chunk_key(tag: str, paths: Sequence[Path]) -> str:
    # path, size and mtime identify a file version, as make and rsync assume
    h = hashlib.sha256(tag.encode("utf-8"))
    for p in paths:
        st = Path(p).stat()
        h.update(f"\0{Path(p).resolve()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _load_images(paths: Sequence[Path]) -> list[Any]:
    from PIL import Image

    images = []
    for path in paths:
        try:
            with Image.open(path) as im:
                images.append(im.convert("RGB"))
        except (OSError, ValueError) as exc:
            raise VlmrobustError(
                f"{path}: cannot decode image ({exc}); replace or remove the file"
            ) from None
    return images


def embed_files(
    embed: Callable[[list[Any]], np.ndarray], paths: Sequence[Path], batch_size: int,
    progress: bool = True, desc: str = "embedding images", cache_dir: Path | None = None,
    cache_tag: str = "", chunk_batches: int = 16,
) -> np.ndarray:
    """L2-normalised embeddings (N, D) of image files, in order, with a progress bar.

    With ``cache_dir``, every chunk of ``batch_size * chunk_batches`` files is
    saved (atomically) under a key of ``cache_tag`` (the encoder) and the files'
    paths, sizes and mtimes, so an interrupted build resumes where it stopped.
    """
    from tqdm import tqdm

    chunk = batch_size * chunk_batches
    parts: list[np.ndarray] = []
    bar = tqdm(total=len(paths), desc=desc, unit="img", disable=not progress)
    for start in range(0, len(paths), chunk):
        block = paths[start:start + chunk]
        cached = None
        if cache_dir is not None:
            cached = Path(cache_dir) / f"{_chunk_key(cache_tag, block)}.npy"
            if cached.is_file():
                parts.append(np.load(cached))
                bar.update(len(block))
                continue
        out = []
        for b in range(0, len(block), batch_size):
            images = _load_images(block[b:b + batch_size])
            out.append(np.asarray(embed(images), dtype=np.float32))
            bar.update(len(images))
        arr = l2_normalise(np.concatenate(out))
        if cached is not None:
            buf = io.BytesIO()
            np.save(buf, arr)
            write_bytes_atomic(cached, buf.getvalue())
        parts.append(arr)
    bar.close()
    if not parts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.concatenate(parts)
