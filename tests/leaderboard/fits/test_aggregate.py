"""Effective-robustness fits and overview rows, against closed forms and
independent implementations (scipy.stats.linregress, numpy.polyfit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import ndtr, ndtri

from vlmrobust.leaderboard.aggregate import aggregate, headline_er
from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.synthetic import write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec, BaselineSpecError, load_baselines
from vlmrobust.metrics.lines.effective_robustness import effective_robustness_ci

SPEC = BaselineSpec(version="t", n_bootstrap=400)


def _write(root: Path, model_id: str, family: str, accs: dict[str, float],
           strategy: str = "wordnet", ref: str = "in-val", n: int = 1000,
           prompt: str | None = None) -> None:
    configs = {f"{v}-{strategy}": {"n": n, "accuracy": a, "variant": v, "strategy": strategy}
               for v, a in accs.items()}
    meta = {"model_id": model_id, "name": model_id.upper(), "family": family}
    if family == "classifier":  # the reference line's models (seed 000)
        meta["training_data"] = "imagenet-1k"
    if prompt:
        meta["prompt_id"] = prompt
    write_submission(root, meta,
                     {"schema_version": 1, "model_id": model_id, "datasets": {"imagenet-mcq": {
                         "dataset": {"name": "imagenet-mcq"}, "has_logits": True,
                         "reference_variant": ref, "configs": configs}}})


def _on_line(x: float, a: float, b: float) -> float:
    return float(ndtr(a * ndtri(x) + b))


def _fits(lb: object, kind: str, label: str | None = None) -> list:  # type: ignore[type-arg]
    return [f for f in lb.fits  # type: ignore[attr-defined]
            if f.kind == kind and (label is None or f.label == label)]


def test_reference_line_from_classifiers_and_er_of_clip_and_vlm(tmp_path: Path) -> None:
    """Done-when: the reference line is fitted on synthetic classifier submissions of
    known accuracies; CLIP and VLM ER match a direct computation against it."""
    rng = np.random.default_rng(11)
    ref_x = np.array([0.45, 0.55, 0.62, 0.70, 0.78, 0.85])
    ref_y = np.clip(ndtr(0.9 * ndtri(ref_x) - 0.8) + rng.normal(0, 0.01, 6), 0.01, 0.99)
    for i, (x, y) in enumerate(zip(ref_x, ref_y, strict=True)):
        _write(tmp_path, f"cls{i}", "classifier", {"in-val": float(x), "in-r": float(y)})
    others = {"clip0": ("clip", 0.6, 0.55), "clip1": ("clip", 0.75, 0.7),
              "clip2": ("clip", 0.8, 0.72), "vlm0": ("vlm", 0.5, 0.5),
              "vlm1": ("vlm", 0.7, 0.66), "vlm2": ("vlm", 0.9, 0.8)}
    for m, (fam, x, y) in others.items():
        _write(tmp_path, m, fam, {"in-val": x, "in-r": y})
    lb = aggregate(load_submissions(tmp_path), SPEC)
    (ref,) = _fits(lb, "reference")
    reg = stats.linregress(ndtri(ref_x), ndtri(ref_y))
    assert ref.baselines == tuple(f"cls{i}" for i in range(6))
    assert ref.slope == pytest.approx(reg.slope, rel=1e-9)
    assert ref.intercept == pytest.approx(reg.intercept, rel=1e-9)
    assert ref.line is not None and ref.line.r2 == pytest.approx(reg.rvalue**2, rel=1e-9)
    assert len(ref.points) == 12  # every model of every family is on the chart
    for m, (_, x, y) in others.items():
        direct = y - ndtr(reg.slope * ndtri(x) + reg.intercept)
        (e,) = lb.er[m]
        assert e.er == pytest.approx(direct, abs=1e-12)
        assert e.ci is not None and e.ci[0] < e.er < e.ci[1]
    rows = {r.model_id: r for r in lb.rows}
    head = headline_er(lb, "vlm2")
    assert head["strategy"] == "wordnet" and head["value"] == pytest.approx(lb.er["vlm2"][0].er)
    assert rows["vlm2"].headline_er == head and rows["vlm2"].mean_er == head["value"]
    # Each family's own line is fitted too, on its own members.
    for fam in ("clip", "vlm"):
        (f,) = _fits(lb, "family", fam)
        xs = [others[m][1] for m in sorted(others) if others[m][0] == fam]
        ys = [others[m][2] for m in sorted(others) if others[m][0] == fam]
        r = stats.linregress(ndtri(xs), ndtri(ys))
        assert f.slope == pytest.approx(r.slope) and f.intercept == pytest.approx(r.intercept)
        assert f.line.n == 3 and f.line.r2 == pytest.approx(r.rvalue**2)
    (fc,) = _fits(lb, "family", "classifier")
    assert (fc.slope, fc.intercept) == (ref.slope, ref.intercept)
    assert fc.slope_ci is not None and fc.slope_ci[0] < fc.slope < fc.slope_ci[1]


def test_known_line_gives_known_er_and_listed_reference_models(tmp_path: Path) -> None:
    a, b = 0.8, -0.4
    refs = [0.45, 0.6, 0.72, 0.85]
    for i, x in enumerate(refs):
        _write(tmp_path, f"m{i}", "clip", {"in-val": x, "in-r": _on_line(x, a, b)})
    _write(tmp_path, "robust", "vlm", {"in-val": 0.7, "in-r": _on_line(0.7, a, b) + 0.05})
    spec = BaselineSpec(version="t", reference_models=("m0", "m1", "m2", "m3", "gone"),
                        n_bootstrap=300)
    lb = aggregate(load_submissions(tmp_path), spec)
    (f,) = _fits(lb, "reference")
    assert f.slope == pytest.approx(a, abs=1e-9) and f.intercept == pytest.approx(b, abs=1e-9)
    assert f.baselines == ("m0", "m1", "m2", "m3") and f.missing == ("gone",)
    er = {m: vals[0] for m, vals in lb.er.items()}
    assert er["robust"].er == pytest.approx(0.05, abs=1e-9)
    # A perfect line still has a CI: the questions are resampled too (never zero width).
    lo, hi = er["robust"].ci  # type: ignore[misc]
    assert lo < 0.05 < hi and hi - lo > 0.01
    assert next(r for r in lb.rows if r.model_id == "robust").mean_er == pytest.approx(0.05)


def _independent_joint_bootstrap(x: np.ndarray, y: np.ndarray, mx: float, my: float, n: int,
                                 n_boot: int, seed: int) -> tuple[float, float]:
    """Explicit per-question resampling of 0/1 correctness vectors (not the binomial
    shortcut; one resample per model and replicate, shared by its repeated picks) and
    of the baseline models, dropping resamples with < 3 distinct models."""
    rng = np.random.default_rng(seed)

    def vec(acc: float) -> np.ndarray:
        k = round(acc * n)
        return np.r_[np.ones(k), np.zeros(n - k)]

    bx, by = [vec(v) for v in x], [vec(v) for v in y]
    vx, vy = vec(mx), vec(my)
    out = []
    for _ in range(n_boot):
        pick = rng.integers(0, len(x), len(x))
        if len(set(pick.tolist())) < 3:
            continue
        xs = np.array([v[rng.integers(0, n, n)].mean() for v in bx])
        ys = np.array([v[rng.integers(0, n, n)].mean() for v in by])
        aa, bb = np.polyfit(ndtri(xs[pick]), ndtri(ys[pick]), 1)
        ex = vx[rng.integers(0, n, n)].mean()
        ey = vy[rng.integers(0, n, n)].mean()
        out.append(ey - ndtr(aa * ndtri(ex) + bb))
    lo, hi = np.quantile(out, [0.025, 0.975])
    return float(lo), float(hi)


def test_joint_ci_matches_an_independent_per_question_bootstrap(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n = 200
    ref = np.round(rng.uniform(0.3, 0.9, size=8) * n) / n
    shift = np.round(np.clip(ref - 0.2 + rng.normal(0, 0.05, size=8), 0.05, 0.95) * n) / n
    for i in range(8):
        _write(tmp_path, f"c{i}", "classifier", {"in-val": float(ref[i]),
                                                  "in-a": float(shift[i])}, n=n)
    _write(tmp_path, "v", "vlm", {"in-val": 0.6, "in-a": 0.5}, n=n)
    lb = aggregate(load_submissions(tmp_path), BaselineSpec(version="t", n_bootstrap=3000))
    (e,) = lb.er["v"]
    lo, hi = _independent_joint_bootstrap(ref, shift, 0.6, 0.5, n, 3000, 7)
    assert e.ci is not None
    # Monte-Carlo error of a 2.5% quantile of this skewed distribution is ~0.01.
    assert e.ci[0] == pytest.approx(lo, abs=0.02) and e.ci[1] == pytest.approx(hi, abs=0.02)
    # Wider than the model-only bootstrap of the metrics package (questions add variance).
    mlo, mhi = effective_robustness_ci(ref, shift, 0.6, 0.5, n_resamples=2000, seed=1)
    assert e.ci[1] - e.ci[0] > (mhi - mlo) * 1.2


def test_er_against_reference_not_own_family(tmp_path: Path) -> None:
    """A VLM family sitting above the classifier line gets positive ER, although it
    lies on its own family line (ER vs own line would be ~0 by construction)."""
    for i, x in enumerate((0.5, 0.6, 0.7, 0.8)):
        _write(tmp_path, f"c{i}", "classifier", {"in-val": x, "in-r": _on_line(x, 1.0, -0.8)})
        _write(tmp_path, f"v{i}", "vlm", {"in-val": x, "in-r": _on_line(x, 1.0, -0.2)})
    lb = aggregate(load_submissions(tmp_path), SPEC)
    for i, x in enumerate((0.5, 0.6, 0.7, 0.8)):
        expected = _on_line(x, 1.0, -0.2) - _on_line(x, 1.0, -0.8)
        assert lb.er[f"v{i}"][0].er == pytest.approx(expected, abs=1e-9) and expected > 0.1
    (fv,) = _fits(lb, "family", "vlm")
    assert fv.intercept == pytest.approx(-0.2, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-2, 2), st.floats(-2, 2), st.integers(0, 4)),
                min_size=3, max_size=12))
def test_weighted_least_squares_equals_fit_on_repeated_points(
        pts: list[tuple[float, float, int]]) -> None:
    x = np.array([p[0] for p in pts])
    y = np.array([p[1] for p in pts])
    w = np.array([p[2] for p in pts])
    xs, ys = np.repeat(x, w), np.repeat(y, w)
    a, b = fit.least_squares(x, y, w[None, :].astype(float))
    if xs.size < 2 or np.ptp(xs) == 0:
        assert np.isnan(a[0]) and np.isnan(b[0])
        return
    if np.ptp(xs) < 1e-3:
        return  # ill-conditioned: polyfit itself is unreliable there
    ref_a, ref_b = np.polyfit(xs, ys, 1)
    assert a[0] == pytest.approx(ref_a, rel=1e-6, abs=1e-6)
    assert b[0] == pytest.approx(ref_b, rel=1e-6, abs=1e-6)


def test_bootstrap_weights_are_multiplicities() -> None:
    w = fit.bootstrap_weights(5, 100, np.random.default_rng(0))
    assert w.shape == (100, 5)
    assert (w.sum(axis=1) == 5).all() and (w >= 0).all()
    assert len({tuple(r) for r in w}) > 50


def test_too_few_reference_models_is_no_line(tmp_path: Path) -> None:
    _write(tmp_path, "c1", "classifier", {"in-val": 0.7, "in-r": 0.3})
    _write(tmp_path, "c2", "classifier", {"in-val": 0.8, "in-r": 0.4})
    _write(tmp_path, "o1", "other", {"in-val": 0.6, "in-r": 0.2})
    lb = aggregate(load_submissions(tmp_path), SPEC)
    (ref,) = _fits(lb, "reference")
    assert ref.line is None and "no line: 2 reference model(s)" in (ref.reason or "")
    assert "at least 3" in (ref.reason or "")
    assert lb.er["o1"][0].er is None and lb.er["o1"][0].reason == ref.reason
    assert all(r.mean_er is None and r.headline_er["value"] is None for r in lb.rows)
    assert headline_er(lb, "o1")["reason"] == ref.reason


def test_identical_reference_accuracies_have_no_line(tmp_path: Path) -> None:
    for i, y in enumerate((0.3, 0.4, 0.5)):
        _write(tmp_path, f"c{i}", "classifier", {"in-val": 0.7, "in-r": y})
    (f,) = _fits(aggregate(load_submissions(tmp_path), SPEC), "reference")
    assert f.line is None and "share one in-val accuracy" in (f.reason or "")


def test_mean_er_over_shifts_and_missing_variant(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for i in range(6):
        x = 0.4 + 0.08 * i
        accs = {"in-val": x, "in-r": float(np.clip(x - 0.2 + rng.normal(0, 0.03), 0, 1)),
                "in-a": float(np.clip(x - 0.35 + rng.normal(0, 0.03), 0, 1))}
        if i == 5:
            del accs["in-a"]  # only one shift for this model
        _write(tmp_path, f"m{i}", "classifier", accs)
    lb = aggregate(load_submissions(tmp_path), SPEC)
    fits = {f.shift: f for f in _fits(lb, "reference")}
    assert len(fits["in-r"].baselines) == 6 and len(fits["in-a"].baselines) == 5
    rows = {r.model_id: r for r in lb.rows}
    for m, vals in lb.er.items():
        assert rows[m].mean_er == pytest.approx(np.mean([v.er for v in vals]))
        ci = rows[m].mean_er_ci
        assert ci is not None and ci[0] <= rows[m].mean_er <= ci[1]  # type: ignore[operator]
        assert rows[m].headline_er["n_shifts"] == len(vals)
    assert lb.variants == ("in-val", "in-a", "in-r")  # reference first


def test_headline_is_wordnet_and_strategies_fit_separately(tmp_path: Path) -> None:
    import json
    for i, x in enumerate((0.5, 0.7, 0.8, 0.9)):
        for stg, drop in (("random", 0.1), ("wordnet", 0.3)):
            _write(tmp_path / stg, f"m{i}", "classifier",
                   {"in-val": x - drop / 2, "in-r": x - drop - 0.01 * i * i}, strategy=stg)
    root = tmp_path / "all"
    for i in range(4):
        a = json.loads((tmp_path / "random" / f"m{i}" / "scores.json").read_text())
        v = json.loads((tmp_path / "wordnet" / f"m{i}" / "scores.json").read_text())
        a["datasets"]["imagenet-mcq"]["configs"].update(v["datasets"]["imagenet-mcq"]["configs"])
        write_submission(root, {"model_id": f"m{i}", "name": f"m{i}", "family": "classifier",
                                "training_data": "imagenet-1k"}, a)
    lb = aggregate(load_submissions(root), SPEC)
    assert sorted(f.strategy for f in _fits(lb, "reference")) == ["random", "wordnet"]
    assert lb.strategy == "wordnet" == lb.headline_strategy
    assert lb.rows[0].imagenet["in-val"] == pytest.approx(0.5 - 0.15)
    wn = [e.er for e in lb.er["m3"] if e.strategy == "wordnet"]
    assert headline_er(lb, "m3")["value"] == pytest.approx(wn[0])
    assert {m.strategy for m in lb.mean_er["m3"]} == {"random", "wordnet"}


def test_prompt_lines_when_a_family_ran_several_prompts(tmp_path: Path) -> None:
    for i, x in enumerate((0.5, 0.6, 0.7)):
        _write(tmp_path, f"c{i}", "classifier", {"in-val": x, "in-r": _on_line(x, 1.0, -0.8)})
        for p, b in (("a-photo-of", -0.3), ("what-type", -0.1)):
            _write(tmp_path, f"v{i}-{p}", "vlm", {"in-val": x, "in-r": _on_line(x, 0.9, b)},
                   prompt=p)
    lb = aggregate(load_submissions(tmp_path), SPEC)
    prompts = {f.label: f for f in _fits(lb, "prompt")}
    assert set(prompts) == {"vlm · a-photo-of", "vlm · what-type"}
    assert prompts["vlm · what-type"].intercept == pytest.approx(-0.1, abs=1e-9)
    assert prompts["vlm · a-photo-of"].slope == pytest.approx(0.9, abs=1e-9)
    assert not _fits(lb, "prompt", "classifier · unspecified")


def test_logit_transform_and_determinism(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    for i in range(5):
        x = float(rng.uniform(0.3, 0.9))
        _write(tmp_path, f"m{i}", "classifier", {"in-val": x, "in-r": x * 0.6})
    subs = load_submissions(tmp_path)
    spec = BaselineSpec(version="t", transform="logit", n_bootstrap=200)
    lb1, lb2 = aggregate(subs, spec), aggregate(subs, spec)
    (f,) = _fits(lb1, "reference")
    x = np.array([s.datasets["imagenet-mcq"].configs[0].accuracy for s in subs])
    y = np.array([s.datasets["imagenet-mcq"].configs[1].accuracy for s in subs])
    from scipy.special import logit
    ref_a, ref_b = np.polyfit(logit(x), logit(y), 1)
    assert f.transform == "logit"
    assert f.slope == pytest.approx(ref_a) and f.intercept == pytest.approx(ref_b)
    assert lb1.er == lb2.er and lb1.rows == lb2.rows and lb1.fits == lb2.fits


def test_baselines_yaml(tmp_path: Path) -> None:
    spec = load_baselines()
    assert spec.transform == "probit" and spec.reference_family == "classifier"
    assert spec.headline_strategy == "wordnet" and spec.min_models == 3
    assert spec.reference_ids({"b": "classifier", "a": "classifier", "c": "vlm"},
                              {"a": "imagenet-1k", "b": "imagenet-1k", "c": "imagenet-1k"}) == ["a", "b"]
    listed = BaselineSpec(version="x", reference_models=("z", "a"))
    assert listed.reference_ids({"a": "vlm"}) == ["a", "z"]
    bad = tmp_path / "b.yaml"
    bad.write_text("version: 2\ntransform: cubic\n")
    with pytest.raises(BaselineSpecError, match="transform must be one of"):
        load_baselines(bad)
    bad.write_text("transform: probit\n")
    with pytest.raises(BaselineSpecError, match="'version'"):
        load_baselines(bad)
    bad.write_text("version: 1\nreference: {family: robots}\n")
    with pytest.raises(BaselineSpecError, match="unknown reference family"):
        load_baselines(bad)
    bad.write_text("version: 1\nfamilies: {vlm: []}\n")
    with pytest.raises(BaselineSpecError, match=r"'families'.*is gone"):
        load_baselines(bad)
    bad.write_text("version: 1\nmin_models: 1\n")
    with pytest.raises(BaselineSpecError, match="min_models"):
        load_baselines(bad)


def test_two_reference_models_give_a_line_but_no_interval(tmp_path: Path) -> None:
    _write(tmp_path, "a", "classifier", {"in-val": 0.6, "in-r": 0.3})
    _write(tmp_path, "b", "classifier", {"in-val": 0.8, "in-r": 0.5})
    lb = aggregate(load_submissions(tmp_path), BaselineSpec(version="t", min_models=2,
                                                            n_bootstrap=200))
    (f,) = _fits(lb, "reference")
    assert f.line is not None and f.line.n == 2
    assert f.slope_ci is None and "not estimable" in (f.ci_reason or "")
    for vals in lb.er.values():
        for v in vals:
            assert v.er == pytest.approx(0.0, abs=1e-12) and v.ci is None
            assert "not estimable: 0 of 200 resamples" in (v.ci_reason or "")
    assert all(r.mean_er_ci is None and r.headline_er["ci"] is None for r in lb.rows)
    assert all("not estimable" in (r.headline_er["reason"] or "") for r in lb.rows)


def test_bootstrap_off_says_so(tmp_path: Path) -> None:
    for i, x in enumerate((0.5, 0.6, 0.7)):
        _write(tmp_path, f"c{i}", "classifier", {"in-val": x, "in-r": x - 0.2 - 0.01 * i})
    lb = aggregate(load_submissions(tmp_path), BaselineSpec(version="t", n_bootstrap=0))
    assert lb.er["c0"][0].ci is None and "bootstrap is off" in (lb.er["c0"][0].ci_reason or "")


def test_resamples_need_three_distinct_models() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([0.0, 1.0, 2.5, 2.0])
    w = np.array([[2.0, 2.0, 0.0, 0.0], [1.0, 1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    a, _ = fit.least_squares(x, y, w, min_points=3)
    assert np.isnan(a[0]) and np.isfinite(a[1:]).all()
    assert a[2] == pytest.approx(np.polyfit(x, y, 1)[0])
