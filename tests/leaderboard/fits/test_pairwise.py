"""Paired tests between adjacent models (issue 22, items 7 and 12): McNemar equals
statsmodels', the t-test scipy's ttest_rel, the bootstraps resample the shared
questions (source questions for Bench-C), and identical models tie."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from tests.fixtures.score import write_bench_c, write_mcq
from tests.fixtures.submission import predictions_for
from vlmrobust.core.datadir import config_names, read_table
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.fits.pairwise import ALPHA, PairTest, joint_accuracy_replicates
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.verify import load_verified_submissions
from vlmrobust.metrics.paired import mcnemar_exact, paired_t

SPEC = BaselineSpec(version="t", n_bootstrap=100, headline_strategy="random", min_models=2)


def _table(a: np.ndarray, b: np.ndarray) -> list[list[int]]:
    return [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]


@pytest.mark.parametrize("seed", range(6))
def test_mcnemar_equals_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    a = rng.random(n) < rng.uniform(0.2, 0.9)
    b = np.where(rng.random(n) < 0.7, a, rng.random(n) < 0.5)
    ours = mcnemar_exact(a, b)
    ref = mcnemar(_table(a, b), exact=True)
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-12, abs=1e-15)
    assert (ours.only_a, ours.only_b) == (_table(a, b)[0][1], _table(a, b)[1][0])


@pytest.mark.parametrize("seed", range(4))
def test_paired_t_equals_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=30)
    y = x + rng.normal(0.2, 1.0, size=30)
    ours, ref = paired_t(x, y), stats.ttest_rel(x, y)
    assert ours.statistic == pytest.approx(float(ref.statistic), rel=1e-12)
    assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-12)
    assert ours.df == 29


def test_joint_replicates_are_a_paired_bootstrap() -> None:
    """The multinomial draw has the index bootstrap's distribution: mean and sd
    of the difference against the closed form and an index-resampling loop."""
    rng = np.random.default_rng(1)
    a = rng.random(500) < 0.7
    b = np.where(rng.random(500) < 0.6, a, rng.random(500) < 0.5)
    acc_a, acc_b = joint_accuracy_replicates(a, b, seed=3)
    d = acc_a - acc_b
    p10, p01 = float((a & ~b).mean()), float((~a & b).mean())
    sd = np.sqrt((p10 + p01 - (p10 - p01) ** 2) / a.size)
    assert d.mean() == pytest.approx(p10 - p01, abs=3 * sd / np.sqrt(d.size))
    assert d.std() == pytest.approx(sd, rel=0.1)
    idx = np.random.default_rng(4).integers(0, a.size, size=(1000, a.size))
    loop = a[idx].mean(axis=1) - b[idx].mean(axis=1)
    assert d.std() == pytest.approx(loop.std(), rel=0.12)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Leaderboard, list[Path], Path]:
    tmp = tmp_path_factory.mktemp("pw")
    datasets = [write_mcq(tmp / "datasets" / "imagenet-mcq", n=80),
                write_bench_c(tmp / "datasets" / "bench-c", n_questions=30)]
    subs = tmp / "submissions"
    skills = {"strong": 3.0, "weak": 0.2, "same-a": 1.0}
    for i, (mid, skill) in enumerate(skills.items()):
        for j, ds in enumerate(datasets):
            p = predictions_for(ds, tmp / "preds" / f"{mid}-{j}.parquet", skill, 10 * i + j,
                                model=mid, family=("classifier", "classifier", "vlm")[i])
            add_submission(subs, mid, ds, p)
    # "same-b": the same answers as "same-a" under another model name
    for j, ds in enumerate(datasets):
        src = tmp / "preds" / f"same-a-{j}.parquet"
        t = pq.read_table(src)
        meta = dict(t.schema.metadata)
        meta[b"vlmrobust.meta"] = meta[b"vlmrobust.meta"].replace(b'"same-a"', b'"same-b"')
        dst = tmp / "preds" / f"same-b-{j}.parquet"
        pq.write_table(t.replace_schema_metadata(meta), dst)
        add_submission(subs, "same-b", ds, dst)
    lb = aggregate(load_verified_submissions(subs, datasets=datasets), SPEC)
    return lb, datasets, subs


def _correct(subs: Path, model: str, ds: Path, configs: list[str]) -> dict[str, bool]:
    """Independent: argmax of the stored logits against the dataset's answers."""
    answers: dict[str, int] = {}
    for c in config_names(ds):
        if c in configs:
            t = read_table(ds, c, columns=["id", "answer"]).to_pydict()
            answers.update(zip(t["id"], t["answer"], strict=True))
    pred = pq.read_table(subs / model / ds.name / "predictions.parquet").to_pydict()
    return {i: int(np.argmax(z)) == answers[i] for i, z in zip(pred["id"], pred["logits"],
                                                               strict=True) if i in answers}


def _tests(lb: Leaderboard, column: str) -> list[PairTest]:
    return [t for t in lb.pairwise if t.column == column]


def test_accuracy_columns_use_mcnemar_on_shared_questions(
        board: tuple[Leaderboard, list[Path], Path]) -> None:
    lb, (mcq, _), subs = board
    for variant in lb.variants:
        tests = _tests(lb, f"imagenet-mcq:{variant}")
        order = sorted(lb.rows, key=lambda r: (-(r.imagenet[variant] or 0), r.model_id))
        assert [(t.higher, t.lower) for t in tests] == [
            (a.model_id, b.model_id) for a, b in itertools.pairwise(order)]
        configs = [c for c in config_names(mcq) if c.startswith(variant)]
        for t in tests:
            ca, cb = _correct(subs, t.higher, mcq, configs), _correct(subs, t.lower, mcq, configs)
            ids = sorted(ca)
            a = np.array([ca[i] for i in ids])
            b = np.array([cb[i] for i in ids])
            assert t.n_shared == len(ids) == 80
            assert t.p_value == pytest.approx(float(mcnemar(_table(a, b), exact=True).pvalue),
                                              rel=1e-12)
            assert t.difference == pytest.approx(a.mean() - b.mean(), abs=1e-12)
            assert t.tie == (t.p_value >= ALPHA)
            if {t.higher, t.lower} == {"same-a", "same-b"}:
                assert t.p_value == 1.0 and t.tie and t.difference == 0.0
            if {t.higher, t.lower} == {"strong", "weak"}:
                assert not t.tie


def test_bench_c_columns_bootstrap_source_questions(
        board: tuple[Leaderboard, list[Path], Path]) -> None:
    lb, _, _ = board
    by_id = {s.model_id: s for s in lb.submissions}
    for metric in ("acc", "delta_acc", "ras"):
        tests = _tests(lb, f"bench-c:{metric}")
        assert len(tests) == 3
        for t in tests:
            agg = {m: by_id[m].datasets["bench-c"].bench_c.aggregate[metric]
                   for m in (t.higher, t.lower)}
            # every pair shared: the difference is the difference of the aggregates
            assert t.difference == pytest.approx(agg[t.higher] - agg[t.lower], abs=1e-12)
            assert t.n_shared == 30 and "source questions" in t.test
            assert t.ci is None or t.ci[0] <= t.difference <= t.ci[1]
            if {t.higher, t.lower} == {"same-a", "same-b"}:
                assert t.tie and t.p_value == 1.0


def test_er_and_download_records(board: tuple[Leaderboard, list[Path], Path]) -> None:
    lb, _, _ = board
    tests = _tests(lb, "er")
    assert tests and all(t.test.startswith("paired bootstrap of the ER") for t in tests)
    mean = {r.model_id: r.mean_er for r in lb.rows}
    for t in tests:
        if t.difference is not None:
            assert t.difference == pytest.approx(mean[t.higher] - mean[t.lower], abs=1e-9)
    rec = tests[0].as_record()
    assert set(rec) >= {"column", "higher", "lower", "p_value", "tie", "test", "n_shared"}


def test_moved_copy_is_the_only_difference(board: tuple[Leaderboard, list[Path], Path],
                                           tmp_path: Path) -> None:
    """Re-running on a copy of the folder gives the same tests (seeded per pair)."""
    lb, datasets, subs = board
    copy = tmp_path / "subs"
    shutil.copytree(subs, copy)
    again = aggregate(load_verified_submissions(copy, datasets=datasets), SPEC)
    assert [t.as_record() for t in again.pairwise] == [t.as_record() for t in lb.pairwise]


def test_site_shows_ties_intervals_warnings_and_downloads(
        board: tuple[Leaderboard, list[Path], Path], tmp_path: Path) -> None:
    import csv
    import io
    import json
    import re

    from vlmrobust.leaderboard.site.downloads import as_records
    from vlmrobust.leaderboard.site.publish import build_site
    from vlmrobust.leaderboard.trust.reference_runs import record_reference_runs

    _, datasets, subs = board
    spec_file = tmp_path / "baselines.yaml"
    spec_file.write_text("version: t\nmin_models: 2\nheadline_strategy: random\n"
                         "bootstrap: {n: 100}\n")
    record = record_reference_runs(tmp_path / "runs.yaml", subs, ["strong", "weak"])
    index = build_site(subs, tmp_path / "site", datasets=datasets, baselines=spec_file,
                       reference_runs=record)
    site = index.parent
    html = index.read_text()
    rows = dict(re.findall(r'<tr data-model="([^"]+)"[^>]*>(.*?)</tr>', html, re.S))
    # identical answers: the second of the two shares the first's rank, marked "="
    same = [rows["same-a"], rows["same-b"]]
    rank = [re.search(r"<td[^>]*>(\d+)", r).group(1) for r in same]  # type: ignore[union-attr]
    assert rank[0] == rank[1] and '<span class="tie">=</span>' in rows["same-b"]
    assert "first of its rank group" in rows["same-b"]
    assert "within noise" in html and "McNemar exact test" in html
    assert "95% interval" in html
    # two reference models (< 5): every ER carries the weak-line warning
    assert '<span class="warn"' in rows["strong"] and "only 2 models" in html
    assert "⚠" in (site / "robustness.html").read_text()
    table = list(csv.DictReader(io.StringIO((site / "pairwise.csv").read_text())))
    lb_json = json.loads((site / "leaderboard.json").read_text())
    assert len(table) == len(lb_json["pairwise"]["rows"]) > 0
    assert {r["column"] for r in table} >= {"er", "bench-c:ras", "imagenet-mcq:sample-photo"}
    row = next(r for r in as_records(lb_json) if r["model_id"] == "strong")
    assert row["bench_c_corruption_effect"]["acc"]["all"]["df"] == 29
    assert set(row["bench_c_sensitivity"]) >= {"e_abs_z_ras", "e_abs_z_delta_acc", "t", "df", "p"}
    assert row["bench-c:kappa_weighted:acc:ci_low"] <= row["bench-c:kappa_weighted:acc"]
    model_page = (site / "models" / "strong.html").read_text()
    assert "Sensitivity analysis" in model_page and "Accuracy gains" in model_page
    assert "Sensitivity analysis and accuracy gains" in (site / "bench-c.html").read_text()
