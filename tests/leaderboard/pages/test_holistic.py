"""The Holistic page: shape bias per model from the scores' shape_bias block,
ImageNet-X factor accuracies and factor-level ER (checked against scipy),
rows grouped by model-group metadata, model text escaped, damaged blocks
refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.pages.holistic.page import SECTIONS, holistic_sections
from vlmrobust.leaderboard.site.render import render_site
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

SPEC = BaselineSpec(version="t", n_bootstrap=50, min_models=2)
PAYLOAD = '<script>alert("x")</script>'
# model -> (overall ImageNet-X acc, pose acc, texture acc)
FACTORS = {"classifier-0000": (0.60, 0.55, 0.40), "classifier-0001": (0.70, 0.66, 0.50),
           "classifier-0002": (0.80, 0.78, 0.62), "clip-0003": (0.75, 0.74, 0.70),
           "vlm-0004": (0.65, 0.60, 0.59)}
SHAPE = {"clip-0003": (30, 10, 0.75), "classifier-0000": (8, 24, 0.25)}  # shape, texture, bias


def _cue_conflict(shape: int, texture: int) -> dict[str, Any]:
    return {"dataset": {"name": "cue-conflict", "version": "1.0.0", "fingerprint": "d" * 64},
            "has_logits": True, "reference_variant": None,
            "configs": {"cue-conflict": {"n": 48, "accuracy": (shape + 6) / 48}},
            "shape_bias": {"cue-conflict": {
                "n": 48, "n_conflict": 40, "shape_decisions": shape, "texture_decisions": texture,
                "shape_bias": shape / (shape + texture),
                "shape_bias_ci": [shape / (shape + texture) - 0.1, shape / (shape + texture) + 0.1],
                "shape_accuracy": shape / 48, "texture_accuracy": texture / 48}}}


def _submissions(root: Path, name: str | None = None) -> None:
    for i, (model, (overall, pose, texture)) in enumerate(FACTORS.items()):
        family = model.split("-")[0]
        meta, scores = synthetic_submission(i, family, name=name if i == 3 else None)
        cfg = scores["datasets"]["imagenet-mcq"]["configs"]["sample-photo-wordnet"]
        cfg["factors"] = {"annotated": {"n": 400, "accuracy": overall},
                          "pose": {"n": 120, "accuracy": pose},
                          "texture": {"n": 9, "accuracy": texture}}
        if model in SHAPE:
            shape, tex, _ = SHAPE[model]
            scores["datasets"]["cue-conflict"] = _cue_conflict(shape, tex)
        write_submission(root, meta, scores)


def test_page_shows_shape_bias_factors_and_factor_er(tmp_path: Path) -> None:
    _submissions(tmp_path / "subs")
    lb = aggregate(load_submissions(tmp_path / "subs"), SPEC)
    files = render_site(lb, code_version="t")
    page = files["holistic.html"].decode()
    assert 'href="holistic.html" aria-current="page"' in page
    assert 'href="holistic.html"' in files["index.html"].decode()
    sections = {s.key: s for s in holistic_sections(lb)}
    assert list(sections) == ["shape-bias", "factors-0", "factor-er-1"]
    # shape bias: the scores' numbers, one row per model with a cue-conflict run
    sb = sections["shape-bias"]
    assert sb.columns[:6] == ("Shape bias %", "95% CI", "Shape acc. %", "Texture acc. %",
                              "16-class acc. %", "Conflict stimuli")
    assert {r.model_id: [c.sort for c in r.cells[:6]] for r in sb.rows} == {
        m: [repr(b), repr(b - 0.1), repr(sh / 48), repr(tx / 48), repr((sh + 6) / 48), "40"]
        for m, (sh, tx, b) in SHAPE.items()}
    row = re.search(r'<tr data-model="clip-0003">(.*?)</tr>', page.split('id="factors-0"')[0], re.S)
    assert row is not None and ">75.0<" in row.group(1) and "vit · laion-2b (2B) · contrastive" in row.group(1)
    # factor accuracy columns carry the image counts
    assert sections["factors-0"].columns == ("all annotated (n=400)", "pose (n=120)",
                                             "texture (n=9)")
    # factor ER: a Huber-robust probit line over the reference models (classifiers on
    # imagenet-1k; seed 001 Fig. 1), as statsmodels' RLM fits it
    er = sections["factor-er-1"]
    for j, f in enumerate(("pose", "texture")):
        slope, intercept = _huber(1 + j)
        for r in er.rows:
            o, acc = FACTORS[r.model_id][0], FACTORS[r.model_id][1 + j]
            expected = acc - stats.norm.cdf(slope * stats.norm.ppf(o) + intercept)
            assert float(r.cells[j].sort) == pytest.approx(expected, abs=1e-6), (r.model_id, f)
    assert any("(huber) over 3 reference models (classifier-0000, classifier-0001, "
               "classifier-0002)" in n for n in er.notes)
    assert "Huber-robust regression, as seed 001 Fig. 1" in er.intro
    # each factor ER shows its bootstrap interval beside it (factor_er_ci), holding the ER
    for r in er.rows:
        for c in r.cells:
            lo, hi = re.fullmatch(r"\S+ \[(\S+) … (\S+)\]", c.text).groups()  # type: ignore[union-attr]
            assert float(lo.replace("−", "-")) <= round(float(c.sort) * 100, 1) <= float(hi.replace("−", "-"))
            assert c.title == "95% bootstrap interval over images and reference models"
    er_html = page.split('id="factor-er-1"')[1]
    assert "[" in er_html.split("</table>")[0] and "joint bootstrap (50 resamples)" in er_html
    # one probit chart per factor; the page passes the site check
    # each chart (every model's point) is a shared file the page shows (issue 37.2)
    srcs = re.findall(r'<img class="inline" src="(plots/holistic-\d+\.svg)"', page)
    assert len(er.charts) == 2 and len(srcs) >= 2
    assert any("pose: factor vs overall accuracy" in files[p].decode() for p in srcs)
    from vlmrobust.leaderboard.site.check import check_files
    from vlmrobust.leaderboard.site.render import site_assets

    script, style, csp = site_assets()
    check_files(files, scripts=[script], styles=[style], csp=csp)
    # grouped: stated groups sorted, the same group together
    groups = [r.group for r in er.rows]
    assert groups == sorted(groups)


def _huber(col: int) -> tuple[float, float]:
    sm = pytest.importorskip("statsmodels.api")
    base = [m for m in FACTORS if m.startswith("classifier")]
    x = stats.norm.ppf([FACTORS[m][0] for m in base])
    res = sm.RLM(stats.norm.ppf([FACTORS[m][col] for m in base]), sm.add_constant(x),
                 M=sm.robust.norms.HuberT()).fit()
    return float(res.params[1]), float(res.params[0])


def test_holistic_fit_least_squares_draws_the_least_squares_factor_line(tmp_path: Path) -> None:
    """baselines.yaml ``holistic_fit: least-squares``: scipy's linregress line, named so."""
    _submissions(tmp_path / "subs")
    spec = BaselineSpec(version="t", n_bootstrap=0, min_models=2, holistic_fit="least-squares")
    er = {s.key: s for s in holistic_sections(aggregate(load_submissions(tmp_path / "subs"),
                                                        spec))}["factor-er-1"]
    base = [m for m in FACTORS if m.startswith("classifier")]
    line = stats.linregress(stats.norm.ppf([FACTORS[m][0] for m in base]),
                            stats.norm.ppf([FACTORS[m][1] for m in base]))
    for r in er.rows:
        o, acc = FACTORS[r.model_id][0], FACTORS[r.model_id][1]
        want = acc - stats.norm.cdf(line.slope * stats.norm.ppf(o) + line.intercept)
        assert float(r.cells[0].sort) == pytest.approx(want, abs=1e-9)
    assert "least squares, not seed 001's robust regression" in er.intro
    assert any("(least-squares) over 3 reference models" in n for n in er.notes)


def test_model_text_is_escaped(tmp_path: Path) -> None:
    _submissions(tmp_path / "subs", name=PAYLOAD)
    lb = aggregate(load_submissions(tmp_path / "subs"), SPEC)
    page = render_site(lb, code_version="t")["holistic.html"].decode()
    assert PAYLOAD not in page and "&lt;script&gt;alert(&#34;x&#34;)" in page


def test_empty_page_and_registered_sections(tmp_path: Path) -> None:
    write_submission(tmp_path / "subs", *synthetic_submission(0, "classifier"))
    lb = aggregate(load_submissions(tmp_path / "subs"), SPEC)
    assert holistic_sections(lb) == []
    assert "No submission has a cue-conflict" in render_site(lb)["holistic.html"].decode()
    assert {"shape-bias", "imagenet-x"} <= set(SECTIONS)


def test_a_damaged_shape_bias_block_is_refused(tmp_path: Path) -> None:
    _submissions(tmp_path / "subs")
    path = tmp_path / "subs" / "clip-0003" / "scores.json"
    scores = json.loads(path.read_text())
    scores["datasets"]["cue-conflict"]["shape_bias"]["cue-conflict"]["shape_decisions"] = 45
    path.write_text(json.dumps(scores))
    with pytest.raises(LeaderboardInputError,
                       match=r"datasets\.cue-conflict\.shape_bias\.cue-conflict.*within the "
                             r"conflict stimuli") as exc:
        load_submissions(tmp_path / "subs")
    assert "\n" not in str(exc.value)
