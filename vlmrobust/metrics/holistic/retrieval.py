"""Zero-shot retrieval Recall@K both ways, as CLIP_benchmark computes it.

From an (n_images × n_texts) similarity matrix S and, for each text, the index
of its image (``text_image``; an image has one or more captions):

- image→text (CLIP_benchmark's ``text_retrieval_recall@K``): image i is a hit
  if ANY of its captions is among the K texts of highest S[i, :];
- text→image (its ``image_retrieval_recall@K``): text t is a hit if its image
  is among the K images of highest S[:, t];
- Recall@K = the share of hits over the queries (images, resp. texts).

Each query is reduced to the 0-based rank of its first relevant candidate, so
hits at every K are ``rank < K``. Ties in S are broken by candidate index
(lower first, a stable descending sort); ``torch.topk`` leaves them
unspecified, so the two agree whenever no tie straddles the K-th place.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

# Rows of S held at once by retrieval_ranks: bounds memory to block × n floats.
DEFAULT_BLOCK = 256


def _similarity(similarity: ArrayLike) -> NDArray[np.float64]:
    s = np.asarray(similarity, dtype=np.float64)
    if s.ndim != 2 or 0 in s.shape:
        raise ValueError(f"similarity must be a non-empty (n_images, n_texts) matrix, got shape {s.shape}")
    if not np.isfinite(s).all():
        i, t = np.argwhere(~np.isfinite(s))[0]
        raise ValueError(f"similarity must be finite, got {float(s[i, t])!r} at (image {i}, text {t})")
    return s


def _text_image(text_image: ArrayLike, n_images: int, n_texts: int) -> NDArray[np.int64]:
    idx = np.asarray(text_image)
    if idx.shape != (n_texts,):
        raise ValueError(f"text_image must give one image index per text, shape ({n_texts},), "
                         f"got {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"text_image must hold integer image indices, got dtype {idx.dtype}")
    bad = (idx < 0) | (idx >= n_images)
    if bad.any():
        t = int(np.flatnonzero(bad)[0])
        raise ValueError(f"text_image[{t}] = {int(idx[t])} is not an image index in [0, {n_images})")
    captioned = np.bincount(idx, minlength=n_images) > 0
    if not captioned.all():
        # CLIP_benchmark would count such an image as a silent miss (0/0 > 0 is False)
        raise ValueError(f"image {int(np.flatnonzero(~captioned)[0])} has no caption in text_image; "
                         "drop it or add its captions")
    return idx.astype(np.int64)


def _ranks_of_best(s: NDArray[np.float64], positive: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Per row: 0-based rank, in a stable descending sort, of the first positive column."""
    best = np.where(positive, s, -np.inf).max(axis=1)
    first = np.argmax(positive & (s == best[:, None]), axis=1)  # lowest index among best
    cols = np.arange(s.shape[1])
    above = (s > best[:, None]).sum(axis=1)
    tied_before = ((s == best[:, None]) & (cols[None, :] < first[:, None])).sum(axis=1)
    return np.asarray(above + tied_before, dtype=np.int64)


def image_to_text_ranks(similarity: ArrayLike, text_image: ArrayLike) -> NDArray[np.int64]:
    """For each image i: r_i = min over its captions c of rank_i(c), where rank_i orders
    all texts by S[i, :] descending (ties: lower text index first); hit@K ⇔ r_i < K.

    >>> image_to_text_ranks([[0.9, 0.1, 0.5], [0.2, 0.8, 0.7]], [0, 1, 1]).tolist()
    [0, 0]
    >>> image_to_text_ranks([[0.1, 0.9, 0.5], [0.2, 0.8, 0.7]], [0, 1, 1]).tolist()
    [2, 0]
    """
    s = _similarity(similarity)
    idx = _text_image(text_image, *s.shape)
    return _ranks_of_best(s, idx[None, :] == np.arange(s.shape[0])[:, None])


def text_to_image_ranks(similarity: ArrayLike, text_image: ArrayLike) -> NDArray[np.int64]:
    """For each text t: the rank of its image among all images by S[:, t] descending
    (ties: lower image index first); hit@K ⇔ rank < K.

    >>> text_to_image_ranks([[0.9, 0.1, 0.5], [0.2, 0.8, 0.7]], [0, 1, 1]).tolist()
    [0, 0, 0]
    >>> text_to_image_ranks([[0.9, 0.1, 0.5], [0.2, 0.8, 0.7]], [1, 1, 0]).tolist()
    [1, 0, 1]
    """
    s = _similarity(similarity)
    idx = _text_image(text_image, *s.shape)
    st = s.T
    return _ranks_of_best(st, idx[:, None] == np.arange(s.shape[0])[None, :])


def recall_at_k(ranks: ArrayLike, k: int) -> float:
    """Recall@K = (1/Q) Σ_q 1[r_q < K] over the Q queries' first-hit ranks.

    >>> recall_at_k([0, 3, 1, 7], 2)
    0.5
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    r = np.asarray(ranks)
    if r.ndim != 1 or r.size == 0 or not np.issubdtype(r.dtype, np.integer) or (r < 0).any():
        raise ValueError(f"ranks must be a non-empty 1-D array of ints >= 0, got {r!r}")
    return float((r < k).mean())


def retrieval_ranks(image_embeddings: ArrayLike, text_embeddings: ArrayLike,
                    text_image: ArrayLike, *, block: int = DEFAULT_BLOCK,
                    normalize: bool = True) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(image→text ranks, text→image ranks) with S = Î·T̂ᵀ computed ``block`` rows at a
    time, never the whole matrix: memory O(block · max(n_images, n_texts)).

    With ``normalize`` the embeddings are scaled to unit length first (cosine
    similarity, as CLIP_benchmark's ``F.normalize``).

    >>> img = [[1.0, 0.0], [0.0, 1.0]]; txt = [[0.9, 0.1], [0.2, 0.9], [0.0, 2.0]]
    >>> [r.tolist() for r in retrieval_ranks(img, txt, [0, 1, 1], block=1)]
    [[0, 0], [0, 0, 0]]
    """
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"block must be an int >= 1, got {block!r}")
    img = np.asarray(image_embeddings, dtype=np.float64)
    txt = np.asarray(text_embeddings, dtype=np.float64)
    if img.ndim != 2 or txt.ndim != 2 or img.shape[1] != txt.shape[1] or 0 in img.shape + txt.shape:
        raise ValueError(f"embeddings must be non-empty (n, d) matrices of one width d, got "
                         f"images {img.shape} and texts {txt.shape}")
    for name, e in (("image_embeddings", img), ("text_embeddings", txt)):
        if not np.isfinite(e).all():
            raise ValueError(f"{name} must be finite (row {int(np.argwhere(~np.isfinite(e))[0][0])})")
        if normalize:
            norms = np.linalg.norm(e, axis=1)
            if (norms == 0).any():
                raise ValueError(f"{name} row {int(np.flatnonzero(norms == 0)[0])} is all zeros: "
                                 "it has no direction to normalise")
    if normalize:
        img = img / np.linalg.norm(img, axis=1, keepdims=True)
        txt = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    n_img, n_txt = img.shape[0], txt.shape[0]
    idx = _text_image(text_image, n_img, n_txt)
    i2t = np.empty(n_img, dtype=np.int64)
    for a in range(0, n_img, block):
        rows = np.arange(a, min(a + block, n_img))
        i2t[rows] = _ranks_of_best(img[rows] @ txt.T, idx[None, :] == rows[:, None])
    t2i = np.empty(n_txt, dtype=np.int64)
    images = np.arange(n_img)
    for a in range(0, n_txt, block):
        cols = slice(a, min(a + block, n_txt))
        t2i[cols] = _ranks_of_best(txt[cols] @ img.T, idx[cols, None] == images[None, :])
    return i2t, t2i


def clustered_recall_ci(hits: ArrayLike, queries: ArrayLike, *, n_boot: int, seed: int,
                        level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of Recall@K = Σ_c h_c / Σ_c q_c over ``n_boot`` resamples of
    the clusters c (images) with replacement: h_c hits among the q_c queries of
    cluster c (image→text: q_c = 1; text→image: q_c = the image's captions, which
    are not independent queries). The gallery is not resampled. None when
    ``n_boot`` is 0.

    >>> clustered_recall_ci([1, 1, 1], [1, 1, 1], n_boot=50, seed=0)
    (1.0, 1.0)
    >>> lo, hi = clustered_recall_ci([5, 0] * 50, [5] * 100, n_boot=400, seed=1)
    >>> 0.35 < lo < 0.5 < hi < 0.65
    True
    """
    h = np.asarray(hits, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    if h.ndim != 1 or h.shape != q.shape or h.size == 0:
        raise ValueError(f"hits and queries must be equal non-empty 1-D arrays, got {h.shape} "
                         f"and {q.shape}")
    if (q < 1).any() or (h < 0).any() or (h > q).any():
        raise ValueError("each cluster needs queries >= 1 and 0 <= hits <= queries")
    if isinstance(n_boot, bool) or n_boot < 0 or not 0.0 < level < 1.0:
        raise ValueError(f"n_boot must be >= 0 and level in (0, 1), got {n_boot}, {level}")
    if n_boot == 0:
        return None
    rng = np.random.default_rng(seed)
    n = h.size
    values = np.empty(n_boot)
    # resamples in chunks: memory O(chunk · n) whatever n_boot is
    chunk = max(1, 2_000_000 // n)
    for a in range(0, n_boot, chunk):
        b = min(a + chunk, n_boot)
        idx = rng.integers(0, n, size=(b - a, n))
        values[a:b] = h[idx].sum(axis=1) / q[idx].sum(axis=1)
    lo, hi = np.quantile(values, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)
