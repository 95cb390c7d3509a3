"""The weights digest in a predictions file's metadata is kept per loaded
adapter between runs, and recomputed as soon as a weight changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from vlmrobust.evaluation.predict import provenance  # noqa: E402


class Tiny:
    """An adapter-like object holding a torch module (as adapters do)."""

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(0)
        self.model = torch.nn.Linear(4, 3)
        with torch.no_grad():
            self.model.weight.copy_(torch.randn(3, 4, generator=gen))
            self.model.bias.zero_()


def _fresh(obj: Any) -> str | None:
    provenance._WEIGHT_DIGESTS.pop(obj, None)
    return provenance._weights_digest(obj)


def test_weights_digest_cached_until_a_weight_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    a = Tiny()
    first = provenance._weights_digest(a)
    assert first is not None and first == _fresh(a)
    hashed: list[int] = []
    real = provenance.hashlib.sha256
    monkeypatch.setattr(provenance.hashlib, "sha256", lambda *x: hashed.append(1) or real(*x))
    assert provenance._weights_digest(a) == first and not hashed  # cached
    with torch.no_grad():
        a.model.bias[1] += 1.0  # in place: the version counter moves
    changed = provenance._weights_digest(a)
    assert hashed and changed != first and changed == _fresh(a)
    a.model.weight = torch.nn.Parameter(a.model.weight.detach().clone())  # same values
    hashed.clear()
    assert provenance._weights_digest(a) == changed and hashed  # another tensor: rehashed
    b = Tiny()
    assert provenance._weights_digest(b) == first  # same values, own entry


def test_checkpoint_hash_follows_the_file(tmp_path: Path) -> None:
    f = tmp_path / "w.safetensors"
    f.write_bytes(b"abc")
    h1 = provenance._checkpoint_sha256(f)
    assert h1 == provenance.file_sha256(f)
    f.write_bytes(b"abcd")  # size changes: a new key
    assert provenance._checkpoint_sha256(f) == provenance.file_sha256(f) != h1
