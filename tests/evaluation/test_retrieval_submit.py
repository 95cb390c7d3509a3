"""Retrieval predictions through `submit` and the leaderboard's re-scoring: the
stored scores equal a fresh scoring of the stored predictions, a tampered
Recall@K is refused naming the field, and a JSONL submission is stored as
parquet with its metadata."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.retrieval import build_retrieval, write_flickr30k
from vlmrobust.evaluation.predict.retrieval import write_retrieval_predictions
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.evaluation.validate.retrieval import gallery
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.trust.verify import DatasetStore, load_verified_submissions


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("src")
    write_flickr30k(root, n_test=12, n_train=0)
    return build_retrieval(root, root.parent / "retrieval-submit-ds")


def _predictions(ds: Path, out: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    ids, counts = gallery(ds, "flickr30k")
    imgs = [rng.normal(size=8) for _ in ids]
    txts = [im + 1.2 * rng.normal(size=(c, 8)) for im, c in zip(imgs, counts.tolist(), strict=True)]
    return write_retrieval_predictions(ds, ids.tolist(), imgs, txts, model=f"emb-{seed}",
                                       family="clip", out=out)


def test_submit_and_leaderboard_rescore(ds: Path, tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    pred = _predictions(ds, tmp_path / "a.jsonl", seed=0)
    scores = add_submission(subs, "emb-a", ds, pred, {"training_data": "laion-2b"})
    section = scores["datasets"]["retrieval"]
    stored = subs / "emb-a" / "retrieval" / "predictions.parquet"
    assert read_prediction_meta(stored)["kind"] == "retrieval"  # JSONL stored as parquet
    fresh = score(ds, stored, tmp_path / "s.json")["datasets"]["retrieval"]
    assert fresh["configs"] == section["configs"]
    assert (subs / "emb-a" / "retrieval" / "rows.jsonl").read_text().count("\n") == 12
    store = DatasetStore(dirs=[ds])
    (sub,) = load_verified_submissions(subs, store)
    assert sub.meta.training_data == "laion-2b"
    ev = sub.evidence["retrieval"]
    assert ev.model == "emb-0" and ev.details
    # a tampered number is refused, naming the field
    path = subs / "emb-a" / "scores.json"
    data = json.loads(path.read_text())
    r1 = data["datasets"]["retrieval"]["configs"]["flickr30k"]["image_to_text"]["recall@1"]
    data["datasets"]["retrieval"]["configs"]["flickr30k"]["image_to_text"]["recall@1"] = \
        min(1.0, r1 + 0.25)
    path.write_text(json.dumps(data))
    with pytest.raises(LeaderboardInputError, match=r"image_to_text\.recall@1"):
        load_verified_submissions(subs, store)


def test_holistic_page_shows_the_retrieval_table(ds: Path, tmp_path: Path) -> None:
    from vlmrobust.leaderboard.aggregate import aggregate
    from vlmrobust.leaderboard.site.render import render_site
    from vlmrobust.leaderboard.trust.baselines import BaselineSpec

    subs = tmp_path / "subs"
    for seed, mid in ((1, "emb-b"), (2, "emb-c")):
        add_submission(subs, mid, ds, _predictions(ds, tmp_path / f"{mid}.parquet", seed),
                       {"architecture": "vit"})
    loaded = load_verified_submissions(subs, DatasetStore(dirs=[ds]))
    lb = aggregate(loaded, BaselineSpec(version="t", n_bootstrap=0))
    html = render_site(lb)["holistic.html"].decode()
    assert 'id="retrieval-flickr30k"' in html and "R@5 image→text" in html
    table = html.split('id="retrieval-flickr30k"')[1].split("</table>")[0]
    heads = re.findall(r"<th[^>]*>(R@\d+ [^<]+)</th>", table)
    assert heads == [f"R@{k} {d}" for d in ("image→text", "text→image") for k in (1, 5, 10)]
    for s in loaded:
        row = re.search(rf'<tr data-model="{s.model_id}">(.*?)</tr>', table, re.S)
        assert row is not None
        cells = re.findall(r'<td[^>]*data-v="([^"]*)"[^>]*title="([^"]*)"', row.group(1))
        want = [(s.datasets["retrieval"].configs[0].retrieval[d], k)
                for d in ("image_to_text", "text_to_image") for k in (1, 5, 10)]
        assert len(cells) == len(want) == 6
        for (v, title), (block, k) in zip(cells, want, strict=True):
            ci = block[f"recall@{k}_ci"]
            assert float(v) == block[f"recall@{k}"] and ci is not None and ci[0] <= float(v) <= ci[1]
            assert f"95% CI {100 * ci[0]:.1f} … {100 * ci[1]:.1f}" in title
    assert "vit" in html  # rows carry the model group


def test_submitting_the_same_retrieval_predictions_twice(ds: Path, tmp_path: Path) -> None:
    """Issue 40.1: the second submit reads the first's scores.json back through the
    schema; `kind: retrieval` was missing from its enum, so a rerun of the demo failed."""
    subs = tmp_path / "subs"
    pred = _predictions(ds, tmp_path / "a.jsonl", seed=0)
    first = add_submission(subs, "emb-a", ds, pred, {})
    second = add_submission(subs, "emb-a", ds, pred, {})
    assert second["datasets"]["retrieval"] == first["datasets"]["retrieval"]
    assert second["datasets"]["retrieval"]["kind"] == "retrieval"
