"""A failure-discovery source from the planted world: records of two rule
answerers (blind on different types) over the same questions of the tiny
questioner, and the images they name."""

from __future__ import annotations

from pathlib import Path

from tests.discover_fixtures import planted_folder, tiny_questioner
from vlmrobust.cli.main import main

BLIND = ("count", "color")


def planted_source(root: Path, n_images: int = 12) -> Path:
    """ROOT/images + ROOT/records/{count,color}.jsonl."""
    images = planted_folder(root, n=n_images)
    qdir = tiny_questioner(root, prior_steps=120)
    (root / "records").mkdir()
    for blind in BLIND:
        rc = main(["discover", "sample", "--questioner", str(qdir), "--images", str(images),
                   "--answerer", f"rule:blind={blind}", "--verifier", "rule:planted",
                   "--skills", "rule:planted", "--samples-per-image", "3",
                   "--method", "untrained", "--out", str(root / "records" / f"{blind}.jsonl")])
        assert rc == 0
    return root


def build_failure_dataset(source: Path, out: Path) -> Path:
    assert main(["build", "failure-discovery", "--source-root", str(source), "--out",
                 str(out)]) == 0
    return out
