"""Seed 002's classifier-free guidance end to end (issue 33 item 1) on a tiny
random LLaVA: a ``likelihood:cfg=T`` / ``cfg-avg=T`` run stores both terms per
option, scoring sweeps t from that one run (each accuracy against a plain
per-row computation from the stored terms), the headline is the run's T, and
old probability-mixture files or tampered logits are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.classification import index_rows, write_classification
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.datadir import read_table
from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.write import write_predictions_file
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.scoring.guidance import DEFAULT_CFG_GRID, parse_grid
from vlmrobust.evaluation.validate.check import validate

TERMS = ("logp_with_image", "logp_without_image")


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vlm_fixtures.make_llava(tmp_path_factory.mktemp("llava") / "m")


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_classification(tmp_path_factory.mktemp("cls") / "ds", n=4, k=3)


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("mcq") / "ds", {"default": 4}, with_class_ids=False)


@pytest.fixture(scope="module")
def cfg_avg_run(llava: Path, classes: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Table 2's row, "Prob Inference (Avg) w/ CFG", over a label space at t = 2."""
    return predict_dataset(RunSpec(
        f"vlm:{llava}", classes, tmp_path_factory.mktemp("run") / "p.parquet", progress=False,
        reader=ReaderOptions(mode="likelihood:cfg-avg=2"),
        backend=BackendOptions(device="cpu", threads=1)))


def _schema(name: str) -> Any:
    return json.loads((Path(__file__).parents[3] / f"evaluation/schemas/{name}.schema.json")
                      .read_text("utf-8"))


def _sweep_by_hand(rows: list[dict[str, Any]], answers: dict[str, int], t: float,
                   configs: dict[str, str]) -> dict[str, float]:
    """Per config, the share of rows whose best option under t·with + (1 − t)·without
    is the answer, one row at a time from the file's own columns."""
    right: dict[str, list[bool]] = {}
    for r in rows:
        score = [t * a + (1 - t) * b for a, b in zip(r[TERMS[0]], r[TERMS[1]], strict=True)]
        right.setdefault(configs[r["id"]], []).append(int(np.argmax(score)) == answers[r["id"]])
    return {c: float(np.mean(v)) for c, v in right.items()}


def test_one_run_is_swept_over_t_and_the_headline_is_the_runs_t(
        cfg_avg_run: Path, classes: Path, tmp_path: Path) -> None:
    rows = pq.read_table(cfg_avg_run).to_pylist()
    for r in rows:  # the stored logits are the combination of the stored terms at t = 2
        assert set(TERMS) <= set(r) and len(r[TERMS[0]]) == len(r[TERMS[1]]) == len(r["logits"])
        np.testing.assert_allclose(r["logits"], 2 * np.array(r[TERMS[0]]) - np.array(r[TERMS[1]]),
                                   rtol=0, atol=1e-5)
    meta = read_prediction_meta(cfg_avg_run)
    assert meta["mode"] == "likelihood:cfg-avg=2"
    out = score(classes, cfg_avg_run, tmp_path / "scores.json")
    jsonschema.validate(out, _schema("scores"))
    section = next(iter(out["datasets"].values()))
    cfg = section["cfg"]
    assert cfg["reduction"] == "avg" and cfg["headline_t"] == 2.0
    assert cfg["grid"] == sorted(set(DEFAULT_CFG_GRID) | {2.0})
    assert "optimistic" in cfg["best_of_grid_note"] and "before scoring" in cfg["headline_rule"]
    expected = index_rows(classes)
    answers = {e["id"]: e["answer"] for e in expected}
    configs = {e["id"]: e["config"] for e in expected}
    assert set(cfg["configs"]) == set(configs.values()) and len(set(configs.values())) == 2
    for t in cfg["grid"]:
        want = _sweep_by_hand(rows, answers, t, configs)
        for config, block in cfg["configs"].items():
            (got,) = [b["accuracy"] for b in block["accuracy_by_t"] if b["t"] == t]
            assert got == pytest.approx(want[config], abs=1e-12), (config, t)
    for config, block in cfg["configs"].items():
        by_t = {b["t"]: b["accuracy"] for b in block["accuracy_by_t"]}
        # the headline accuracy (from the logits) is the sweep's at the run's t
        assert section["configs"][config]["accuracy"] == pytest.approx(by_t[2.0])
        best = block["best_of_grid"]
        assert best["accuracy"] == max(by_t.values())
        assert best["t"] == min(t for t, a in by_t.items() if a == best["accuracy"])
    # the grid is an option; the run's own t is always scored
    assert main(["score", "--dataset", str(classes), "--predictions", str(cfg_avg_run),
                 "--out", str(tmp_path / "g.json"), "--cfg-grid", "0,4"]) == 0
    cfg4 = next(iter(json.loads((tmp_path / "g.json").read_text())["datasets"].values()))["cfg"]
    assert cfg4["grid"] == [0.0, 2.0, 4.0]


def test_sum_cfg_over_jsonl_scores_like_its_parquet(llava: Path, mcq: Path,
                                                   tmp_path: Path) -> None:
    outs = [predict_dataset(RunSpec(
        f"vlm:{llava}", mcq, tmp_path / name, progress=False,
        reader=ReaderOptions(mode="likelihood:cfg=2"),
        backend=BackendOptions(device="cpu", threads=1))) for name in ("p.parquet", "p.jsonl")]
    lines = [json.loads(line) for line in outs[1].read_text().splitlines()]
    assert all(set(TERMS) <= set(r) for r in lines)
    for r in lines:
        jsonschema.validate(r, _schema("predictions-row"))
    scores = [score(mcq, o, tmp_path / f"s{i}.json")["datasets"]["imagenet-mcq"]["cfg"]
              for i, o in enumerate(outs)]
    assert scores[0]["configs"] == scores[1]["configs"] and scores[0]["reduction"] == "sum"
    answers = {r["id"]: r["answer"] for r in read_table(mcq, "default").to_pylist()}
    want = _sweep_by_hand(lines, answers, 5.0, dict.fromkeys(answers, "default"))
    (got,) = [b["accuracy"] for b in scores[1]["configs"]["default"]["accuracy_by_t"]
              if b["t"] == 5.0]
    assert got == pytest.approx(want["default"])


def _rewrite(src: Path, out: Path, drop: tuple[str, ...] = (), mode: str | None = None,
             logits: Any = None) -> Path:
    table = pq.read_table(src)
    meta = read_prediction_meta(src)
    table = table.drop_columns(list(drop)).replace_schema_metadata(None)
    if logits is not None:
        import pyarrow as pa
        table = table.set_column(table.schema.get_field_index("logits"), "logits",
                                 pa.array(logits, pa.list_(pa.float32())))
    write_predictions_file(out, table, {**meta, **({"mode": mode} if mode else {})})
    return out


def test_old_probability_mixture_files_are_refused(cfg_avg_run: Path, classes: Path,
                                                   tmp_path: Path) -> None:
    """A CFG file of the earlier reader (t in [0, 1], probabilities mixed, no
    terms kept) cannot be read as guidance: refused in one line, nothing written."""
    old = _rewrite(cfg_avg_run, tmp_path / "old.parquet", drop=TERMS, mode="likelihood:cfg=0.5")
    with pytest.raises(SubmissionError) as exc:
        score(classes, old, tmp_path / "s.json")
    msg = str(exc.value)
    assert "\n" not in msg and "CFG terms missing" in msg and "predict again" in msg
    assert not (tmp_path / "s.json").exists()


def test_logits_that_are_not_the_recorded_t_are_refused(cfg_avg_run: Path, classes: Path,
                                                        tmp_path: Path) -> None:
    rows = pq.read_table(cfg_avg_run).to_pylist()
    plain = [r[TERMS[0]] for r in rows]  # t = 1's scores under a t = 2 mode
    bad = _rewrite(cfg_avg_run, tmp_path / "bad.parquet", logits=plain)
    with pytest.raises(SubmissionError, match="logits are not the CFG score") as exc:
        validate(classes, bad)
    assert "\n" not in str(exc.value)
    # the same logits under the mode they were computed at are valid
    ok = _rewrite(cfg_avg_run, tmp_path / "ok.parquet", logits=plain, mode="likelihood:cfg-avg=1")
    validate(classes, ok)


@pytest.mark.parametrize("text", ["", "1,x", "-1", "nan", "inf"])
def test_bad_grids_are_refused(text: str) -> None:
    from vlmrobust.core.errors import VlmrobustError

    with pytest.raises(VlmrobustError, match="--cfg-grid"):
        parse_grid(text)
