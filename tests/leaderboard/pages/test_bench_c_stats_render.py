"""The Bench-C statistics reach the pages inert and checked: hostile corruption
names in the sensitivity analysis, corruption-effect tests and accuracy-gain
cells are escaped, the site
check passes, and a damaged block in scores.json is refused naming the field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.pages.bench_c_stats import BenchCExtras
from vlmrobust.leaderboard.site.check import check_files
from vlmrobust.leaderboard.site.render import render_site, site_assets
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

HOSTILE = '<script>alert(1)</script>"\'&'


def test_hostile_names_in_sensitivity_and_gains_render_inert(tmp_path: Path) -> None:
    write_submission(tmp_path, *synthetic_submission(0, "vlm"))
    (sub,) = load_submissions(tmp_path)
    bc = sub.datasets["bench-c"].bench_c
    assert bc is not None
    row = {"n_questions": 9, "mean_change": -0.1, "t": -2.0, "df": 8, "p": 0.08, "z": 1.2}
    extras = BenchCExtras(
        intervals={"kappa_weighted": {"acc": (0.2, 0.4), "clean:acc": (0.5, 0.7)}},
        sensitivity={"e_abs_z_ras": 0.558, "e_abs_z_delta_acc": 0.381, "t": 51.215, "df": 18,
                     "p": 2.95e-21, "n_pairs": 12, "tested": [HOSTILE], "left_out": ["fog"],
                     "corruptions": {HOSTILE: {"n_pairs": 8, "e_abs_z_ras": 0.6,
                                               "e_abs_z_delta_acc": 0.4},
                                     "fog": {"n_pairs": 4, "e_abs_z_ras": 0.5,
                                             "e_abs_z_delta_acc": None}}},
        corruption_effect={"acc": {HOSTILE: row, "all": row}, "S": {HOSTILE: row, "all": row}},
        accuracy_gain=({"corruption": HOSTILE, "severity": 1, "n": 9, "WR": 3, "RW": 1,
                        "delta_acc": 0.2, "delta_S": 0.1, "delta_C": -0.1,
                        "category": "hesitant"},))
    sub = dataclasses.replace(sub, datasets={**sub.datasets, "bench-c": dataclasses.replace(
        sub.datasets["bench-c"], bench_c=dataclasses.replace(bc, extras=extras))})
    files = render_site(aggregate((sub,), BaselineSpec(version="t", n_bootstrap=20)))
    script, style, csp = site_assets()
    check_files(files, scripts=[script], styles=[style], csp=csp)
    page = files[f"models/{sub.model_id}.html"].decode()
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "hesitant" in page and "Sensitivity analysis (seed 003, Table 2)" in page
    assert "t = 51.215, df = 18, p = 2.95e-21" in page and "left out" in page
    assert "Corruption effect per corruption" in page and "not a seed analysis" in page
    assert "2.95e-21" in files["bench-c.html"].decode()
    assert "interval 20.0 … 40.0" in files["bench-c.html"].decode()


@pytest.mark.parametrize(("block", "value", "message"), [
    ("intervals", {"plain": {"acc": [0.9, 0.1]}}, "not an interval"),
    ("intervals", {"plain": {"nonsense": [0.1, 0.2]}}, "unknown metric"),
    ("corruption_effect", {"acc": {"fog": {"p": 1.5, "df": 3, "n_questions": 4}}},
     "not a probability"),
    ("sensitivity", {"p": 1.5, "df": 3, "n_pairs": 4}, "not a probability"),
    ("sensitivity", {"df": 3, "n_pairs": 4, "e_abs_z_ras": -0.1}, "outside"),
    ("sensitivity", {"df": 3, "n_pairs": 4, "tested": ["fog"]}, "the block's corruptions"),
    ("accuracy_gain", [{"corruption": "fog", "severity": 1, "category": "happy"}], "is not one of"),
])
def test_damaged_blocks_are_refused(tmp_path: Path, block: str, value: object,
                                    message: str) -> None:
    meta, scores = synthetic_submission(0, "vlm")
    scores["datasets"]["bench-c"]["bench_c"][block] = value
    write_submission(tmp_path, meta, json.loads(json.dumps(scores)))
    with pytest.raises(LeaderboardInputError, match=message) as err:
        load_submissions(tmp_path)
    assert f"bench_c.{block}" in str(err.value)
