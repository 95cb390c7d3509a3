"""The content digest of re-scored answers (leaderboard/trust/evidence.py) is the
sha256 of every id with its NUL, then the answers: hashed in one update now
(issue 37.2), so the digests published in past releases stay the same."""

from __future__ import annotations

import hashlib

import numpy as np

from vlmrobust.leaderboard.trust.evidence import content_digest


def _per_id(ids: list[str], logits: np.ndarray | None, predicted: np.ndarray) -> str:
    h = hashlib.sha256()
    for rid in ids:
        h.update(rid.encode("utf-8") + b"\x00")
    if logits is not None:
        h.update(b"logits" + np.ascontiguousarray(logits, dtype="<f8").tobytes())
    else:
        h.update(b"predicted" + np.ascontiguousarray(predicted, dtype="<i8").tobytes())
    return h.hexdigest()


def test_digest_equals_the_per_id_stream() -> None:
    rng = np.random.default_rng(0)
    ids = [f"q{i}-é✓" if i % 7 == 0 else f"q{i}" for i in range(500)]
    arr = np.array(ids, dtype=object)
    logits = rng.normal(size=(500, 4)).astype(np.float32)
    predicted = rng.integers(0, 4, 500)
    assert content_digest(arr, logits, predicted) == _per_id(ids, logits, predicted)
    assert content_digest(arr, None, predicted) == _per_id(ids, None, predicted)
    assert content_digest(np.array([], dtype=object), None, np.array([], dtype=np.int64)) == \
        hashlib.sha256(b"predicted").hexdigest()
