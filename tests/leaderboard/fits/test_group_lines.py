"""Issue 24.5: charts colour and fit lines by any model-group field
(baselines.yaml group_by), and the Huber fit reaches the aggregated lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr, ndtri

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.charts.fit_plots import shift_charts
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.synthetic import write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec, BaselineSpecError, load_baselines


def _write(root: Path, model_id: str, family: str, x: float, y: float, **groups: str) -> None:
    meta = {"model_id": model_id, "name": model_id, "family": family, **groups}
    configs = {f"{v}-wordnet": {"n": 1000, "accuracy": a, "variant": v, "strategy": "wordnet"}
               for v, a in (("in-val", x), ("in-r", y))}
    write_submission(root, meta, {"schema_version": 1, "model_id": model_id, "datasets": {
        "imagenet-mcq": {"dataset": {"name": "imagenet-mcq"}, "has_logits": True,
                         "reference_variant": "in-val", "configs": configs}}})


@pytest.fixture()
def subs(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    for i, x in enumerate((0.5, 0.6, 0.7, 0.8)):
        _write(tmp_path, f"cnn{i}", "classifier", x, float(ndtr(0.9 * ndtri(x) - 0.8)),
               training_data="imagenet-1k", loss="ce", architecture="cnn")
    for i, x in enumerate((0.55, 0.65, 0.75)):
        y = float(ndtr(0.7 * ndtri(x) - 0.1) + rng.normal(scale=0.01))
        _write(tmp_path, f"clip{i}", "clip", x, y, loss="contrastive", architecture="vit")
    for i, x in enumerate((0.52, 0.62, 0.72)):
        _write(tmp_path, f"vlm{i}", "vlm", x, x - 0.05, loss="generative", architecture="vit")
    _write(tmp_path, "anon", "other", 0.6, 0.5)
    return tmp_path


def test_lines_follow_the_group_field(subs: Path) -> None:
    lb = aggregate(load_submissions(subs), BaselineSpec(version="t", n_bootstrap=0,
                                                        group_by="architecture"))
    lines = {f.label: f for f in lb.fits if f.kind == "family"}
    assert set(lines) == {"architecture: cnn", "architecture: vit", "architecture: unstated"}
    vit = lines["architecture: vit"]
    ids = ("clip0", "clip1", "clip2", "vlm0", "vlm1", "vlm2")
    assert vit.baselines == ids
    x = [p.acc_ref for p in vit.points]
    y = [p.acc_shift for p in vit.points]
    reg = stats.linregress(ndtri(x), ndtri(y))
    assert (vit.slope, vit.intercept) == (pytest.approx(reg.slope), pytest.approx(reg.intercept))
    assert {p.group for p in vit.points} == {"architecture: vit"}
    # the reference line is untouched by the grouping
    ref = next(f for f in lb.fits if f.kind == "reference")
    assert ref.baselines == ("cnn0", "cnn1", "cnn2", "cnn3")
    # the charts colour points and lines by the group, and say so in the legend
    charts = dict(shift_charts(lb))["wordnet"]
    svg = str(charts[0]["svg"])
    for label in ("architecture: cnn", "architecture: vit", "architecture: unstated"):
        assert label in svg
    assert "clip line" not in svg


def test_family_lines_by_default(subs: Path) -> None:
    lb = aggregate(load_submissions(subs), BaselineSpec(version="t", n_bootstrap=0))
    assert {f.label for f in lb.fits if f.kind == "family"} == {"classifier", "clip", "vlm",
                                                                 "other"}
    assert all(p.group == "" for f in lb.fits for p in f.points)


def test_huber_reaches_the_aggregated_reference_line(subs: Path) -> None:
    sm = pytest.importorskip("statsmodels.api")
    _write(subs, "cnn4", "classifier", 0.65, 0.2, training_data="imagenet-1k")  # an outlier
    lb = aggregate(load_submissions(subs), BaselineSpec(version="t", n_bootstrap=20,
                                                        fit="huber"))
    ref = next(f for f in lb.fits if f.kind == "reference")
    x = np.array([p.acc_ref for p in ref.points if p.is_baseline])
    y = np.array([p.acc_shift for p in ref.points if p.is_baseline])
    res = sm.RLM(ndtri(y), sm.add_constant(ndtri(x)), M=sm.robust.norms.HuberT()).fit()
    assert ref.slope == pytest.approx(res.params[1], abs=1e-5)
    assert ref.intercept == pytest.approx(res.params[0], abs=1e-5)
    assert ref.slope_ci is not None  # the resamples are fitted the same way


def test_group_by_is_checked(tmp_path: Path) -> None:
    assert load_baselines().group_by == "family"
    p = tmp_path / "b.yaml"
    p.write_text("version: '9'\ngroup_by: colour\n")
    with pytest.raises(BaselineSpecError, match="group_by must be one of"):
        load_baselines(p)
