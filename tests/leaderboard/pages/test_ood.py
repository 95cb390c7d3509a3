"""The Holistic page's OOD section: submissions of an ood dataset are re-scored
and their AUROC / FPR@95 / class-mean AUROC shown beside ID accuracy, with the
numbers the scorer gives; a damaged ood block is refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.ood import dataset_ids, write_logits, write_ood
from tests.fixtures.score import write_meta
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.submission import LeaderboardInputError


def _submit(tmp_path: Path) -> tuple[Path, Path, dict[str, dict[str, object]]]:
    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    subs = tmp_path / "subs"
    sections = {}
    for i, (model, family, extra) in enumerate((("toy-classifier", "classifier", {}),
                                                ("toy-clip", "clip", {"logit_scale": 100.0}))):
        rng = np.random.default_rng(i)
        z = rng.uniform(-0.3, 0.4, size=(len(ids), 4)) * (100.0 if family == "clip" else 8.0)
        preds = write_logits(tmp_path / f"{model}.parquet", ids, z)
        write_meta(preds, ds, model=model, family=family, **extra)
        scores = add_submission(subs, model, ds, preds)
        sections[model] = scores["datasets"]["ood"]["ood"]
    return ds, subs, sections


def test_holistic_page_shows_rescored_ood_numbers(tmp_path: Path) -> None:
    ds, subs, sections = _submit(tmp_path)
    build_site(subs, tmp_path / "site", datasets=[ds])
    site = tmp_path / "site"
    page = (site / "holistic.html").read_text()
    assert 'id="ood-ood"' in page and "ninco class-mean AUROC %" in page
    for model, block in sections.items():
        row = re.search(rf'<tr data-model="{model}">(.*?)</tr>', page, re.S)
        assert row is not None
        values = re.findall(r'data-v="([^"]*)"', row.group(1))[1:]  # after the name cell
        want = [block["id_accuracy"]]
        for s in ("textures", "ninco"):  # seed 001's order
            want += [block["sets"][s]["auroc"], block["sets"][s]["fpr95"]]
            if s == "ninco":
                want.append(block["sets"][s]["class_mean_auroc"])
        want += [block["mean_auroc"], block["mean_fpr95"]]
        assert [float(v) for v in values] == pytest.approx(want, abs=1e-12), model
        # each set's cells carry their own interval on hover (AUROC, FPR@95, class-mean)
        titles = re.findall(r'<td[^>]*title="([^"]*)"', row.group(1))
        for s in ("textures", "ninco"):
            for key in ("auroc_ci", "fpr95_ci") + (("class_mean_auroc_ci",) if s == "ninco" else ()):
                lo, hi = block["sets"][s][key]
                assert any(f"95% CI {100 * lo:.1f} … {100 * hi:.1f}" in t for t in titles), (model, s, key)
    assert sections["toy-clip"]["score"] == "mcm" and "MCM; 7 OOD rows vs 12 ID" in page
    # seed 001 Figs. 3-4: AUROC, FPR@95 (and NINCO's class-mean AUROC) against ID accuracy
    # each chart draws every model: a shared file the page shows (issue 37.2)
    section = page.split('id="ood-ood"')[1]
    srcs = re.findall(r'<img class="inline" src="([^"]+)"', section)
    ood_part = "".join((site / src).read_text() for src in srcs)
    assert len(srcs) == 5 and section.count("<svg") == 0
    assert "ninco: class-mean AUROC vs ID accuracy" in section  # as the picture's alt text
    assert "textures: FPR@95 vs ID accuracy" in ood_part and "(probit scale)" in ood_part
    b = sections["toy-clip"]
    assert (f'ID (ImageNet val, top-1) {100 * b["id_accuracy"]:.1f}%, textures '
            f'{100 * b["sets"]["textures"]["auroc"]:.1f}% (clip · training data unstated)</title>'
            in ood_part)
    assert sections["toy-classifier"]["score"] == "msp"


def test_ood_charts_are_probit_with_each_groups_huber_line(tmp_path: Path) -> None:
    """Seed 001 Fig. 3: probit axes and, per group of at least min_models models, a
    robust line, here four zero-shot CLIP on laion-2b: statsmodels' RLM(HuberT) on
    (Φ⁻¹(ID accuracy), Φ⁻¹(AUROC)); the one classifier has no line."""
    sm = pytest.importorskip("statsmodels.api")
    from scipy import stats

    from vlmrobust.leaderboard.load import load_submissions
    from vlmrobust.leaderboard.pages.holistic.ood import ood_chart
    from vlmrobust.leaderboard.trust.baselines import BaselineSpec

    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    subs = tmp_path / "subs"
    for i in range(5):
        family = "classifier" if i == 4 else "clip"
        z = np.random.default_rng(10 + i).uniform(-0.3, 0.4, size=(len(ids), 4)) * 100.0
        for j in range(12):  # the ID rows (labels j % 4): accuracy and separation grow with i
            z[j, j % 4] += 12.0 * (i + 1) * (j % (5 - i) != 0)
        preds = write_logits(tmp_path / f"m{i}.parquet", ids, z)
        write_meta(preds, ds, model=f"m{i}", family=family,
                   **({"logit_scale": 100.0, "training_data": "laion-2b"} if family == "clip"
                      else {}))
        add_submission(subs, f"m{i}", ds, preds)
    runs = [(s, s.datasets["ood"].ood) for s in load_submissions(subs)]
    spec = BaselineSpec(version="t", min_models=3)
    chart = str(ood_chart(runs, "ninco", "auroc", spec))  # type: ignore[arg-type]
    clip = [o for s, o in runs if s.meta.family == "clip"]
    x = stats.norm.ppf([o.id_accuracy for o in clip])  # type: ignore[misc]
    y = stats.norm.ppf([o.sets["ninco"].auroc for o in clip])  # type: ignore[misc]
    res = sm.RLM(y, sm.add_constant(x), M=sm.robust.norms.HuberT()).fit()
    a, b = float(res.params[1]), float(res.params[0])
    sign = "+" if b >= 0 else "−"
    assert f"clip · laion-2b (huber): probit(y) = {a:.3f}·probit(x) {sign} {abs(b):.3f}" in chart
    assert chart.count('class="fit') == 1 and "y = x" not in chart  # no line for 1 classifier
    assert ood_chart(runs, "absent-set", "auroc", spec) is None


def test_a_damaged_ood_block_is_refused(tmp_path: Path) -> None:
    from vlmrobust.leaderboard.load import load_submissions

    _, subs, _ = _submit(tmp_path)
    path = subs / "toy-clip" / "scores.json"
    data = json.loads(path.read_text())
    data["datasets"]["ood"]["ood"]["sets"]["ninco"]["auroc_ci"] = [0.9, 0.1]
    path.write_text(json.dumps(data))
    with pytest.raises(LeaderboardInputError, match=r"sets\.ninco\.auroc_ci: \[0\.9, 0\.1\] is not an interval"):
        load_submissions(subs)
