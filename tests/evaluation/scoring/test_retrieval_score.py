"""Done-when (#24.3): retrieval predictions (image + caption embeddings) validate
and score; Recall@1/5/10 both ways equal CLIP_benchmark's recall_at_k on the
same embeddings (an independent torch reference written from its published
definition), blocked similarity equals the full matrix, bad files are refused in
one line naming the rows, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from tests.fixtures.retrieval import build_retrieval, write_flickr30k, write_mscoco
from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.evaluation.predict.retrieval import write_retrieval_predictions
from vlmrobust.evaluation.predictions.meta import attach_meta, read_prediction_meta
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.scoring.retrieval import retrieval_rows
from vlmrobust.evaluation.validate.retrieval import gallery, validate_retrieval
from vlmrobust.metrics.holistic.retrieval import clustered_recall_ci, retrieval_ranks

DIM = 16


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("src")
    write_flickr30k(root, n_test=24, n_train=1)
    write_mscoco(root, n_test=14, n_val=1, six=3)
    return build_retrieval(root, root.parent / "retrieval-ds")


def _embeddings(ds: Path, seed: int = 0, noise: float = 1.6,
                ) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """Caption embeddings near their image's (noisy enough that recall is not 1)."""
    rng = np.random.default_rng(seed)
    ids, imgs, txts = [], [], []
    for config in ("flickr30k", "mscoco-5k"):
        cids, counts = gallery(ds, config)
        for rid, c in zip(cids.tolist(), counts.tolist(), strict=True):
            im = rng.normal(size=DIM)
            ids.append(rid)
            imgs.append(im * rng.uniform(0.5, 3.0))  # unnormalised on purpose
            txts.append(im + noise * rng.normal(size=(c, DIM)))
    return ids, imgs, txts


def _clip_benchmark_recall(img: np.ndarray, txt: np.ndarray, text_image: np.ndarray,
                           k: int) -> tuple[float, float]:
    """CLIP_benchmark's zeroshot_retrieval.evaluate from its definition: unit
    embeddings, scores = texts @ images^T; a query's recall = true positives in its
    top-k / its positives; Recall@K = mean over queries of [recall > 0].
    Returns (its image_retrieval_recall@k = text->image, text_retrieval_recall@k = image->text)."""
    images = torch.nn.functional.normalize(torch.from_numpy(img).float(), dim=-1)
    texts = torch.nn.functional.normalize(torch.from_numpy(txt).float(), dim=-1)
    scores = texts @ images.T
    positive = torch.zeros_like(scores, dtype=torch.bool)
    positive[torch.arange(len(texts)), torch.from_numpy(text_image)] = True

    def per_query(s: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        top = torch.topk(s, k, dim=1).indices
        true_pos = torch.gather(pos, 1, top).sum(dim=1).float()
        return true_pos / pos.sum(dim=1).float()

    t2i = (per_query(scores, positive) > 0).float().mean().item()
    i2t = (per_query(scores.T, positive.T) > 0).float().mean().item()
    return t2i, i2t


def test_scores_equal_clip_benchmark_on_the_same_embeddings(ds: Path, tmp_path: Path) -> None:
    ids, imgs, txts = _embeddings(ds)
    pred = write_retrieval_predictions(ds, ids, imgs, txts, model="toy-clip", family="clip",
                                       out=tmp_path / "p.parquet")
    scores = score(ds, pred, tmp_path / "scores.json")
    section = scores["datasets"]["retrieval"]
    assert section["kind"] == "retrieval"
    by_id = dict(zip(ids, range(len(ids)), strict=True))
    for config, n_img in (("flickr30k", 24), ("mscoco-5k", 14)):
        cids, counts = gallery(ds, config)
        img = np.stack([imgs[by_id[r]] for r in cids.tolist()])
        txt = np.concatenate([txts[by_id[r]] for r in cids.tolist()])
        text_image = np.repeat(np.arange(n_img), counts)
        got = section["configs"][config]
        assert (got["n"], got["n_captions"], got["embedding_dim"]) == (n_img, len(txt), DIM)
        for k in (1, 5, 10):
            t2i, i2t = _clip_benchmark_recall(img, txt, text_image, k)
            assert got["text_to_image"][f"recall@{k}"] == pytest.approx(t2i, abs=1e-6)
            assert got["image_to_text"][f"recall@{k}"] == pytest.approx(i2t, abs=1e-6)
            for d in ("text_to_image", "image_to_text"):
                lo, hi = got[d][f"recall@{k}_ci"]
                assert lo <= got[d][f"recall@{k}"] <= hi
        # not saturated: the comparison means something
        assert 0.05 < got["image_to_text"]["recall@1"] < 0.95
        assert 0.05 < got["text_to_image"]["recall@5"] < 1.0
    assert json.loads((tmp_path / "scores.json").read_text()) == scores
    rows = [json.loads(line) for line in (tmp_path / "scores.rows.jsonl").read_text().splitlines()]
    assert len(rows) == 38 and rows[0]["config"] == "flickr30k"
    assert sum(len(r["text_to_image_ranks"]) for r in rows) == 120 + 14 * 5 + 3


def test_blocked_similarity_equals_the_full_matrix(ds: Path, tmp_path: Path) -> None:
    ids, imgs, txts = _embeddings(ds, seed=3)
    pred = write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip",
                                       out=tmp_path / "p.parquet")
    report = validate_retrieval(ds, pred)
    rows = retrieval_rows(report)
    for cfg in report.configs:
        img, txt, ti = cfg.embeddings(report.file)
        ref = [retrieval_ranks(img, txt, ti, block=b) for b in (1, 7, 1_000_000)]
        full = (img / np.linalg.norm(img, axis=1, keepdims=True)).astype(np.float64) @ (
            txt / np.linalg.norm(txt, axis=1, keepdims=True)).astype(np.float64).T
        own = np.array([full[i, ti == i].max() for i in range(len(img))])
        direct_i2t = (full > own[:, None]).sum(axis=1)  # no ties in continuous embeddings
        for i2t, t2i in ref:
            assert i2t.tolist() == direct_i2t.tolist()
            assert t2i.tolist() == (full > full[ti, np.arange(len(ti))]).sum(axis=0).tolist()
        mine = [r for r in rows if r["config"] == cfg.name]
        assert [r["image_to_text_rank"] for r in mine] == direct_i2t.tolist()
        assert [x for r in mine for x in r["text_to_image_ranks"]] == ref[0][1].tolist()


def test_jsonl_scores_like_parquet_and_is_deterministic(ds: Path, tmp_path: Path) -> None:
    ids, imgs, txts = _embeddings(ds, seed=1)
    a = write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip",
                                    out=tmp_path / "p.parquet")
    b = write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip",
                                    out=tmp_path / "p.jsonl")
    sa = score(ds, a, tmp_path / "a.json")["datasets"]["retrieval"]["configs"]
    sb = score(ds, b, tmp_path / "b.json")["datasets"]["retrieval"]["configs"]
    assert sa == sb


def test_clustered_ci_equals_a_direct_loop() -> None:
    rng = np.random.default_rng(7)
    queries = rng.integers(1, 7, size=40)
    hits = rng.binomial(queries, 0.6)
    got = clustered_recall_ci(hits, queries, n_boot=300, seed=11, level=0.9)
    draw = np.random.default_rng(11).integers(0, 40, size=(300, 40))
    vals = [sum(hits[j] for j in row) / sum(queries[j] for j in row) for row in draw]
    assert got == pytest.approx(tuple(np.quantile(vals, [0.05, 0.95])), rel=1e-12)


def _rewrite(pred: Path, out: Path, edit: Any) -> Path:
    t = pq.read_table(pred)
    rows = t.to_pylist()
    edit(rows)
    pq.write_table(attach_meta(pa.Table.from_pylist(rows, schema=t.schema.remove_metadata()),
                               read_prediction_meta(pred)), out)
    return out


@pytest.mark.parametrize(("edit", "match"), [
    (lambda r: r.pop(3), r"missing rows: config flickr30k: 1 of its 24 images"),
    (lambda r: r.append(dict(r[0])), r"duplicate id: .*\[1 row: row 38 \(id 'flickr30k-"),
    (lambda r: r[2].update(id="nope"), r"unknown id: .*row 2 \(id 'nope'\)"),
    (lambda r: r[5]["text_embeddings"].pop(), r"caption count mismatch: .*\[1 row: row 5 "),
    (lambda r: r[4].update(image_embedding=r[4]["image_embedding"][:-1]),
     r"image_embedding not D numbers: .*D = 16.*row 4 "),
    (lambda r: r[6]["text_embeddings"][1].append(0.5), r"text_embeddings not lists of D numbers"),
    (lambda r: r[7].update(image_embedding=[0.0] * DIM), r"embedding not finite or all zeros"),
    (lambda r: r[8]["text_embeddings"][0].__setitem__(3, float("nan")),
     r"embedding not finite or all zeros: .*row 8 "),
])
def test_bad_predictions_refused_in_one_line(ds: Path, tmp_path: Path, edit: Any,
                                             match: str) -> None:
    ids, imgs, txts = _embeddings(ds, seed=2)
    good = write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip",
                                       out=tmp_path / "good.parquet")
    bad = _rewrite(good, tmp_path / "bad.parquet", edit)
    with pytest.raises(SubmissionError, match=match) as exc:
        score(ds, bad, tmp_path / "s.json")
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "s.rows.jsonl").exists()


def test_other_build_and_api_misuse_refused(ds: Path, tmp_path: Path) -> None:
    ids, imgs, txts = _embeddings(ds)
    good = write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip",
                                       out=tmp_path / "p.parquet")
    t = pq.read_table(good)
    meta = read_prediction_meta(good)
    meta["dataset"]["fingerprint"] = "0" * 64
    pq.write_table(attach_meta(t.replace_schema_metadata(None), meta), tmp_path / "other.parquet")
    with pytest.raises(SubmissionError, match="dataset fingerprint mismatch"):
        validate_retrieval(ds, tmp_path / "other.parquet")
    with pytest.raises(SubmissionError, match=r"caption count mismatch") as exc:
        write_retrieval_predictions(ds, ids, imgs, [t[:-1] for t in txts], model="m",
                                    family="clip", out=tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists() and "row 0" in str(exc.value)
    pq.write_table(pa.table({"id": ["a"], "logits": [[0.1]]}), tmp_path / "mcq.parquet")
    with pytest.raises(SubmissionError, match="no 'image_embedding', 'text_embeddings' column"):
        validate_retrieval(ds, tmp_path / "mcq.parquet")
    with pytest.raises(VlmrobustError, match="config 'coco' is not in the dataset"):
        validate_retrieval(ds, good, config="coco")


def test_cli_validate_and_score(ds: Path, tmp_path: Path, capsys: Any) -> None:
    from vlmrobust.cli.main import main

    ids, imgs, txts = _embeddings(ds)
    pred = write_retrieval_predictions(ds, ids, imgs, txts, model="m", family="clip",
                                       out=tmp_path / "p.parquet")
    assert main(["validate", "--dataset", str(ds), "--predictions", str(pred)]) == 0
    assert "answers 38 images and 193 captions" in capsys.readouterr().out
    assert main(["score", "--dataset", str(ds), "--predictions", str(pred), "--config",
                 "mscoco-5k", "--out", str(tmp_path / "s.json")]) == 0
    assert "retrieval: mscoco-5k R@5 image→text" in capsys.readouterr().out
    s = json.loads((tmp_path / "s.json").read_text())
    assert list(s["datasets"]["retrieval"]["configs"]) == ["mscoco-5k"]
