"""Seed 001's OOD protocol as the scorer's default (issue 33 item 10): the
headline means average Table IV's sets (NINCO, iNaturalist, DTD = textures,
Places, SUN) with ImageNet-O apart, and MSP is the score only of models trained
or fine-tuned on ImageNet-1k (a CLIP fine-tuned on MSCOCO is zero-shot: MCM)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from tests.fixtures.ood import dataset_ids, ood_rows, write_logits, write_ood
from tests.fixtures.score import png, write_meta
from vlmrobust.evaluation.scoring.dataset import score


def _with_imagenet_o_and_a_stand_in(out: Path) -> Path:
    configs = ood_rows()

    def rows(source: str, base: int) -> list[dict[str, Any]]:
        return [{"id": f"{source}-{i}", "image": {"bytes": png(base + i), "path": None},
                 "label": -1, "is_ood": True, "ood_source": source, "ood_class": ""}
                for i in range(5)]
    configs["imagenet-o"] = rows("imagenet-o", 700)
    configs["astronomy"] = rows("astronomy", 800)
    return write_ood(out, configs)


def test_the_mean_is_over_table_iv_sets_and_imagenet_o_apart(tmp_path: Path) -> None:
    ds = _with_imagenet_o_and_a_stand_in(tmp_path / "ds")
    rows = dataset_ids(ds)
    z = np.random.default_rng(5).normal(size=(len(rows), 4)) * 3
    preds = write_logits(tmp_path / "p.parquet", [r[1] for r in rows], z)
    write_meta(preds, ds)
    block = score(ds, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert sorted(block["sets"]) == ["astronomy", "imagenet-o", "ninco", "textures"]
    assert block["mean_sets"] == ["ninco", "textures"]  # Table IV's order; the rest apart
    e = np.exp(z - z.max(axis=1, keepdims=True))
    msp = (e / e.sum(axis=1, keepdims=True)).max(axis=1)
    src = {r[1]: r[0] for r in rows}
    is_id = np.array([src[r[1]] == "imagenet-val" for r in rows])
    auroc = {}
    for name in ("ninco", "textures"):
        ood = np.array([src[r[1]] == name for r in rows])
        keep = is_id | ood
        auroc[name] = roc_auc_score(is_id[keep], msp[keep])
        assert block["sets"][name]["auroc"] == pytest.approx(auroc[name], abs=1e-12)
    assert block["mean_auroc"] == pytest.approx((auroc["ninco"] + auroc["textures"]) / 2, abs=1e-12)
    assert block["mean_fpr95"] == pytest.approx(
        np.mean([block["sets"][n]["fpr95"] for n in ("ninco", "textures")]), abs=1e-12)


def test_a_build_without_table_iv_sets_averages_its_others(tmp_path: Path) -> None:
    full = ood_rows()
    only = {"imagenet-val": full["imagenet-val"]}
    only["astronomy"] = [{**r, "ood_source": "astronomy", "ood_class": "",
                          "id": r["id"].replace("tex", "ast")} for r in full["textures"]]
    only["imagenet-o"] = [{**r, "ood_source": "imagenet-o", "ood_class": "",
                           "id": r["id"].replace("ninco", "ino")} for r in full["ninco"]]
    ds = write_ood(tmp_path / "ds", only)
    ids = [r[1] for r in dataset_ids(ds)]
    preds = write_logits(tmp_path / "p.parquet", ids,
                         np.random.default_rng(6).normal(size=(len(ids), 4)))
    write_meta(preds, ds)
    block = score(ds, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert block["mean_sets"] == ["astronomy"]
    assert block["mean_auroc"] == block["sets"]["astronomy"]["auroc"]


@pytest.mark.parametrize(("fine_tuned_on", "want"), [
    (None, "mcm"), ("mscoco", "mcm"), ("imagenet-1k", "msp"), ("imagenet-12k+imagenet-1k", "msp")])
def test_msp_only_for_clip_fine_tuned_on_imagenet_1k(tmp_path: Path, fine_tuned_on: str | None,
                                                     want: str) -> None:
    ds = write_ood(tmp_path / "ds")
    ids = [r[1] for r in dataset_ids(ds)]
    cos = np.random.default_rng(7).uniform(-0.3, 0.4, size=(len(ids), 4))
    preds = write_logits(tmp_path / "p.parquet", ids, cos * 100.0)
    write_meta(preds, ds, family="clip", logit_scale=100.0,
               **({"fine_tuned_on": fine_tuned_on} if fine_tuned_on else {}))
    block = score(ds, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert block["score"] == want
