"""ImageNet-Vid-Robust's benign and pm-k accuracy (Shankar et al. 2019), as the
release's evaluation scores them: over anchors, a frame right when its top
class is any of its valid labels, pm-k right only when every frame of the set
is; the intervals resample anchors, not frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest

from tests.fixtures.classification import toy_label_space
from tests.fixtures.score import png, write_meta, write_parquet
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.scoring.classification import ConfigData, classification_scores
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.metrics.accuracy import accuracy_ci
from vlmrobust.metrics.lines.perturbation_sets import set_correctness

CONFIG = "imagenet-vid-robust"
N_CLASSES = 6
# Per set: (anchor's valid labels, the predicted class per frame, anchor first, and
# each neighbour's valid labels). Hand-scored below.
SETS: dict[str, tuple[list[list[int]], list[int]]] = {
    "a": ([[0], [0], [0], [0]], [0, 0, 0, 0]),      # all right: benign 1, pm-k 1
    "b": ([[1], [1], [1], [1]], [1, 1, 3, 1]),      # anchor right, one neighbour wrong: 1, 0
    "c": ([[2], [2], [2]], [4, 2, 2]),              # anchor wrong: 0, 0
    "d": ([[3, 5], [3, 5], [5]], [5, 3, 5]),        # right through second valid labels: 1, 1
    "e": ([[4]], [4]),                               # a set of its anchor alone: 1, 1
}
BENIGN, PMK = 4 / 5, 3 / 5


def _key(s: str, f: int) -> str:
    return f"val/ILSVRC2015_val_{s}/{f:06d}.JPEG"


def _rows(sets: dict[str, tuple[list[list[int]], list[int]]]) -> tuple[list[dict[str, Any]], list[int]]:
    rows, predicted = [], []
    for s, (valid, pred) in sets.items():
        for f, (v, p) in enumerate(zip(valid, pred, strict=True)):
            rows.append({"id": f"{CONFIG}/{_key(s, f)}", "label": v[0], "valid_labels": v,
                         "pmset": _key(s, 0), "source_file": _key(s, f)})
            predicted.append(p)
    # the scorer must not rely on a set's frames being contiguous or anchor-first
    order = np.random.default_rng(3).permutation(len(rows))
    return [rows[i] for i in order], [predicted[i] for i in order]


def _write(out: Path, rows: list[dict[str, Any]]) -> Path:
    features = datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(), "label": datasets.Value("int32"),
        "candidates": datasets.Sequence(datasets.Value("int32")),
        "valid_labels": datasets.Sequence(datasets.Value("int32")), "variant": datasets.Value("string"),
        "source_file": datasets.Value("string"), "pmset": datasets.Value("string")})
    full = [{**r, "image": {"bytes": png(i), "path": None}, "candidates": [], "variant": CONFIG}
            for i, r in enumerate(rows)]
    write_dataset(out, configs={CONFIG: full}, features=features, card="toy vid-robust",
                  info=BuildInfo("classification", "0.1.0", 0), kind=CLASSIFICATION,
                  label_spaces={CONFIG: toy_label_space()})
    return out


def _score(tmp_path: Path, ds: Path, rows: list[dict[str, Any]], predicted: list[int],
           name: str) -> dict[str, Any]:
    logits = np.eye(N_CLASSES)[predicted] * 4.0
    preds = write_parquet(tmp_path / f"{name}.parquet", [r["id"] for r in rows], logits.tolist())
    write_meta(preds, ds)
    got: dict[str, Any] = score(ds, preds, tmp_path / f"{name}.json")["datasets"]["classification"]
    return got["configs"][CONFIG]


def test_benign_and_pmk_accuracy_equal_the_hand_scored_sets(tmp_path: Path) -> None:
    rows, predicted = _rows(SETS)
    ds = _write(tmp_path / "ds", rows)
    got = _score(tmp_path, ds, rows, predicted, "p")
    assert got["anchors"] == 5
    assert got["benign_accuracy"] == pytest.approx(BENIGN) and got["pmk_accuracy"] == pytest.approx(PMK)
    right = sum(p in r["valid_labels"] for p, r in zip(predicted, rows, strict=True))
    assert got["accuracy_valid_labels"] == pytest.approx(right / len(rows))
    import json

    import jsonschema

    schema = json.loads((Path(__file__).parents[3] / "evaluation/schemas/scores.schema.json").read_text("utf-8"))
    jsonschema.validate(json.loads((tmp_path / "p.json").read_text("utf-8")), schema)
    lo, hi = got["pmk_accuracy_ci"]
    assert lo <= PMK <= hi and got["benign_accuracy_ci"][0] <= BENIGN <= got["benign_accuracy_ci"][1]
    # set a: its anchor stays right, one neighbour turns wrong: pm-k loses a set, benign nothing
    flip = next(i for i, r in enumerate(rows) if r["source_file"] == _key("a", 2))
    worse = [3 if i == flip else p for i, p in enumerate(predicted)]
    got2 = _score(tmp_path, ds, rows, worse, "q")
    assert got2["benign_accuracy"] == pytest.approx(BENIGN)
    assert got2["pmk_accuracy"] == pytest.approx(PMK - 1 / 5)
    assert got2["accuracy_valid_labels"] == pytest.approx((right - 1) / len(rows))
    # and the anchor of set a wrong: both lose it
    anchor = next(i for i, r in enumerate(rows) if r["source_file"] == _key("a", 0))
    got3 = _score(tmp_path, ds, rows, [3 if i == anchor else p for i, p in enumerate(predicted)], "r")
    assert got3["benign_accuracy"] == pytest.approx(BENIGN - 1 / 5)
    assert got3["pmk_accuracy"] == pytest.approx(PMK - 1 / 5)


def test_a_set_without_its_anchor_frame_is_refused_in_one_line(tmp_path: Path) -> None:
    rows, predicted = _rows(SETS)
    keep = [i for i, r in enumerate(rows) if r["source_file"] != _key("b", 0)]
    ds = _write(tmp_path / "ds", [rows[i] for i in keep])
    with pytest.raises(VlmrobustError) as err:
        _score(tmp_path, ds, [rows[i] for i in keep], [predicted[i] for i in keep], "p")
    msg = str(err.value)
    assert "\n" not in msg and _key("b", 0) in msg and "anchor" in msg
    assert not (tmp_path / "p.json").exists()


def _config(sets: list[list[bool]]) -> ConfigData:
    """A full-label-space config with one row per frame; frame 0 of each set is
    its anchor; each frame's prediction is right or wrong as given."""
    ok = np.concatenate([np.asarray(s, dtype=bool) for s in sets])
    pmset = np.array([f"s{j}" for j, s in enumerate(sets) for _ in s], dtype=object)
    anchor = np.concatenate([np.arange(len(s)) == 0 for s in sets])
    labels = np.zeros(ok.size, dtype=np.int64)
    return ConfigData(config=CONFIG, ids=np.array([f"r{i}" for i in range(ok.size)], dtype=object),
                      labels=labels, answer=labels, predicted=np.where(ok, 0, 1).astype(np.int64),
                      logits=None, n_classes=N_CLASSES, variant=CONFIG, pmset=pmset, anchor=anchor)


def test_the_pmk_interval_resamples_anchors_not_frames() -> None:
    """Two anchors x 200 frames: one set all right, one with a wrong frame. Per
    anchor pm-k is (1, 0), so a bootstrap over anchors spans [0, 1]; a bootstrap
    over iid frames of the same rows would be a few points wide."""
    frames = 200
    second = [True] * frames
    second[7] = False
    d = _config([[True] * frames, second])
    got = classification_scores([d], seed=0)[0][CONFIG]
    assert got["pmk_accuracy"] == 0.5 and got["benign_accuracy"] == 1.0
    assert got["pmk_accuracy_ci"] == [0.0, 1.0]
    per_frame = np.concatenate([[True] * frames, second])
    lo, hi = accuracy_ci(per_frame, seed=0)
    assert hi - lo < 0.02  # what an iid-rows interval would claim
    assert got["benign_accuracy_ci"] == [1.0, 1.0]


def test_the_interval_matches_an_anchor_resampling_bootstrap_recomputed_from_frames() -> None:
    """An independent bootstrap: draw anchors with replacement, recompute pm-k
    from the drawn sets' frames; its percentile bounds agree within Monte-Carlo error."""
    rng = np.random.default_rng(11)
    sets = [(rng.random(int(rng.integers(1, 12))) > 0.08).tolist() for _ in range(60)]
    got = classification_scores([_config(sets)], seed=5)[0][CONFIG]
    all_right = np.array([all(s) for s in sets], dtype=float)
    assert got["pmk_accuracy"] == pytest.approx(all_right.mean())
    draw = np.random.default_rng(99).integers(0, len(sets), size=(4000, len(sets)))
    stats = np.array([np.mean([all(sets[j]) for j in row]) for row in draw])
    lo, hi = np.quantile(stats, [0.025, 0.975])
    assert got["pmk_accuracy_ci"][0] == pytest.approx(lo, abs=0.04)
    assert got["pmk_accuracy_ci"][1] == pytest.approx(hi, abs=0.04)
    assert hi - lo > 0.15  # 60 anchors: a wide interval, not one over ~350 frames


def test_set_correctness_refuses_a_set_with_two_anchors_or_none() -> None:
    with pytest.raises(ValueError, match="'a' has 2 anchor rows"):
        set_correctness([1, 1], ["a", "a"], [1, 1])
    with pytest.raises(ValueError, match="'b' has 0 anchor rows"):
        set_correctness([1, 1], ["a", "b"], [1, 0])
    with pytest.raises(ValueError, match="one length"):
        set_correctness([1, 1], ["a"], [1, 0])


def test_configs_without_perturbation_sets_have_no_pmk_fields() -> None:
    d = _config([[True, False]])
    plain = ConfigData(config="x", ids=d.ids, labels=d.labels, answer=d.answer, predicted=d.predicted,
                       logits=None, n_classes=N_CLASSES)
    got = classification_scores([plain], seed=0)[0]["x"]
    assert not {"anchors", "pmk_accuracy", "benign_accuracy"} & set(got)


def test_the_leaderboard_reads_the_block_and_refuses_pmk_above_benign(tmp_path: Path) -> None:
    from vlmrobust.leaderboard.scores_json import parse_scores
    from vlmrobust.leaderboard.submission import LeaderboardInputError

    entry = {"n": 12, "accuracy": 0.5, "over": "label-space", "anchors": 4, "benign_accuracy": 0.75,
             "benign_accuracy_ci": [0.25, 1.0], "pmk_accuracy": 0.5, "pmk_accuracy_ci": [0.0, 1.0]}
    raw = {"schema_version": 1, "model_id": "m",
           "datasets": {"classification": {"kind": "classification", "configs": {CONFIG: entry}}}}
    got = parse_scores(raw, tmp_path / "scores.json", "m")["classification"].configs[0].perturbation
    assert got is not None and (got.anchors, got.benign, got.pmk, got.pmk_ci) == (4, 0.75, 0.5, (0.0, 1.0))
    entry["pmk_accuracy"] = 0.8
    with pytest.raises(LeaderboardInputError) as err:
        parse_scores(raw, tmp_path / "scores.json", "m")
    assert "\n" not in str(err.value) and f"configs.{CONFIG}.pmk_accuracy" in str(err.value)


def test_a_build_from_the_published_layout_scores_its_anchors(tmp_path: Path) -> None:
    """The builder's rows (id, source_file, pmset from pmsets.json) through the
    scorer: 3 videos x 3 frames; video 1's frames list two valid classes."""
    import json

    from tests.fixtures.classification_layouts import raw_spec, vid_layout
    from vlmrobust.builders.classification.build import build
    from vlmrobust.builders.families import BuildOptions
    from vlmrobust.core.datadir import read_table

    src = tmp_path / "src"
    vid_layout(src)
    pm_file = src / CONFIG / "metadata" / "pmsets.json"
    pm = json.loads(pm_file.read_text())
    shared = _key_of(0, 2)  # also listed in video 1's set: one row, in video 0's set
    pm[_key_of(1, 0)] = [*pm[_key_of(1, 0)], shared]
    pm_file.write_text(json.dumps(pm))
    ds = tmp_path / "ds"
    m = build(raw_spec(variants=[CONFIG], label_set_sizes=[]), Path("x.yaml"),
              BuildOptions(out=ds, source_root=src, progress=False))
    assert m["notes"][CONFIG]["frames_in_several_sets"] == 1 and m["configs"][CONFIG] == 9
    rows = read_table(ds, CONFIG, columns=["id", "source_file", "pmset"]).to_pylist()
    assert next(r["pmset"] for r in rows if r["source_file"] == shared) == _key_of(0, 0)
    video = {r["id"]: int(r["source_file"].split("/")[1][-1]) for r in rows}
    # right everywhere (video 1 through its second valid class, 0) but on frame 2 of video 2
    predicted = [0 if video[r["id"]] in (0, 1) else (2 if not r["source_file"].endswith("2.JPEG") else 1)
                 for r in rows]
    logits = (np.eye(3)[predicted] * 4.0).tolist()
    preds = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], logits)
    write_meta(preds, ds)
    got = score(ds, preds, tmp_path / "s.json")["datasets"]["classification"]["configs"][CONFIG]
    assert (got["anchors"], got["benign_accuracy"]) == (3, 1.0)
    assert got["pmk_accuracy"] == pytest.approx(2 / 3) and got["accuracy_valid_labels"] == pytest.approx(8 / 9)
    assert got["accuracy"] == pytest.approx(5 / 9)  # video 1's stored label is 1, not 0


def _key_of(video: int, frame: int) -> str:
    return f"val/ILSVRC2015_val_{video:08d}/{frame:06d}.JPEG"
