"""`vlmrobust compare MODEL_A MODEL_B --dataset D --details DIR` (issue 37 item 1):
read from the details dataset `leaderboard publish` wrote, the disagreement
counts equal those of the submitted rows, McNemar's p equals scipy's exact
binomial test, and on Bench-C the paired tests are the site's own (the same
numbers as leaderboard.json's ``pairwise``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from tests.fixtures.submission import real_submissions
from vlmrobust.cli.main import main
from vlmrobust.leaderboard.fits.compare import compare_details
from vlmrobust.leaderboard.site.downloads import as_records
from vlmrobust.leaderboard.site.publish import publish_site


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    subs, datasets = real_submissions(tmp, 2)
    publish_site(subs, tmp / "site", datasets=datasets)
    return subs, tmp / "site", tmp / "details"


def _rows(subs: Path, model: str, dataset: str) -> dict[str, bool]:
    lines = (subs / model / dataset / "rows.jsonl").read_text().splitlines()
    return {r["id"]: r["correct"] for r in map(json.loads, lines)}


def test_compare_prints_the_disagreement_and_mcnemar(published: tuple[Path, Path, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    subs, _, details = published
    rc = main(["compare", "model-0", "model-1", "--dataset", "imagenet-mcq", "--details",
               str(details)])
    out = capsys.readouterr().out
    assert rc == 0, out
    a, b = _rows(subs, "model-0", "imagenet-mcq"), _rows(subs, "model-1", "imagenet-mcq")
    only_a = sorted(i for i in a if a[i] and not b[i])
    only_b = sorted(i for i in a if b[i] and not a[i])
    both = sum(a[i] and b[i] for i in a)
    assert only_b, "the fixture's model-1 is the stronger one"
    assert (f"{len(a)} shared rows; both right {both}, both wrong "
            f"{len(a) - both - len(only_a) - len(only_b)}, only model-0 right {len(only_a)}, "
            f"only model-1 right {len(only_b)}") in out
    assert only_b[0] in out.split("only model-1 right: ")[1].splitlines()[0]
    p = stats.binomtest(len(only_a), len(only_a) + len(only_b), 0.5).pvalue
    line = next(x for x in out.splitlines() if "imagenet-mcq:all configs" in x)
    assert f"p = {p:.3g} (McNemar exact test, n = {len(a)})" in line
    diff = (sum(a.values()) - sum(b.values())) / len(a)
    assert f"Δ = {diff:+.4g}" in line


def test_bench_c_tests_are_the_sites(published: tuple[Path, Path, Path]) -> None:
    _, site, details = published
    board = json.loads((site / "leaderboard.json").read_text())
    site_tests = {t["column"]: t for t in as_records(board["pairwise"]) if t["column"].startswith("bench-c:")}
    assert set(site_tests) == {"bench-c:acc", "bench-c:delta_acc", "bench-c:ras"}
    hi, lo = site_tests["bench-c:ras"]["higher"], site_tests["bench-c:ras"]["lower"]
    mine = {t.column: t for t in compare_details(details, hi, lo, "bench-c").tests}
    same = [c for c, t in site_tests.items() if (t["higher"], t["lower"]) == (hi, lo)]
    assert "bench-c:ras" in same
    for column in same:
        t, theirs = mine[column], site_tests[column]
        assert t.p_value == theirs["p_value"] and t.difference == pytest.approx(theirs["difference"])
        assert t.ci == pytest.approx((theirs["ci_low"], theirs["ci_high"]))
        assert t.n_shared == theirs["n_shared"] and t.test == theirs["test"]


def test_unknown_model_is_one_line(published: tuple[Path, Path, Path],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, _, details = published
    rc = main(["compare", "model-0", "model-9", "--dataset", "bench-c", "--details", str(details)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1
    assert "no details config 'model-9--bench-c'; did you mean 'model-1--bench-c'?" in err
    rc = main(["compare", "model-0", "model-0", "--dataset", "bench-c", "--details", str(details)])
    assert rc == 1 and "two different models" in capsys.readouterr().err
