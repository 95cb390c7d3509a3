"""Re-scoring reads each submission's scores.json once (issue 37.2: it was read
and parsed twice a model, ~0.03 s of the 0.3 s), and the records it shows are
those of the recomputed scores, not of the stored file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.submission import real_submissions
from vlmrobust.core.files import bounded
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.trust.verify import load_verified_submissions


def test_scores_json_read_once_per_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subs, datasets = real_submissions(tmp_path, 3)
    reads: Counter[str] = Counter()
    real = bounded.read_bytes_bounded

    def counting(path: Any, *args: Any, **kwargs: Any) -> bytes:
        if Path(path).name == "scores.json":
            reads[Path(path).parent.name] += 1
        return real(path, *args, **kwargs)

    for module in ("vlmrobust.leaderboard.scores_json", "vlmrobust.core.files.bounded"):
        monkeypatch.setattr(f"{module}.read_bytes_bounded", counting)
    loaded = load_verified_submissions(subs, datasets=datasets, jobs=1)
    assert reads == {f"model-{i}": 1 for i in range(3)}
    assert [s.datasets for s in loaded] == [s.datasets for s in load_submissions(subs)]


def test_shown_numbers_are_the_recomputed_ones(tmp_path: Path) -> None:
    """A stored number within the agreement tolerance is not what the board shows."""
    subs, datasets = real_submissions(tmp_path, 1)
    path = subs / "model-0" / "scores.json"
    scores = json.loads(path.read_text(encoding="utf-8"))
    config = scores["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]
    fresh = config["accuracy"]
    config["accuracy"] = fresh * (1 + 1e-12)
    path.write_text(json.dumps(scores), encoding="utf-8")
    loaded = load_verified_submissions(subs, datasets=datasets, jobs=1)
    shown = {c.config: c for c in loaded[0].datasets["imagenet-mcq"].configs}
    assert shown["sample-photo-random"].accuracy == fresh
