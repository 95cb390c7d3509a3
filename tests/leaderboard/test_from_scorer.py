"""The leaderboard reads what the real scorer (vlmrobust.evaluation.scoring.dataset) writes: tiny
imagenet-mcq and bench-c tables scored in memory, then loaded, fitted and rendered."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from vlmrobust.evaluation.scoring.dataset import dumps_scores, score_tables
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.downloads import as_records
from vlmrobust.leaderboard.site.render import render_site
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

K = 5
VARIANTS = ("sample-photo", "sample-rendition")
CORRUPTIONS = ("fog", "snow")


def _imagenet_table() -> pa.Table:
    ids, answer, variant, config = [], [], [], []
    for v in VARIANTS:
        for i in range(40):
            ids.append(f"{v}-{i}")
            answer.append(i % K)
            variant.append(v)
            config.append(f"{v}-random")
    n = len(ids)
    return pa.table({"id": ids, "n_options": [K] * n, "answer": answer, "variant": variant,
                     "distractors": ["random"] * n, "config": config})


def _bench_c_table() -> pa.Table:
    rows: dict[str, list] = {k: [] for k in ("id", "n_options", "answer", "source_id",
                                             "corruption", "severity", "kappa")}
    for q in range(12):
        copies = [("none", 0)] + [(c, s) for c in CORRUPTIONS for s in range(1, 6)]
        for c, s in copies:
            rows["id"].append(f"q{q}-{c}-{s}")
            rows["n_options"].append(4)
            rows["answer"].append(q % 4)
            rows["source_id"].append(f"q{q}")
            rows["corruption"].append(c)
            rows["severity"].append(s)
            rows["kappa"].append(0.2 + 0.05 * q)
    return pa.table(rows)


def _logits(table: pa.Table, skill: float, rng: np.random.Generator, k: int) -> pa.Table:
    answer = np.asarray(table.column("answer").to_numpy())
    logits = rng.normal(size=(table.num_rows, k))
    logits[np.arange(table.num_rows), answer] += skill
    return pa.table({"id": table.column("id"),
                     "logits": [row.tolist() for row in logits.astype(np.float64)]})


def test_scorer_output_loads_fits_and_renders(tmp_path: Path) -> None:
    in_tab, bc_tab = _imagenet_table(), _bench_c_table()
    in_manifest = {"spec": {"name": "imagenet-mcq", "version": "0.1"}, "fingerprint": "f1",
                   "sample": True, "reference_variant": "sample-photo",
                   "configs": {f"{v}-random": 40 for v in VARIANTS}}
    bc_manifest = {"spec": {"name": "bench-c", "version": "0.1"}, "fingerprint": "f2",
                   "configs": {"default": bc_tab.num_rows}}
    root = tmp_path / "submissions"
    scored = {}
    for i, skill in enumerate((0.5, 1.5, 2.5, 3.5)):
        rng = np.random.default_rng(i)
        model_id = f"m{i}"
        scores = score_tables(in_tab, in_manifest, _logits(in_tab, skill, rng, K), model_id)
        bc = score_tables(bc_tab, bc_manifest, _logits(bc_tab, skill, rng, 4), model_id)
        scores["datasets"].update(bc["datasets"])
        folder = root / model_id
        folder.mkdir(parents=True)
        (folder / "scores.json").write_text(dumps_scores(scores))
        (folder / "meta.yaml").write_text(f"model_id: {model_id}\nname: Model {i}\n"
                                          "family: clip\nparams: 1000\n")
        scored[model_id] = scores
    subs = load_submissions(root)
    assert len(subs) == 4
    for s in subs:
        raw = scored[s.model_id]["datasets"]
        cfgs = {c.config: c for c in s.datasets["imagenet-mcq"].configs}
        assert cfgs["sample-photo-random"].accuracy == \
            raw["imagenet-mcq"]["configs"]["sample-photo-random"]["accuracy"]
        bc = s.datasets["bench-c"].bench_c
        assert bc is not None and len(bc.cells) == len(CORRUPTIONS) * 5
        assert bc.aggregate["ras"] == raw["bench-c"]["bench_c"]["aggregate"]["ras"]
    lb = aggregate(subs, BaselineSpec(version="t", reference_family="clip", n_bootstrap=50,
                                    reference_training_data=None))
    f, fam = lb.fits
    assert (f.kind, fam.kind, fam.label) == ("reference", "family", "clip")
    assert (fam.slope, fam.intercept) == (f.slope, f.intercept)
    assert (f.reference, f.shift, f.strategy) == ("sample-photo", "sample-rendition", "random")
    assert f.line is not None and len(f.baselines) == 4
    files = render_site(lb)
    table = json.loads(files["leaderboard.json"])
    assert [r["model_id"] for r in as_records(table)] == ["m0", "m1", "m2", "m3"]
    assert all(r[f"bench-c:{w}:ras"] is not None for r in as_records(table)
               for w in ("plain", "kappa_weighted"))
