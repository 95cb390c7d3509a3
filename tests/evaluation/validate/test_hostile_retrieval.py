"""Hostile retrieval predictions: embeddings near float32's largest value are
finite vectors with a direction, so they score as their direction does
(cosine similarity ignores scale), without numpy overflow warnings on the
user's terminal."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.retrieval import build_retrieval, write_flickr30k
from vlmrobust.evaluation.predict.retrieval import write_retrieval_predictions
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.validate.retrieval import gallery

DIM = 16


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("src")
    write_flickr30k(root, n_test=8, n_train=1)
    return build_retrieval(root, root.parent / "retrieval-ds")


def _write(ds: Path, out: Path, image_scale: float, text_scale: float) -> Path:
    rng = np.random.default_rng(5)
    ids, imgs, txts = [], [], []
    for config in ("flickr30k",):
        cids, counts = gallery(ds, config)
        for rid, c in zip(cids.tolist(), counts.tolist(), strict=True):
            im = rng.uniform(-1.0, 1.0, size=DIM)
            ids.append(rid)
            imgs.append(im)
            txts.append(im + 1.5 * rng.uniform(-1.0, 1.0, size=(c, DIM)))
    imgs[2] = np.sign(imgs[2]) * image_scale  # a direction written at float32's edge
    txts[3][1] = np.sign(txts[3][1]) * text_scale
    return write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip", out=out)


def test_embeddings_near_float32_max_score_as_their_direction(ds: Path, tmp_path: Path) -> None:
    big = float(np.finfo(np.float32).max) / 2
    unit = _write(ds, tmp_path / "unit.parquet", 1.0, 1.0)
    huge = _write(ds, tmp_path / "huge.parquet", big, big)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning reached stderr before
        a = score(ds, unit, tmp_path / "a.json")
        b = score(ds, huge, tmp_path / "b.json")
    ra = a["datasets"]["retrieval"]["configs"]["flickr30k"]
    rb = b["datasets"]["retrieval"]["configs"]["flickr30k"]
    assert json.dumps(ra, sort_keys=True) == json.dumps(rb, sort_keys=True)
    assert ra["image_to_text"]["recall@1"] < 1.0  # not trivially equal
