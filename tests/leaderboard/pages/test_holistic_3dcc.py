"""Seed 001's 3D-corruption numbers on the Holistic page (issue 33 item 12a):
Table IV's "3D robustness" (mean accuracy over Fig. 8's six corruptions at
severity 5), checked against numpy, and Fig. 8's slope gap tan(Δ_S) between the
CNN and ViT zero-shot LAION CLIP lines, checked against statsmodels' RLM."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.pages.holistic.page import holistic_sections
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.metrics.holistic.corruption_3d import SEED_CORRUPTIONS, mean_3d_accuracy, slope_gap

# model -> (family, architecture, training data, ImageNet-val accuracy)
MODELS = {f"clip-{i:04d}": ("clip", arch, "laion-2b", 0.55 + 0.04 * i + (0.01 if arch == "cnn" else 0))
          for i, arch in enumerate(("cnn", "vit") * 4)}
MODELS["classifier-0100"] = ("classifier", "cnn", "imagenet-1k", 0.78)


def _cells(i: int, val: float, arch: str) -> dict[tuple[str, int], float]:
    """3DCC accuracies: the CNN line steeper than the ViT one, worse at severity 5."""
    rng = np.random.default_rng(i)
    slope = {"cnn": 0.9, "vit": 0.5}[arch]
    return {(c, s): float(np.clip(slope * (val - 0.5) + 0.45 - 0.05 * s + 0.02 * j
                                  + rng.normal(scale=0.004), 0.01, 0.99))
            for j, c in enumerate(SEED_CORRUPTIONS) for s in (1, 5)}


def _classification(val: float, cells: dict[tuple[str, int], float]) -> dict[str, Any]:
    configs = {"imagenet-val": {"n": 1000, "accuracy": val, "over": "label-space",
                                "variant": "imagenet-val", "n_classes": 1000}}
    for (c, s), acc in cells.items():
        configs[f"3dcc-{c}-{s}"] = {"n": 1000, "accuracy": acc, "over": "label-space",
                                    "variant": "3dcc", "n_classes": 1000}
    return {"dataset": {"name": "classification", "version": "1.0.0", "fingerprint": "c" * 64},
            "kind": "classification", "has_logits": True, "reference_variant": "imagenet-val",
            "configs": configs}


def _board(root: Path, drop: str | None = None) -> tuple[Any, dict[str, Any]]:
    cells_of = {}
    for i, (mid, (family, arch, data, val)) in enumerate(MODELS.items()):
        meta, scores = synthetic_submission(int(mid.split("-")[1]), family)
        meta.update(architecture=arch, training_data=data)
        meta.pop("fine_tuned_on", None)
        cells = _cells(i, val, arch)
        if drop is not None and i == 0:
            cells.pop((drop, 5))
        cells_of[mid] = cells
        scores["datasets"]["classification"] = _classification(val, cells)
        write_submission(root, meta, scores)
    lb = aggregate(load_submissions(root), BaselineSpec(version="t", n_bootstrap=0, min_models=3))
    return lb, cells_of


def test_table_iv_mean_and_the_fig_8_slope_gap(tmp_path: Path) -> None:
    sm = pytest.importorskip("statsmodels.api")
    lb, cells_of = _board(tmp_path / "subs")
    (sec,) = [s for s in holistic_sections(lb) if s.key == "3dcc-classification"]
    assert sec.columns[0] == "ImageNet val acc. %" and sec.columns[7] == "3D mean s5 % (Table IV)"
    assert sec.columns[1:7] == tuple(f"{c} s5 %" for c in SEED_CORRUPTIONS)
    for r in sec.rows:
        want = float(np.mean([cells_of[r.model_id][(c, 5)] for c in SEED_CORRUPTIONS]))
        assert float(r.cells[7].sort) == pytest.approx(want, abs=1e-12)
        assert float(r.cells[8].sort) == pytest.approx(
            np.mean([cells_of[r.model_id][(c, 1)] for c in SEED_CORRUPTIONS]), abs=1e-12)
    # the gap: Huber lines of the 4 CNN and 4 ViT LAION CLIP (the classifier is not one)
    slopes = {}
    for arch in ("cnn", "vit"):
        ids = [m for m, v in MODELS.items() if v[0] == "clip" and v[1] == arch]
        x = np.array([MODELS[m][3] for m in ids])
        y = np.array([np.mean([cells_of[m][(c, 5)] for c in SEED_CORRUPTIONS]) for m in ids])
        res = sm.RLM(y, sm.add_constant(x), M=sm.robust.norms.HuberT()).fit()
        slopes[arch], intercept = float(res.params[1]), float(res.params[0])
        # Fig. 8's chart draws the same line (linear axes)
        assert (f"{arch.upper()}-based LAION CLIP (huber, 4 models): y = {slopes[arch]:.3f}·x "
                f"{'+' if intercept >= 0 else '−'} {abs(intercept):.3f}") in str(sec.charts[0])
    delta = math.atan(slopes["cnn"]) - math.atan(slopes["vit"])
    note = next(n for n in sec.notes if n.startswith("severity 5:"))
    assert (f"CNN slope {slopes['cnn']:.3f} (4 models), ViT slope {slopes['vit']:.3f} (4 models), "
            f"Δ_S = {math.degrees(delta):+.1f}°, tan(Δ_S) = {math.tan(delta):+.3f} (huber)") in note
    assert math.tan(delta) > 0  # the CNN line is steeper, as seed 001 finds


def test_a_missing_cell_means_no_table_iv_mean(tmp_path: Path) -> None:
    lb, _ = _board(tmp_path / "subs", drop="flash")
    (sec,) = [s for s in holistic_sections(lb) if s.key == "3dcc-classification"]
    first = next(r for r in sec.rows if r.model_id == "clip-0000")
    assert first.cells[7].sort == "" and "5 of the six cells" in first.cells[7].title
    # a CNN line of 3 models is still a line at min_models 3
    assert any(n.startswith("severity 5: CNN slope") and "(3 models)" in n for n in sec.notes)


def test_metric_functions() -> None:
    cells = {(c, 5): 0.1 * (j + 1) for j, c in enumerate(SEED_CORRUPTIONS)}
    assert mean_3d_accuracy(cells) == pytest.approx(0.35)
    assert mean_3d_accuracy({**cells, ("fog_3d", 5): None}) is None
    with pytest.raises(ValueError, match=r"severity must be in 1\.\.5, got 6"):
        mean_3d_accuracy(cells, 6)
    deg, tan = slope_gap(2.0, 0.5)
    assert tan == pytest.approx((2.0 - 0.5) / (1 + 2.0 * 0.5))
    assert deg == pytest.approx(math.degrees(math.atan(2.0) - math.atan(0.5)))


def test_the_classification_card_names_the_seeds_six_corruptions() -> None:
    """The card's Deviations section says which 3DCC corruptions the seed's numbers use."""
    import yaml

    from vlmrobust.builders.classification.card import deviation_lines
    from vlmrobust.builders.classification.sources import VariantSource
    from vlmrobust.builders.classification.spec import parse_spec
    from vlmrobust.core.label_space import ClassEntry, LabelSpace

    path = Path(__file__).parents[3] / "benchmarks" / "classification.yaml"
    spec = parse_spec(yaml.safe_load(path.read_text()), path)
    space = LabelSpace("toy", (ClassEntry("tench", (), "n01440764", (0,)),
                               ClassEntry("goldfish", (), "n01443537", (1,))))
    lines = "\n".join(deviation_lines(spec, [VariantSource("3dcc-fog_3d-5", "3dcc", space, (),
                                                           "3dcc/fog_3d/5")]))
    assert "seed 001 evaluates six (Fig. 8: fog_3d, near_focus, z_motion_blur, flash, " \
           "xy_motion_blur, far_focus)" in lines and "mean accuracy at severity 5" in lines
