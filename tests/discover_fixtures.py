"""Shared pieces of the discover tests: planted images, the tiny questioner and
a valid record to vary."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def planted_folder(root: Path, n: int = 12, seed: int = 0) -> Path:
    from vlmrobust.evaluation.discover.images import write_planted_images

    out = root / "images"
    write_planted_images(out, n, seed)
    return out


def tiny_questioner(root: Path, **kwargs: object) -> Path:
    from vlmrobust.evaluation.discover.tiny import make_tiny_questioner

    return make_tiny_questioner(root / "questioner", **kwargs)  # type: ignore[arg-type]


def make_record(**kw: object) -> Any:
    """A valid failure record (counting, step 3) with ``kw`` replaced."""
    from vlmrobust.core.discover_records import DiscoveryRecord

    base: dict[str, object] = dict(
        image="a.png", image_sha256="0" * 64, completion_id="a.png#0", slot=1,
        question="how many shapes are there ?", answer="4", valid=True, correct=False,
        valid_reason="ok", correct_reason="it is 3", verifier_parsed=True, method="rl",
        questioner="local:q@1", answerer="rule-answerer:blind=count",
        verifier="rule-verifier:planted", seed=0, step=3, skills=("counting",))
    base.update(kw)
    return DiscoveryRecord(**base)  # type: ignore[arg-type]
