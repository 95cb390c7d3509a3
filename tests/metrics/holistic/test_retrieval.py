"""Retrieval Recall@K against brute-force loops, torch.topk and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vlmrobust.metrics.holistic.retrieval import (
    image_to_text_ranks,
    recall_at_k,
    retrieval_ranks,
    text_to_image_ranks,
)


def _sorted_desc(row: np.ndarray) -> list[int]:
    """Candidate order by score descending, ties by lower index (Python's sort is stable)."""
    return sorted(range(row.size), key=lambda j: -row[j])


def _brute(sim: np.ndarray, text_image: np.ndarray, k: int) -> tuple[float, float]:
    i2t = [any(text_image[t] == i for t in _sorted_desc(sim[i])[:k]) for i in range(sim.shape[0])]
    t2i = [text_image[t] in _sorted_desc(sim[:, t])[:k] for t in range(sim.shape[1])]
    return float(np.mean(i2t)), float(np.mean(t2i))


def _topk_recall(sim: np.ndarray, text_image: np.ndarray, k: int) -> tuple[float, float]:
    """The CLIP_benchmark reading: torch.topk per query, a hit if a positive is in it."""
    s = torch.from_numpy(sim)
    top_texts = torch.topk(s, min(k, s.shape[1]), dim=1).indices
    top_images = torch.topk(s.T, min(k, s.shape[0]), dim=1).indices
    i2t = [bool(set(top_texts[i].tolist()) & set(np.flatnonzero(text_image == i).tolist()))
           for i in range(s.shape[0])]
    t2i = [int(text_image[t]) in top_images[t].tolist() for t in range(s.shape[1])]
    return float(np.mean(i2t)), float(np.mean(t2i))


def _fixture(n_img: int, per: int, seed: int, tied: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    text_image = np.repeat(np.arange(n_img), per)
    rng.shuffle(text_image)
    sim = rng.normal(size=(n_img, text_image.size))
    sim[text_image, np.arange(text_image.size)] += 1.0  # better than chance
    return (np.round(sim, 0) if tied else sim), text_image


@pytest.mark.parametrize("n_img, per, seed", [(1, 1, 0), (7, 1, 1), (12, 5, 2), (40, 3, 3)])
@pytest.mark.parametrize("k", [1, 5, 10])
def test_recall_equals_topk_and_brute_force(n_img: int, per: int, seed: int, k: int) -> None:
    sim, ti = _fixture(n_img, per, seed)
    got = (recall_at_k(image_to_text_ranks(sim, ti), k), recall_at_k(text_to_image_ranks(sim, ti), k))
    assert got == _brute(sim, ti, k) == _topk_recall(sim, ti, k)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_ties_follow_stable_order(seed: int, k: int) -> None:
    sim, ti = _fixture(15, 4, seed, tied=True)
    assert len(np.unique(sim)) < sim.size // 4  # really tied
    got = (recall_at_k(image_to_text_ranks(sim, ti), k), recall_at_k(text_to_image_ranks(sim, ti), k))
    assert got == _brute(sim, ti, k)


def test_closed_form_shifted_diagonal() -> None:
    # image i's best text is caption of image i+1; its own caption ranks second (no ties)
    n = 6
    sim = np.eye(n) * 0.5 + np.roll(np.eye(n), 1, axis=1)
    ti = np.arange(n)
    assert image_to_text_ranks(sim, ti).tolist() == [1] * n
    assert text_to_image_ranks(sim, ti).tolist() == [1] * n
    assert recall_at_k(image_to_text_ranks(sim, ti), 1) == 0.0
    assert recall_at_k(image_to_text_ranks(sim, ti), 2) == 1.0


def test_any_caption_counts_for_image_to_text() -> None:
    # image 0's captions are texts 2 and 3; text 3 scores top: hit@1, though text 2 is last
    sim = np.array([[0.5, 0.4, 0.0, 0.9], [0.1, 0.8, 0.3, 0.2]])
    ti = np.array([1, 1, 0, 0])
    assert image_to_text_ranks(sim, ti).tolist() == [0, 0]
    assert text_to_image_ranks(sim, ti).tolist() == [1, 0, 1, 0]


@pytest.mark.parametrize("block", [1, 3, 64, 10_000])
def test_blocked_ranks_equal_full_matrix(block: int) -> None:
    rng = np.random.default_rng(5)
    img, txt = rng.normal(size=(23, 8)), rng.normal(size=(61, 8))
    ti = np.r_[np.arange(23), rng.integers(0, 23, 38)]
    i2t, t2i = retrieval_ranks(img, txt, ti, block=block)
    sim = (img / np.linalg.norm(img, axis=1, keepdims=True)) @ (
        txt / np.linalg.norm(txt, axis=1, keepdims=True)).T
    assert i2t.tolist() == image_to_text_ranks(sim, ti).tolist()
    assert t2i.tolist() == text_to_image_ranks(sim, ti).tolist()
    raw_i2t, _ = retrieval_ranks(img, txt, ti, block=block, normalize=False)
    assert raw_i2t.tolist() == image_to_text_ranks(img @ txt.T, ti).tolist()
    assert raw_i2t.tolist() != i2t.tolist()  # normalising matters on these norms


@pytest.mark.parametrize("call, match", [
    (lambda: image_to_text_ranks([[0.1, np.nan]], [0, 0]), r"got nan at \(image 0, text 1\)"),
    (lambda: image_to_text_ranks([[0.1, 0.2]], [0]), r"shape \(2,\), got \(1,\)"),
    (lambda: text_to_image_ranks([[0.1, 0.2]], [0, 1]), r"text_image\[1\] = 1 is not an image index"),
    (lambda: text_to_image_ranks([[0.1], [0.2]], [0]), "image 1 has no caption"),
    (lambda: text_to_image_ranks([[0.1]], [0.0]), "integer image indices"),
    (lambda: recall_at_k([0, 1], 0), "k must be an int >= 1, got 0"),
    (lambda: recall_at_k([], 1), "non-empty 1-D"),
    (lambda: retrieval_ranks([[1.0, 0.0]], [[1.0]], [0]), "one width d"),
    (lambda: retrieval_ranks([[0.0, 0.0]], [[1.0, 0.0]], [0]), "image_embeddings row 0 is all zeros"),
    (lambda: retrieval_ranks([[1.0]], [[1.0]], [0], block=0), "block must be"),
])
def test_bad_input_names_the_value(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


@pytest.mark.parametrize("seed", range(8))
def test_recall_at_k_equals_clip_benchmarks_own_function(seed: int) -> None:
    """The package CLIP_benchmark itself (clip-benchmark, the build extra), not a
    re-implementation: its evaluate() counts a query as hit when recall_at_k > 0
    on the (texts x images) score matrix and its transpose."""
    torch = pytest.importorskip("torch")
    cb = pytest.importorskip("clip_benchmark.metrics.zeroshot_retrieval")
    from vlmrobust.metrics.holistic.retrieval import recall_at_k, retrieval_ranks

    rng = np.random.default_rng(seed)
    n, per, d = int(rng.integers(5, 40)), int(rng.integers(1, 6)), 16
    img = rng.normal(size=(n, d))
    text_image = np.repeat(np.arange(n), per)
    txt = img[text_image] + 1.5 * rng.normal(size=(text_image.size, d))
    i2t, t2i = retrieval_ranks(img, txt, text_image, block=7)
    im = torch.nn.functional.normalize(torch.from_numpy(img).float(), dim=-1)
    tx = torch.nn.functional.normalize(torch.from_numpy(txt).float(), dim=-1)
    scores = tx @ im.T
    positive = torch.zeros_like(scores, dtype=torch.bool)
    positive[torch.arange(text_image.size), torch.from_numpy(text_image)] = True
    for k in (1, 5, 10):
        if k > n:
            continue
        want_t2i = (cb.recall_at_k(scores, positive, k) > 0).float().mean().item()
        want_i2t = (cb.recall_at_k(scores.T, positive.T, k) > 0).float().mean().item()
        assert recall_at_k(t2i, k) == pytest.approx(want_t2i, abs=1e-6)
        assert recall_at_k(i2t, k) == pytest.approx(want_i2t, abs=1e-6)
