"""Hand-made fixtures in the cue-conflict family's published layouts: 32 named
stimuli (two per category, Geirhos's naming), and a model-vs-human stylized
folder. The images are tiny PNGs whose colour encodes the stimulus."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from vlmrobust.builders.cue_conflict.categories import CATEGORIES


def png(seed: int, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (seed * 7 % 256, seed * 13 % 256, seed * 29 % 256)).save(buf, fmt)
    return buf.getvalue()


def named_stimuli() -> list[str]:
    """32 stimuli: per category ``<c>/<c>1-<next>1.png`` (texture = the next
    category) and ``<c>/<c>2-<t>2.png`` where t is the category itself for the
    even-numbered categories (no cue conflict) and the one before for the odd.

    >>> named_stimuli()[:4]
    ['airplane/airplane1-bear1.png', 'airplane/airplane2-airplane2.png', 'bear/bear1-bicycle1.png', 'bear/bear2-airplane2.png']
    """
    out = []
    n = len(CATEGORIES)
    for i, c in enumerate(CATEGORIES):
        out.append(f"{c}/{c}1-{CATEGORIES[(i + 1) % n]}1.png")
        second = c if i % 2 == 0 else CATEGORIES[i - 1]
        out.append(f"{c}/{c}2-{second}2.png")
    return out


def write_cue_conflict(root: Path, names: list[str] | None = None) -> Path:
    """``root/cue-conflict/<category>/<shape><i>-<texture><j>.png``; returns the variant root."""
    base = root / "cue-conflict"
    for k, name in enumerate(names or named_stimuli()):
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png(k))
    return base


STYLIZED_NAMES = ["0001_sty_dnn_0_airplane_00_airplane-0001-ILSVRC2012-val-00000251.png",
                  "0002_sty_dnn_0_knife_00_knife-0002-ILSVRC2012-val-00001303.png",
                  "0003_sty_dnn_0_dog_00_dog-0003-ILSVRC2012-val-00002122.png"]


def write_stylized(root: Path) -> Path:
    """``root/stylized/dnn/session-1/<NNNN>_sty_dnn_<condition>_<category>_<name>.png``."""
    base = root / "stylized"
    session = base / "dnn" / "session-1"
    session.mkdir(parents=True)
    for k, name in enumerate(STYLIZED_NAMES):
        (session / name).write_bytes(png(100 + k))
    return base
