"""Shared pieces of the discover tests: planted images and the tiny questioner."""

from __future__ import annotations

from pathlib import Path


def planted_folder(root: Path, n: int = 12, seed: int = 0) -> Path:
    from vlmrobust.evaluation.discover.images import write_planted_images

    out = root / "images"
    write_planted_images(out, n, seed)
    return out


def tiny_questioner(root: Path, **kwargs: object) -> Path:
    from vlmrobust.evaluation.discover.tiny import make_tiny_questioner

    return make_tiny_questioner(root / "questioner", **kwargs)  # type: ignore[arg-type]
