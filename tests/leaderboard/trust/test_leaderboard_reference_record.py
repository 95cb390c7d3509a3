"""Only the maintainers' reference-run record gives the 'reference' badge and
the reference line's models (issues 22.5, 28.13); a model submitted several
times (a classifier under several prompt ids) is one point of a line (22.2);
predictions moved into another model's folder are refused (28.12)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

import vlmrobust
from tests.fixtures.score import dataset_rows, write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.board import IMAGENET, SELF_REPORTED, Leaderboard, ShiftFit
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.reference_runs import (
    ReferenceRecordError,
    ReferenceRun,
    ReferenceRuns,
    load_reference_runs,
    record_reference_runs,
)
from vlmrobust.leaderboard.trust.verify import load_verified_submissions

SPEC = BaselineSpec(version="t", n_bootstrap=200, headline_strategy="random")
# What evaluation/predict/dataset.py::_meta writes: a submitter can write it too.
RUN_FIELDS = {"adapter": "classifier:mine", "batch_size": 16, "world_size": 1,
              "tool_version": "0.1.0"}


def _logits(ds: Path, skill: float, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    out = []
    for r in dataset_rows(ds):
        z = rng.normal(size=r["k"])
        # variant-dependent skill: the shifted variant is harder
        z[r["answer"]] += skill - (0.6 if "rendition" in r["id"] else 0.0)
        out.append(z.round(4).tolist())
    return out


def _submit(subs: Path, ds: Path, model_id: str, *, model: str, family: str, skill: float,
            seed: int, prompt_id: str | None = None, extra: dict[str, object] | None = None,
            ) -> Path:
    pred = subs.parent / "preds" / f"{model_id}.parquet"
    pred.parent.mkdir(parents=True, exist_ok=True)
    vlmrobust.write_predictions(ds, [r["id"] for r in dataset_rows(ds)], _logits(ds, skill, seed),
                                model=model, family=family, prompt_id=prompt_id, out=pred,
                                groups={"training_data": "imagenet-1k"}
                                if family == "classifier" else None)
    if extra:  # hand-written metadata: the submitter's own keys
        import pyarrow.parquet as pq

        from vlmrobust.evaluation.predictions.meta import attach_meta, read_prediction_meta

        meta = {**read_prediction_meta(pred), **extra}
        pq.write_table(attach_meta(pq.read_table(pred), meta), pred)
    add_submission(subs, model_id, ds, pred)
    return subs / model_id


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq", n=60)


def _ref_fit(lb: Leaderboard, kind: str = "reference") -> ShiftFit:
    (f,) = [f for f in lb.fits if f.kind == kind and f.strategy == "random"]
    return f


def _board(subs: Path, mcq: Path, record: ReferenceRuns) -> Leaderboard:
    return aggregate(load_verified_submissions(subs, datasets=[mcq]), SPEC, record)


def test_self_written_run_fields_do_not_make_a_reference(mcq: Path, tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    _submit(subs, mcq, "claims", model="mine", family="classifier", skill=2.0, seed=1,
            extra=RUN_FIELDS)
    _submit(subs, mcq, "ran", model="lite", family="classifier", skill=2.5, seed=2)
    record_path = tmp_path / "reference-runs.yaml"
    record = record_reference_runs(record_path, subs, ["ran"])
    lb = _board(subs, mcq, record)
    claims, ran = lb.provenance["claims"], lb.provenance["ran"]
    assert (claims.label, ran.label) == ("self-reported", "reference")
    assert "carries reference-run fields" in claims.detail and "imagenet-mcq" in claims.detail
    # The record lists the file's bytes: replace the predictions and the badge goes.
    sha = record.runs[0].predictions_sha256
    edited = ReferenceRuns("1", (ReferenceRun("ran", IMAGENET, "0" * 64),))
    assert sha != "0" * 64
    assert _board(subs, mcq, edited).provenance["ran"].label == "self-reported"
    # A folder copied under another id is not the recorded run.
    shutil.copytree(subs / "ran", subs / "ran-copy")
    meta = yaml.safe_load((subs / "ran-copy" / "meta.yaml").read_text())
    (subs / "ran-copy" / "meta.yaml").write_text(yaml.safe_dump({**meta, "model_id": "ran-copy"}))
    scores = (subs / "ran-copy" / "scores.json").read_text().replace('"ran"', '"ran-copy"')
    (subs / "ran-copy" / "scores.json").write_text(scores)
    # ... and is no new model either: the byte-identical predictions are refused (41.2)
    with pytest.raises(LeaderboardInputError, match="a copied run is not a new model"):
        _board(subs, mcq, record)
    shutil.rmtree(subs / "ran-copy")
    # The site shows the badges the record gave.
    index = build_site(subs, tmp_path / "site", datasets=[mcq], reference_runs=record_path)
    html = index.read_text()
    row = html[html.index('data-model="claims"'):]
    assert ">self-reported</span>" in row[:row.index("</tr>")]
    row = html[html.index('data-model="ran"'):]
    assert ">reference</span>" in row[:row.index("</tr>")]


def test_self_declared_classifiers_do_not_move_the_reference_line(mcq: Path,
                                                                  tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    for i in range(3):
        _submit(subs, mcq, f"lite{i}", model=f"lite{i}", family="classifier",
                skill=1.0 + 0.8 * i, seed=i)
    _submit(subs, mcq, "vlm", model="vlm", family="vlm", skill=2.0, seed=9)
    record = record_reference_runs(tmp_path / "rec.yaml", subs, ["lite0", "lite1", "lite2"])
    before = _ref_fit(_board(subs, mcq, record))
    for i in range(3):  # random logits declaring --family classifier
        _submit(subs, mcq, f"fake{i}", model=f"fake{i}", family="classifier", skill=0.0,
                seed=100 + i, extra=RUN_FIELDS)
    lb = _board(subs, mcq, record)
    after = _ref_fit(lb)
    assert after.baselines == ("lite0", "lite1", "lite2")
    assert after.slope == before.slope and after.intercept == before.intercept
    own = _ref_fit(lb, SELF_REPORTED)
    assert own.baselines == ("fake0", "fake1", "fake2") and own.line is not None
    assert own.slope != after.slope
    # With no run recorded there is no reference line, and the reason says why.
    empty = _ref_fit(_board(subs, mcq, ReferenceRuns("1")))
    assert empty.line is None and empty.reason is not None
    assert ("6 submission(s) of the classifier family trained on imagenet-1k are not in the "
            "maintainers'") in empty.reason
    # Without the record check (family membership alone) the fakes would move it.
    unchecked = _ref_fit(aggregate(load_verified_submissions(subs, datasets=[mcq]), SPEC))
    assert len(unchecked.baselines) == 6 and unchecked.slope != after.slope


def test_one_point_per_model_whatever_its_prompt_ids(mcq: Path, tmp_path: Path) -> None:
    subs = tmp_path / "dup"
    for i in range(2):
        for p in ("p1", "p2"):
            _submit(subs, mcq, f"clf{i}-{p}", model=f"clf{i}", family="classifier",
                    skill=1.0 + i, seed=i, prompt_id=p)
    ids = [f"clf{i}-{p}" for i in range(2) for p in ("p1", "p2")]
    lb = _board(subs, mcq, record_reference_runs(tmp_path / "r.yaml", subs, ids))
    f = _ref_fit(lb)
    assert f.line is None and f.baselines == ("clf0-p1", "clf1-p1")
    assert f.reason is not None and f.reason.startswith("no line: 2 reference model(s)")
    assert dict(f.copies) == {"clf0-p1": ("clf0-p2",), "clf1-p1": ("clf1-p2",)}


def _vlm_er(subs: Path, mcq: Path, copies: int, tmp: Path) -> tuple[object, ...]:
    ids = []
    for i in range(3):
        for c in range(copies):
            mid = f"c{i}" if c == 0 else f"c{i}-p{c}"
            _submit(subs, mcq, mid, model=f"c{i}", family="classifier", skill=0.8 + 0.9 * i,
                    seed=i, prompt_id=f"p{c}")
            ids.append(mid)
    _submit(subs, mcq, "vlm", model="vlm", family="vlm", skill=2.0, seed=9)
    lb = _board(subs, mcq, record_reference_runs(tmp / f"r{copies}.yaml", subs, ids))
    f = _ref_fit(lb)
    (er,) = [e for e in lb.er["vlm"] if e.strategy == "random"]
    return f.baselines, f.slope, f.slope_ci, er.er, er.ci


def test_copies_do_not_narrow_an_interval(mcq: Path, tmp_path: Path) -> None:
    one = _vlm_er(tmp_path / "one" / "subs", mcq, 1, tmp_path)
    five = _vlm_er(tmp_path / "five" / "subs", mcq, 5, tmp_path)
    assert one[0] == ("c0", "c1", "c2") and one[4] is not None
    assert five == one


def test_moved_predictions_are_refused(mcq: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs"
    _submit(subs, mcq, "lite0", model="classifier:efficientnet-lite0", family="classifier",
            skill=2.0, seed=0)
    _submit(subs, mcq, "lite1", model="classifier:efficientnet-lite1", family="classifier",
            skill=0.5, seed=1)
    # Lite1's predictions and scores copied into Lite0's folder.
    shutil.copy(subs / "lite1" / "imagenet-mcq" / "predictions.parquet",
                subs / "lite0" / "imagenet-mcq" / "predictions.parquet")
    scores = (subs / "lite1" / "scores.json").read_text().replace('"lite1"', '"lite0"')
    (subs / "lite0" / "scores.json").write_text(scores)
    with pytest.raises(LeaderboardInputError, match="predictions cannot move between models"):
        load_verified_submissions(subs, datasets=[mcq])
    rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                       str(tmp_path / "site"), "--datasets", str(mcq)], capsys)
    assert rc == 1 and f"{subs / 'lite0'}" in err and "efficientnet-lite1" in err
    one_line_error(err)
    assert not (tmp_path / "site").exists()


def test_record_cli_and_malformed_records(mcq: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    subs = tmp_path / "subs"
    _submit(subs, mcq, "m", model="m", family="classifier", skill=1.0, seed=0)
    rec = tmp_path / "rec.yaml"
    rc, _ = run_cli(["leaderboard", "record-reference", "--submissions", str(subs),
                     "--model-id", "m", "--record", str(rec)], capsys)
    assert rc == 0
    (run,) = load_reference_runs(rec).runs
    import hashlib

    stored = (subs / "m" / "imagenet-mcq" / "predictions.parquet").read_bytes()
    assert (run.model_id, run.dataset) == ("m", IMAGENET)
    assert run.predictions_sha256 == hashlib.sha256(stored).hexdigest()
    rc, _ = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                     str(tmp_path / "site"), "--datasets", str(mcq), "--reference-runs",
                     str(rec)], capsys)
    assert rc == 0 and ">reference</span>" in (tmp_path / "site" / "index.html").read_text()
    # The packaged record lists no run: the default build gives no badge.
    assert load_reference_runs().runs == ()
    for text, fix in (("version: 1\nruns: [{model_id: m}]", "exactly model_id"),
                      ("version: 1\nruns: [{model_id: m, dataset: x, predictions_sha256: AB}]",
                       "not a lower-case hex"),
                      ("[1, 2]", "needs a mapping")):
        rec.write_text(text)
        with pytest.raises(ReferenceRecordError, match=fix):
            load_reference_runs(rec)
        rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                           str(tmp_path / "site2"), "--datasets", str(mcq), "--reference-runs",
                           str(rec)], capsys)
        assert rc == 1 and str(rec) in err
        one_line_error(err)
    assert not (tmp_path / "site2").exists()


def test_folder_model_check_each_rule(tmp_path: Path) -> None:
    from vlmrobust.evaluation.model_meta import ModelMeta
    from vlmrobust.leaderboard.trust.evidence import DatasetEvidence
    from vlmrobust.leaderboard.trust.verify import check_folder_model

    def ev(model: str, **meta: object) -> DatasetEvidence:
        return DatasetEvidence("a" * 64, "b" * 64, model, None, None, dict(meta))

    folder = tmp_path / "lite0"
    meta = ModelMeta(model_id="lite0", name="Lite0", adapter="lite0-adapter")
    check_folder_model(folder, meta, {"imagenet-mcq": ev("lite0-adapter"),
                                      "bench-c": ev("lite0-adapter", model_id="lite0")})
    for evidence, needle in (
            ({"bench-c": ev("lite0-adapter", model_id="lite1")}, "names model_id 'lite1'"),
            ({"bench-c": ev("lite1-adapter")}, "holds 'lite0-adapter'"),
    ):
        with pytest.raises(LeaderboardInputError, match=needle):
            check_folder_model(folder, meta, evidence)
    # Without an adapter in meta.yaml the datasets must still agree with each other.
    bare = ModelMeta(model_id="lite0", name="Lite0")
    with pytest.raises(LeaderboardInputError, match="bench-c in the folder 'lite0' names 'x'"):
        check_folder_model(folder, bare, {"bench-c": ev("x"), "imagenet-mcq": ev("y")})
