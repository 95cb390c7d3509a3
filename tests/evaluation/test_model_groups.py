"""Model groups (issue 24.5): validated metadata fields, and the reference line
restricted to classifiers trained on ImageNet-1k (seed 000)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats
from scipy.special import ndtr, ndtri

from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.model_groups import GROUP_FIELDS, group_problems
from vlmrobust.evaluation.model_meta import ModelMeta, merge_model_meta
from vlmrobust.evaluation.schemas import check_schema
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.synthetic import write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec, BaselineSpecError, load_baselines

GOOD = {"architecture": "vit", "training_data": "laion-2b", "training_size": 2_000_000_000,
        "fine_tuned_on": "imagenet-1k", "loss": "contrastive"}
BAD = [("architecture", "transformer"), ("loss", "triplet"), ("training_size", 0),
       ("training_size", 10 ** 14), ("training_size", 1.5), ("training_size", True),
       ("training_data", "LAION-2B"), ("training_data", "a b"), ("fine_tuned_on", ""),
       ("training_data", 7), ("fine_tuned_on", "x" * 65)]


def test_good_groups_pass_model_meta_and_schema() -> None:
    meta = ModelMeta(model_id="m", name="M", family="clip", **GOOD)
    assert {k: getattr(meta, k) for k in GROUP_FIELDS} == GOOD
    check_schema({"model_id": "m", "name": "M", "family": "clip", **GOOD}, "submission-meta", "x")
    check_schema({"model": "m", "family": "clip", **GOOD,
                  "dataset": {"name": "d", "version": "1", "fingerprint": "a" * 64}},
                 "predictions-meta", "x")


@pytest.mark.parametrize(("key", "value"), BAD)
def test_bad_group_refused_by_meta_and_by_schema_alike(key: str, value: object) -> None:
    with pytest.raises(SubmissionError, match=f"model m: {key}") as exc:
        ModelMeta(model_id="m", name="M", family="clip", **{key: value})  # type: ignore[arg-type]
    assert "\n" not in str(exc.value)
    with pytest.raises(SubmissionError, match=key):
        check_schema({"model_id": "m", "name": "M", "family": "clip", key: value},
                     "submission-meta", "meta.yaml")
    assert group_problems({key: value})


def test_leaderboard_refuses_bad_group_naming_the_file(tmp_path: Path) -> None:
    write_submission(tmp_path, {"model_id": "m", "name": "M", "family": "classifier",
                                "loss": "hinge"}, {"schema_version": 1, "model_id": "m",
                                                   "datasets": {}})
    with pytest.raises(LeaderboardInputError, match=r"m/meta.yaml: .*loss 'hinge'"):
        load_submissions(tmp_path)


def test_merge_keeps_groups_and_reads_sizes_as_written() -> None:
    first = merge_model_meta("m", None, "d1", {"model": "m", "family": "clip"},
                             {"training_size": "400_000_000", "training_data": "wit-400m"})
    assert first.training_size == 400_000_000 and first.training_data == "wit-400m"
    later = merge_model_meta("m", first.to_dict(), "d2",
                             {"model": "m", "family": "clip", "loss": "contrastive"})
    assert (later.training_data, later.training_size, later.loss) == (
        "wit-400m", 400_000_000, "contrastive")
    with pytest.raises(SubmissionError, match="training_size"):
        merge_model_meta("m", None, "d1", {"model": "m", "family": "clip"},
                         {"training_size": "many"})


def _write(root: Path, model_id: str, family: str, x: float, y: float,
           training_data: str | None) -> None:
    meta = {"model_id": model_id, "name": model_id, "family": family}
    if training_data is not None:
        meta["training_data"] = training_data
    configs = {f"{v}-wordnet": {"n": 1000, "accuracy": a, "variant": v, "strategy": "wordnet"}
               for v, a in (("in-val", x), ("in-r", y))}
    write_submission(root, meta, {"schema_version": 1, "model_id": model_id, "datasets": {
        "imagenet-mcq": {"dataset": {"name": "imagenet-mcq"}, "has_logits": True,
                         "reference_variant": "in-val", "configs": configs}}})


def test_reference_line_excludes_classifiers_not_trained_on_imagenet_1k(tmp_path: Path) -> None:
    """Done-when: a classifier whose training_data is not imagenet-1k (or is
    unstated) is not on the reference line; it gets a line of its own group."""
    xs = np.array([0.5, 0.6, 0.7, 0.8])
    ys = ndtr(0.9 * ndtri(xs) - 0.8) + np.array([0.01, -0.01, 0.005, 0.0])
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        _write(tmp_path, f"in1k{i}", "classifier", float(x), float(y), "imagenet-1k")
    # far above the line: would move it a lot if it counted
    for i, x in enumerate((0.55, 0.65, 0.75)):
        _write(tmp_path, f"laion{i}", "classifier", x, x - 0.02, "laion-2b")
    _write(tmp_path, "unknown", "classifier", 0.6, 0.58, None)
    lb = aggregate(load_submissions(tmp_path), BaselineSpec(version="t", n_bootstrap=50))
    (ref,) = [f for f in lb.fits if f.kind == "reference"]
    assert ref.baselines == tuple(f"in1k{i}" for i in range(4))
    reg = stats.linregress(ndtri(xs), ndtri(ys))
    assert (ref.slope, ref.intercept) == (pytest.approx(reg.slope), pytest.approx(reg.intercept))
    groups = {f.label: f for f in lb.fits if f.kind == "group"}
    assert set(groups) == {"classifier · laion-2b", "classifier · training data unstated"}
    assert groups["classifier · laion-2b"].baselines == ("laion0", "laion1", "laion2")
    assert groups["classifier · laion-2b"].line is not None
    assert groups["classifier · training data unstated"].line is None  # one model: no line
    # every classifier is still measured against the reference line
    er = lb.er["laion1"][0].er
    assert er == pytest.approx(0.63 - ndtr(reg.slope * ndtri(0.65) + reg.intercept))
    assert er > 0.1
    # with the restriction off (baselines.yaml training_data: null) all eight count
    lb_all = aggregate(load_submissions(tmp_path),
                       BaselineSpec(version="t", n_bootstrap=0, reference_training_data=None))
    (ref_all,) = [f for f in lb_all.fits if f.kind == "reference"]
    assert len(ref_all.baselines) == 8 and not [f for f in lb_all.fits if f.kind == "group"]


def test_baselines_yaml_training_data(tmp_path: Path) -> None:
    spec = load_baselines()
    assert spec.reference_training_data == "imagenet-1k"
    assert spec.as_record()["reference"]["training_data"] == "imagenet-1k"  # type: ignore[index]
    assert "trained on imagenet-1k" in spec.reference_label
    p = tmp_path / "b.yaml"
    p.write_text(yaml.safe_dump({"version": "x", "reference": {"family": "classifier"}}))
    assert load_baselines(p).reference_training_data == "imagenet-1k"  # absent: the seed's rule
    p.write_text(yaml.safe_dump({"version": "x", "reference": {"training_data": None}}))
    assert load_baselines(p).reference_training_data is None
    p.write_text(yaml.safe_dump({"version": "x", "reference": {"training_data": "ImageNet 1k"}}))
    with pytest.raises(BaselineSpecError, match="not a data-set slug"):
        load_baselines(p)


def test_packaged_example_is_an_imagenet_1k_cnn() -> None:
    meta = yaml.safe_load((Path(__file__).parents[2] / "submissions" / "efficientnet-lite0"
                           / "meta.yaml").read_text())
    assert (meta["architecture"], meta["training_data"], meta["loss"]) == ("cnn", "imagenet-1k", "ce")


def test_efficientnet_lite_adapter_states_its_groups() -> None:
    from vlmrobust.models.registration import load_adapter

    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    groups = adapter.model_groups  # type: ignore[attr-defined]
    assert groups == {"architecture": "cnn", "training_data": "imagenet-1k",
                      "training_size": 1_281_167, "loss": "ce"}
    assert not group_problems(groups)
