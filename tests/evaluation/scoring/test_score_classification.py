"""Scoring kind ``classification`` (issue 23 item 4) through the scorer:
full-label-space ECE equals torchmetrics' multiclass ECE, NLL equals a direct
log-softmax, seed 001's temperature (fitted on a seeded half of ImageNet val)
matches a brute-force NLL grid and is applied to the other half and to every
shift; K-option configs are scored over their K; no logits, accuracy only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy.special import log_softmax
from sklearn.metrics import balanced_accuracy_score

from vlmrobust.evaluation.scoring.classification import (
    K_CONFIG_TS,
    K_OPTIONS,
    LABEL_SPACE,
    NO_LOGITS,
)
from vlmrobust.evaluation.scoring.common import derived_seed
from vlmrobust.evaluation.scoring.dataset import score_tables
from vlmrobust.metrics.subsets import split_half

C = 40
K = 5


def _logits(rng: np.random.Generator, y: np.ndarray, width: int, noise: float) -> np.ndarray:
    z = rng.normal(0, noise, (y.size, width))
    z[np.arange(y.size), y] += 2.0
    return 3.0 * z  # overconfident: T* > 1


def _dataset(rng: np.random.Generator, configs: Mapping[str, tuple[str, int, int | None, float]],
             ) -> tuple[pa.Table, dict[str, Any], pa.Table, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """configs: name -> (variant, rows, K or None, logit noise)."""
    cols: dict[str, list[Any]] = {"id": [], "n_options": [], "answer": [], "variant": [], "config": []}
    logits: list[list[float]] = []
    truth = {}
    for name, (variant, n, k, noise) in configs.items():
        labels = rng.integers(0, C, size=n)
        answer = labels if k is None else rng.integers(0, k, size=n)  # candidate position
        z = _logits(rng, answer, C if k is None else k, noise)
        ids = np.array([f"{name}/{i:05d}" for i in range(n)], dtype=object)
        cols["id"] += ids.tolist()
        cols["n_options"] += [C if k is None else k] * n
        cols["answer"] += answer.tolist()
        cols["variant"] += [variant] * n
        cols["config"] += [name] * n
        logits += z.tolist()
        truth[name] = (ids, answer, z)
    manifest = {"spec": {"name": "classification", "version": "1"}, "fingerprint": "f" * 64,
                "kind": "classification",
                "configs": {name: spec[1] for name, spec in configs.items()},
                "label_spaces": {name: {"file": f"label_spaces/{name}.json", "sha256": "0" * 64,
                                        "n_classes": C, "name": "toy"} for name in configs}}
    preds = pa.table({"id": cols["id"], "logits": logits})
    return pa.table(cols), manifest, preds, truth


CONFIGS = {"imagenet-val": ("imagenet-val", 400, None, 1.0),
           "imagenet-r": ("imagenet-r", 300, None, 2.0),
           "imagenet-val-k5": ("imagenet-val", 200, K, 1.0)}


def _ece_torchmetrics(z: np.ndarray, y: np.ndarray, t: float = 1.0) -> float:
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.functional.classification")
    probs = torch.softmax(torch.from_numpy(z) / t, dim=1)
    return float(tm.multiclass_calibration_error(probs, torch.from_numpy(y), num_classes=z.shape[1],
                                                 n_bins=15, norm="l1"))


def _nll(z: np.ndarray, y: np.ndarray, t: float = 1.0) -> float:
    return float(-log_softmax(z / t, axis=1)[np.arange(y.size), y].mean())


def _score(configs: Mapping[str, tuple[str, int, int | None, float]] = CONFIGS, seed: int = 0,
           ) -> tuple[dict[str, Any], dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    table, manifest, preds, truth = _dataset(np.random.default_rng(seed), configs)
    return score_tables(table, manifest, preds, "m")["datasets"]["classification"], truth


def test_full_label_space_ece_and_nll_equal_torchmetrics_and_a_direct_computation() -> None:
    section, truth = _score()
    for name in ("imagenet-val", "imagenet-r"):
        _, y, z = truth[name]
        got = section["configs"][name]
        assert got["over"] == LABEL_SPACE and got["n_classes"] == C and got["k"] is None
        assert got["ece"] == pytest.approx(_ece_torchmetrics(z, y), abs=1e-6)
        assert got["nll"] == pytest.approx(_nll(z, y), rel=1e-9)
        assert got["accuracy"] == pytest.approx(float((z.argmax(1) == y).mean()))
        lo, hi = got["accuracy_ci"]
        assert lo < got["accuracy"] < hi
        assert got["mean_per_class_accuracy"] == pytest.approx(balanced_accuracy_score(y, z.argmax(1)))
        assert got["n_classes_present"] == len(set(y.tolist()))
    assert section["kind"] == "classification" and section["bench_c"] is None
    assert section["reference_variant"] == "imagenet-val"


def test_seed001_temperature_is_the_grid_minimum_on_the_fit_half_and_applied_everywhere() -> None:
    section, truth = _score()
    block = section["temperature"]
    ids, y, z = truth["imagenet-val"]
    fit, held = split_half(ids.size, derived_seed(0, "temperature-half"), [str(i) for i in ids])
    assert block["reference_config"] == "imagenet-val" and block["fit_rows"] == fit.size
    grid = np.exp(np.linspace(np.log(0.5), np.log(8.0), 4001))
    nlls = [_nll(z[fit], y[fit], t) for t in grid]
    best = float(grid[int(np.argmin(nlls))])
    step = grid[1] / grid[0]
    t = block["value"]
    assert best / step <= t <= best * step and t > 1.2  # the overconfident logits need T > 1
    ref = section["configs"]["imagenet-val"]
    # the reference config is scaled on its held-out half only
    assert ref["ts_rows"] == held.size == ids.size - ids.size // 2
    assert ref["nll_ts"] == pytest.approx(_nll(z[held], y[held], t), rel=1e-9)
    assert ref["ece_ts"] == pytest.approx(_ece_torchmetrics(z[held], y[held], t), abs=1e-6)
    _, ys, zs = truth["imagenet-r"]
    shifted = section["configs"]["imagenet-r"]
    assert shifted["temperature"] == t and shifted["ts_rows"] == ys.size
    assert shifted["nll_ts"] == pytest.approx(_nll(zs, ys, t), rel=1e-9)
    assert shifted["ece_ts"] == pytest.approx(_ece_torchmetrics(zs, ys, t), abs=1e-6)
    assert shifted["nll_ts"] < shifted["nll"]


def test_k_option_configs_are_scored_over_their_k() -> None:
    section, truth = _score()
    _, y, z = truth["imagenet-val-k5"]
    got = section["configs"]["imagenet-val-k5"]
    assert got["over"] == K_OPTIONS and got["k"] == K and got["n_classes"] == C
    assert got["ece"] == pytest.approx(_ece_torchmetrics(z, y), abs=1e-6)
    assert got["nll"] == pytest.approx(_nll(z, y), rel=1e-9)
    assert got["temperature"] is None and got["ts_note"] == K_CONFIG_TS


def test_without_the_reference_config_no_temperature_is_applied() -> None:
    section, _ = _score({"imagenet-r": ("imagenet-r", 120, None, 2.0)})
    got = section["configs"]["imagenet-r"]
    assert got["ece"] is not None and got["temperature"] is None and got["ece_ts"] is None
    assert "not scored in this predictions file" in got["ts_note"]
    assert section["temperature"]["value"] is None and section["reference_variant"] is None


def test_error_free_reference_half_is_not_estimable() -> None:
    configs = {"imagenet-val": ("imagenet-val", 60, None, 0.01), "imagenet-r": ("imagenet-r", 60, None, 2.0)}
    section, _ = _score(configs)
    assert section["configs"]["imagenet-val"]["accuracy"] == 1.0
    assert section["temperature"]["value"] is None
    assert "no errors" in section["temperature"]["note"]
    assert section["configs"]["imagenet-r"]["ece_ts"] is None
    assert "imagenet-val" in section["configs"]["imagenet-r"]["ts_note"]


def test_predicted_classes_without_logits_get_accuracy_only() -> None:
    table, manifest, preds, truth = _dataset(np.random.default_rng(3), CONFIGS)
    predicted = np.concatenate([truth[n][2].argmax(1) for n in CONFIGS])
    only = pa.table({"id": preds.column("id"), "prediction": predicted.tolist()})
    section = score_tables(table, manifest, only, "m")["datasets"]["classification"]
    for name, (_, y, z) in truth.items():
        got = section["configs"][name]
        assert got["accuracy"] == pytest.approx(float((z.argmax(1) == y).mean()))
        assert got["ece"] is None and got["nll"] is None and got["ece_ts"] is None
        assert got["ts_note"] == NO_LOGITS


def test_scores_are_deterministic_and_the_half_follows_the_seed() -> None:
    a, _ = _score()
    b, _ = _score()
    assert a == b
    table, manifest, preds, _ = _dataset(np.random.default_rng(0), CONFIGS)
    other = score_tables(table, manifest, preds, "m", seed=5)["datasets"]["classification"]
    assert other["configs"]["imagenet-r"]["accuracy"] == a["configs"]["imagenet-r"]["accuracy"]
    assert other["temperature"]["value"] != a["temperature"]["value"]


def test_row_results_carry_the_label_and_give_per_class_accuracy() -> None:
    from vlmrobust.evaluation.predictions.read import predictions_from_table
    from vlmrobust.evaluation.scoring.dataset import row_results
    from vlmrobust.evaluation.validate.check import validate_against
    from vlmrobust.evaluation.validate.dataset_index import DatasetIndex

    table, manifest, preds, truth = _dataset(np.random.default_rng(4), CONFIGS)
    report = validate_against(DatasetIndex.from_table(table, manifest, "config"), predictions_from_table(preds))
    rows = row_results(report)
    assert [r["id"] for r in rows] == table.column("id").to_pylist()
    section = score_tables(table, manifest, preds, "m")["datasets"]["classification"]
    for name, (_, y, z) in truth.items():
        mine = [r for r in rows if r["config"] == name]
        assert [r["label"] for r in mine] == y.tolist() and [r["predicted"] for r in mine] == z.argmax(1).tolist()
        p = np.exp(log_softmax(z, axis=1)).max(1)
        assert np.allclose([r["confidence"] for r in mine], p, rtol=1e-12)
        per_class = {c: np.mean([r["correct"] for r in mine if r["label"] == c]) for c in set(y.tolist())}
        assert np.mean(list(per_class.values())) == pytest.approx(section["configs"][name]["mean_per_class_accuracy"])


def test_the_section_follows_the_scores_schema() -> None:
    import json
    from pathlib import Path

    import jsonschema

    from vlmrobust.evaluation.scoring.dataset import dumps_scores

    schema = json.loads((Path(__file__).parents[3] / "evaluation/schemas/scores.schema.json").read_text("utf-8"))
    table, manifest, preds, _ = _dataset(np.random.default_rng(5), CONFIGS)
    scores = json.loads(dumps_scores(score_tables(table, manifest, preds, "m")))
    jsonschema.validate(scores, schema)
    scores["datasets"]["classification"]["configs"]["imagenet-r"]["over"] = "classes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(scores, schema)


def test_a_classification_dataset_directory_scores_through_the_files(tmp_path: Any) -> None:
    import json

    from tests.fixtures.classification import index_rows, random_logits, write_classification
    from tests.fixtures.score import write_jsonl, write_meta, write_parquet
    from vlmrobust.core.label_space import read_label_space
    from vlmrobust.evaluation.scoring.dataset import score

    ds = write_classification(tmp_path / "ds", n=30, k=3)
    rows = index_rows(ds)
    logits = random_logits(rows, seed=1)
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], logits)
    write_meta(preds, ds)
    section = score(ds, preds, tmp_path / "scores.json")["datasets"]["classification"]
    full, k3 = section["configs"]["toy"], section["configs"]["toy-k3"]
    assert (full["over"], full["k"], full["n_classes"]) == (LABEL_SPACE, None, 6)
    assert (k3["over"], k3["k"], k3["n_classes"]) == (K_OPTIONS, 3, 6)
    for cfg, got in (("toy", full), ("toy-k3", k3)):
        mine = [i for i, r in enumerate(rows) if r["config"] == cfg]
        z, y = np.array([logits[i] for i in mine]), np.array([rows[i]["answer"] for i in mine])
        assert got["ece"] == pytest.approx(_ece_torchmetrics(z, y), abs=1e-6)
        assert got["nll"] == pytest.approx(_nll(z, y), rel=1e-9)
        assert got["accuracy"] == pytest.approx(float((z.argmax(1) == y).mean()))
        # per-class accuracy is over the CLASSES (labels), on a K-option config too:
        # the predicted class is the candidate at the arg-max position
        labels = [rows[i]["label"] for i in mine]
        top = [rows[i]["candidates"][j] if rows[i]["candidates"] else j
               for i, j in zip(mine, z.argmax(1).tolist(), strict=True)]
        assert got["mean_per_class_accuracy"] == pytest.approx(balanced_accuracy_score(labels, top))
        assert got["n_classes_present"] == len(set(labels))
    # no imagenet-val config here: the temperature says why it is missing
    assert full["temperature"] is None and "not scored in this predictions file" in full["ts_note"]
    lines = [json.loads(x) for x in (tmp_path / "scores.rows.jsonl").read_text().splitlines()]
    assert [r["label"] for r in lines] == [r["label"] for r in rows]  # class ids, also in the K config
    # text answers (closed world): accuracy only, a text naming no class is no answer
    names = read_label_space(ds, "toy").names
    text = [{"id": r["id"], "text": names[r["label"]] if i % 3 else "no idea"} for i, r in enumerate(rows)]
    tpreds = write_jsonl(tmp_path / "t.jsonl", text)
    write_meta(tpreds, ds)
    t_section = score(ds, tpreds, tmp_path / "t.json")["datasets"]["classification"]
    for cfg in ("toy", "toy-k3"):
        n = sum(r["config"] == cfg for r in rows)
        wrong = sum(1 for i, r in enumerate(rows) if r["config"] == cfg and i % 3 == 0)
        got = t_section["configs"][cfg]
        assert got["accuracy"] == pytest.approx(1 - wrong / n) and got["no_answer"] == wrong
        assert got["ece"] is None and got["ts_note"] == NO_LOGITS


def test_wild_logit_rows_found_in_blocks_equal_the_per_value_count(monkeypatch: pytest.MonkeyPatch) -> None:
    from vlmrobust.evaluation.predictions import alignment

    rng = np.random.default_rng(7)
    lens = rng.integers(0, 6, size=400)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    flat = rng.normal(size=int(lens.sum()))
    flat[rng.choice(flat.size, 25, replace=False)] = rng.choice([np.nan, np.inf, -np.inf, 2e12], 25)
    per_value = np.repeat(np.arange(lens.size), lens)
    expected = np.flatnonzero(np.bincount(per_value, weights=~(np.abs(flat) <= 1e12), minlength=lens.size))
    monkeypatch.setattr(alignment, "ALIGN_CELLS", 37)  # many blocks, rows split across them
    assert alignment.wild_rows(flat, offsets).tolist() == expected.tolist()
    assert expected.size > 10


def test_logits_aligned_in_blocks_equal_each_rows_own_logits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Predictions rows in another order than the dataset's, rows of 40 and of 5
    logits, aligned a few rows per block (as 50,000 × 1,000 logits are): each
    dataset row holds its own predictions row's logits, −inf after its K."""
    import pyarrow as pa

    from vlmrobust.evaluation.predictions import alignment
    from vlmrobust.evaluation.predictions.read import predictions_from_table
    from vlmrobust.evaluation.validate.check import validate_against
    from vlmrobust.evaluation.validate.dataset_index import DatasetIndex

    table, manifest, preds, truth = _dataset(np.random.default_rng(8), CONFIGS)
    order = np.random.default_rng(9).permutation(preds.num_rows)
    shuffled = pa.table({"id": preds.column("id").take(order), "logits": preds.column("logits").take(order)})
    monkeypatch.setattr(alignment, "ALIGN_CELLS", 100)  # 2 rows of 40 logits per block
    report = validate_against(DatasetIndex.from_table(table, manifest, "config"),
                              predictions_from_table(shuffled))
    got = report.aligned.logits
    assert got is not None and got.shape == (table.num_rows, C)
    start = 0
    for name in CONFIGS:
        ids, _, z = truth[name]
        mine = got[start:start + ids.size]
        start += ids.size
        np.testing.assert_array_equal(mine[:, :z.shape[1]], z)
        assert np.isneginf(mine[:, z.shape[1]:]).all()
        assert report.aligned.predicted[start - ids.size:start].tolist() == z.argmax(1).tolist()
    assert start == table.num_rows


def test_valid_labels_give_a_real_style_accuracy_beside_the_single_label_one(tmp_path: Any) -> None:
    from tests.fixtures.score import png, write_meta, write_parquet
    from vlmrobust.evaluation.scoring.dataset import score

    rng = np.random.default_rng(2)
    rows: list[dict[str, Any]] = []
    for i in range(40):
        label = i % 6
        extra = [int(c) for c in rng.choice([c for c in range(6) if c != label], size=i % 3, replace=False)]
        rows.append({"id": f"v{i:02d}", "image": {"bytes": png(i), "path": None}, "label": label,
                     "candidates": [], "valid_labels": [label, *extra], "variant": "imagenet-val"})
    ds = _valid_labels_dataset(tmp_path, rows)
    z = rng.normal(size=(40, 6))
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], z.tolist())
    write_meta(preds, ds)
    got = score(ds, preds, tmp_path / "s.json")["datasets"]["classification"]["configs"]["imagenet-val"]
    top = z.argmax(1)
    assert got["accuracy"] == pytest.approx(np.mean([t == r["label"] for t, r in zip(top, rows, strict=True)]))
    real = np.mean([t in r["valid_labels"] for t, r in zip(top, rows, strict=True)])
    assert got["accuracy_valid_labels"] == pytest.approx(real) and real > got["accuracy"]


def test_valid_labels_without_the_label_are_refused_before_scoring(tmp_path: Any) -> None:
    """ReaL's rule scores a row right when its top class is a valid label; a
    row whose valid labels leave out its own label is a broken build."""
    from tests.fixtures.score import png, write_meta, write_parquet
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.evaluation.scoring.dataset import score

    rows = [{"id": f"v{i}", "image": {"bytes": png(i), "path": None}, "label": i % 6,
             "candidates": [], "valid_labels": [i % 6] if i != 3 else [5], "variant": "imagenet-val"}
            for i in range(6)]
    ds = _valid_labels_dataset(tmp_path, rows)
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows],
                          np.eye(6).tolist())
    write_meta(preds, ds)
    with pytest.raises(VlmrobustError, match=r"imagenet-val row 3 \(id 'v3'\): valid_labels \[5\] "
                                             r"do not hold its label 3; rebuild"):
        score(ds, preds, tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def _valid_labels_dataset(tmp_path: Any, rows: list[dict[str, Any]]) -> Any:
    """A one-config classification build over the toy label space whose rows
    carry ``valid_labels``."""
    import datasets

    from tests.fixtures.classification import toy_label_space
    from vlmrobust.core.kinds import CLASSIFICATION
    from vlmrobust.core.writer import BuildInfo, write_dataset

    features = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(), "label": datasets.Value("int32"),
        "candidates": datasets.Sequence(datasets.Value("int32")),
        "valid_labels": datasets.Sequence(datasets.Value("int32")), "variant": datasets.Value("string")})
    ds = tmp_path / "ds"
    write_dataset(ds, configs={"imagenet-val": rows}, features=features, card="toy",
                  info=BuildInfo("classification", "0.1.0", 0), kind=CLASSIFICATION,
                  label_spaces={"imagenet-val": toy_label_space()})
    return ds


def test_truncated_rows_are_out_of_calibration_and_undetermined_ones_of_accuracy() -> None:
    """Letters a server did not list (issue 36.3): a K-option config's ece/nll
    leave the truncated rows out, its accuracy only the rows with no option
    listed; the counts are in scores.json."""
    table, manifest, preds, truth = _dataset(np.random.default_rng(7), CONFIGS)
    ids, y, z = truth["imagenet-val-k5"]
    k5 = {i: j for j, i in enumerate(ids.tolist())}
    cut = {j: (K if j % 10 == 0 else 2) for j in range(0, ids.size, 5)}  # 40 rows, 20 with none
    counts = [cut.get(k5[i]) if i in k5 else None for i in preds.column("id").to_pylist()]
    preds = preds.append_column("truncated", pa.array(counts, pa.int64()))
    section = score_tables(table, manifest, preds, "m")["datasets"]["classification"]
    got = section["configs"]["imagenet-val-k5"]
    full = np.array([j not in cut for j in range(ids.size)])
    det = np.array([cut.get(j) != K for j in range(ids.size)])
    assert (got["truncated_excluded"], got["undetermined_excluded"]) == (40, 20)
    assert got["nll"] == pytest.approx(_nll(z[full], y[full]), rel=1e-9)
    assert got["ece"] == pytest.approx(_ece_torchmetrics(z[full], y[full]), abs=1e-6)
    assert got["accuracy"] == pytest.approx(float((z[det].argmax(1) == y[det]).mean()))
    assert "truncated_excluded" not in section["configs"]["imagenet-r"] or \
        section["configs"]["imagenet-r"]["truncated_excluded"] == 0
