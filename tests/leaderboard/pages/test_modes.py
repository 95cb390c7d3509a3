"""Answer modes on the leaderboard: a VLM read by likelihood or generation is
drawn as its own line, as prompts are; the family's usual reading (letter)
splits nothing; the mode travels from the predictions' metadata into the
submission's."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy.special import ndtr, ndtri

from vlmrobust.evaluation.model_meta import model_meta_from
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.synthetic import write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

SPEC = BaselineSpec(version="t", n_bootstrap=50)


def _on_line(x: float, a: float, b: float) -> float:
    return float(ndtr(a * ndtri(x) + b))


def _write(root: Path, model_id: str, family: str, x: float, y: float,
           mode: str | None = None) -> None:
    meta = {"model_id": model_id, "name": model_id.upper(), "family": family,
            "prompt_id": "what-type" if family == "vlm" else None, "mode": mode}
    configs = {f"{v}-wordnet": {"n": 1000, "accuracy": a, "variant": v, "strategy": "wordnet"}
               for v, a in (("in-val", x), ("in-r", y))}
    write_submission(root, meta, {"schema_version": 1, "model_id": model_id, "datasets": {
        "imagenet-mcq": {"dataset": {"name": "imagenet-mcq"}, "has_logits": True,
                         "reference_variant": "in-val", "configs": configs}}})


def test_modes_are_lines_of_their_own(tmp_path: Path) -> None:
    for i, x in enumerate((0.5, 0.6, 0.7)):
        _write(tmp_path, f"c{i}", "classifier", x, _on_line(x, 1.0, -0.8), mode="class-logits")
        for mode, b in (("letter", -0.3), ("likelihood:sum", -0.1)):
            _write(tmp_path, f"v{i}-{mode.replace(':', '-')}", "vlm", x, _on_line(x, 0.9, b),
                   mode=mode)
    lb = aggregate(load_submissions(tmp_path), SPEC)
    lines = {f.label: f for f in lb.fits if f.kind == "prompt" and f.strategy == "wordnet"}
    assert set(lines) == {"vlm · what-type", "vlm · what-type · likelihood:sum"}
    assert lines["vlm · what-type · likelihood:sum"].intercept == pytest.approx(-0.1, abs=1e-9)
    assert lines["vlm · what-type"].intercept == pytest.approx(-0.3, abs=1e-9)


def test_mode_travels_into_the_submission_meta() -> None:
    meta = model_meta_from("m", {"model": "vlm:x/y", "family": "vlm", "mode": "generate"})
    assert meta.mode == "generate" and meta.to_dict()["mode"] == "generate"
    assert model_meta_from("m", {"model": "classifier:a", "family": "classifier"}).mode is None
