"""Issue 14: submissions that cannot be forged, misattributed or stale.

Each test reproduces a case that passed (or crashed) before: predictions of an
earlier build without metadata, metadata per folder, a trusted scores.json, a
fingerprint blind to the question text, a non-atomic submit, newline model ids,
unbounded reads, tracebacks instead of one-line errors."""

from __future__ import annotations

import errno
import hashlib
import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import vlmrobust
from tests.score_fixtures import (
    bench_c_features,
    bench_c_rows,
    dataset_rows,
    png,
    random_logits,
    write_bench_c,
    write_jsonl,
    write_mcq,
    write_meta,
    write_parquet,
)
from tests.submission_fixtures import real_submissions
from vlmrobust.cli import main
from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.core.fingerprint import ContentHasher
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation import submissions as submissions_mod
from vlmrobust.evaluation.predictions_meta import PARQUET_META_KEY, read_prediction_meta
from vlmrobust.evaluation.score import score
from vlmrobust.evaluation.submissions import add_submission, validate_model_id
from vlmrobust.evaluation.validate import validate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.publish import build_site, publish_site
from vlmrobust.leaderboard.submission import LeaderboardInputError
from vlmrobust.leaderboard.verify import load_verified_submissions


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq")


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(argv)
    err = capsys.readouterr().err
    return rc, err


def _one_line_error(err: str) -> None:
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def _perfect(ds: Path, out: Path, **meta: Any) -> Path:
    rows = dataset_rows(ds)
    logits = [[10.0 if j == r["answer"] else 0.0 for j in range(r["k"])] for r in rows]
    return vlmrobust.write_predictions(ds, [r["id"] for r in rows], logits, out=out,
                                       model=meta.pop("model", "oracle"),
                                       family=meta.pop("family", "other"), **meta)


# -- stale: an earlier build's predictions ------------------------------------------


def _bench_c_build(out: Path, seed: int) -> Path:
    rows = bench_c_rows()
    for r in rows:  # a "reseeded rebuild": other answers for the same ids
        r["answer"] = (r["answer"] + seed) % 4
    write_dataset(out, configs={"default": rows}, features=bench_c_features(),
                  card="toy", info=BuildInfo("bench-c", "0.1.0", seed, sample=True))
    return out


def test_predictions_of_an_earlier_build_are_refused(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = _bench_c_build(tmp_path / "old", 0)
    pred = _perfect(old, tmp_path / "p" / "predictions.parquet")
    assert score(old, pred, tmp_path / "s.json")["datasets"]["bench-c"]["configs"]["default"][
        "accuracy"] == 1.0
    new = _bench_c_build(tmp_path / "new", 1)
    with pytest.raises(SubmissionError, match="dataset fingerprint mismatch"):
        validate(new, pred)
    # Without metadata the rows alone match the new build: refused all the same.
    bare = write_parquet(tmp_path / "bare" / "predictions.parquet",
                         pq.read_table(pred).column("id").to_pylist(),
                         pq.read_table(pred).column("logits").to_pylist())
    subs = tmp_path / "subs"
    rc, err = _cli(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset",
                    str(new), "--predictions", str(bare)], capsys)
    assert rc == 1 and "no metadata" in err and "write_predictions" in err
    _one_line_error(err)
    assert not (subs / "m").exists()
    rc, err = _cli(["score", "--dataset", str(new), "--predictions", str(bare), "--out",
                    str(tmp_path / "s2.json")], capsys)
    assert rc == 1 and "no metadata" in err and not (tmp_path / "s2.json").exists()


def test_missing_fingerprint_is_refused(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    p = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], random_logits(rows))
    meta = write_meta(p, mcq)
    data = yaml.safe_load(meta.read_text())
    del data["dataset"]["fingerprint"]
    meta.write_text(yaml.safe_dump(data))
    with pytest.raises(SubmissionError, match=r"dataset: 'fingerprint' is a required property"):
        validate(mcq, p)


# -- the fingerprint covers everything a model sees -----------------------------------


BASE_ROW = {"id": "a", "image": png(1), "question": "What is it?", "options": ["x", "y"],
            "answer": 1}


def _fp(prompt: str | None = "what-type", **change: Any) -> str:
    h = ContentHasher(prompt)
    h.update("cfg", {**BASE_ROW, **change})
    return h.hexdigest()


@pytest.mark.parametrize("change", [
    {"image": png(2)}, {"question": "What is this object?"}, {"options": ["x", "z"]},
    {"options": ["y", "x"]}, {"answer": 0}, {"id": "b"}, {"prompt": "Answer with the letter."},
])
def test_fingerprint_changes_with_what_a_model_sees(change: dict[str, Any]) -> None:
    assert _fp(**change) != _fp()
    assert _fp() == _fp()  # deterministic


def test_fingerprint_changes_with_the_dataset_prompt() -> None:
    assert _fp(prompt="what-object") != _fp(prompt="what-type") != _fp(prompt=None)


def test_question_prompt_change_makes_old_predictions_stale(tmp_path: Path) -> None:
    def build(out: Path, question: str, prompt: str) -> Path:
        rows = [{**r, "question": question} for r in bench_c_rows()]
        write_dataset(out, configs={"default": rows}, features=bench_c_features(), card="t",
                      info=BuildInfo("bench-c", "0.1.0", 0, extra={"question_prompt": prompt}))
        return out

    a = build(tmp_path / "a", "What type of object is this?", "what-type")
    b = build(tmp_path / "b", "What object is this?", "what-object")
    fa = json.loads((a / "manifest.json").read_text())["fingerprint"]
    fb = json.loads((b / "manifest.json").read_text())["fingerprint"]
    assert fa != fb
    pred = _perfect(a, tmp_path / "p.parquet")
    with pytest.raises(SubmissionError, match="dataset fingerprint mismatch"):
        validate(b, pred)


# -- misattribution: metadata per predictions file -------------------------------------


class ToyAdapter:
    """Deterministic logits without a model: ``kind`` picks the preferred option."""

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.family = "other"
        self.kind = kind

    def option_logits(self, rows: Any) -> np.ndarray:
        k = max(len(r["options"]) for r in rows)
        out = np.full((len(rows), k), np.nan, dtype=np.float32)
        for i, r in enumerate(rows):
            n = len(r["options"])
            out[i, :n] = 0.0
            out[i, 0 if self.kind == "first" else n - 1] = 5.0
        return out

    def embed_images(self, images: Any) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError


def test_two_predict_runs_into_one_folder_keep_their_model_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.predict_fixtures import write_mcq as write_photo_mcq
    from vlmrobust.evaluation.predict import predict_dataset

    ds = write_photo_mcq(tmp_path / "ds", {"photo": 6}, with_class_ids=False)
    folder = tmp_path / "runs"
    a = predict_dataset(ToyAdapter("toy-first", "first"), ds, folder / "a.parquet",
                        progress=False)
    b = predict_dataset(ToyAdapter("toy-last", "last"), ds, folder / "b.jsonl", progress=False)
    assert sorted(p.name for p in folder.iterdir()) == ["a.parquet", "b.jsonl",
                                                        "b.jsonl.meta.yaml"]
    for path, model in ((a, "toy-first"), (b, "toy-last")):
        out = tmp_path / f"{model}.json"
        assert main(["score", "--dataset", str(ds), "--predictions", str(path), "--out",
                     str(out)]) == 0
        assert json.loads(out.read_text())["model_id"] == model
    sa = json.loads((tmp_path / "toy-first.json").read_text())["datasets"]["imagenet-mcq"]
    sb = json.loads((tmp_path / "toy-last.json").read_text())["datasets"]["imagenet-mcq"]
    assert sa["configs"]["photo"]["accuracy"] != sb["configs"]["photo"]["accuracy"]
    assert sa["predictions_sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    capsys.readouterr()


def test_submit_refuses_another_models_predictions_under_an_id(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "imagenet-mcq")
    bc = write_bench_c(tmp_path / "bench-c")
    subs = tmp_path / "subs"
    add_submission(subs, "m", ds, _perfect(ds, tmp_path / "a.parquet", model="model-a"))
    with pytest.raises(SubmissionError, match="holds predictions of model 'model-a'"):
        add_submission(subs, "m", bc, _perfect(bc, tmp_path / "b.parquet", model="model-b"))
    with pytest.raises(SubmissionError, match="names model_id 'other'"):
        add_submission(subs, "m", bc, _perfect(bc, tmp_path / "c.parquet", model="model-a",
                                               model_id="other"))
    assert sorted(p.name for p in (subs / "m").iterdir()) == ["imagenet-mcq", "meta.yaml",
                                                              "scores.json"]


# -- the leaderboard recomputes, never trusts ----------------------------------------------


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    return real_submissions(tmp_path_factory.mktemp("board"), 3)


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_leaderboard_recomputes_scores(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs, datasets = board
    verified = load_verified_submissions(subs, datasets=datasets)
    parsed = load_submissions(subs)
    assert [s.model_id for s in verified] == ["model-0", "model-1", "model-2"]
    for v, p in zip(verified, parsed, strict=True):
        assert v.datasets == p.datasets  # honest files: recomputed == stored
    index = build_site(subs, tmp_path / "site", datasets=datasets)
    assert index.is_file()


def test_forged_scores_without_predictions_are_refused(
        board: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    datasets = board[1]
    forged = subs / "forged"
    _copy(subs / "model-0", forged)
    scores = json.loads((forged / "scores.json").read_text())
    scores["model_id"] = "forged"
    scores["datasets"]["imagenet-mcq"]["configs"]["sample-photo-random"]["accuracy"] = 1.0
    (forged / "scores.json").write_text(json.dumps(scores))
    (forged / "meta.yaml").write_text((forged / "meta.yaml").read_text().replace(
        "model_id: model-0", "model_id: forged"))
    site = tmp_path / "site"
    rc, err = _cli(["leaderboard", "publish", "--submissions", str(subs), "--site", str(site),
                    "--datasets", *map(str, datasets)], capsys)
    assert rc == 1 and str(forged / "scores.json") in err and "accuracy is 1.0" in err
    _one_line_error(err)
    assert not site.exists()
    # Without its predictions the same file is refused with the missing path.
    (forged / "imagenet-mcq" / "predictions.parquet").unlink()
    with pytest.raises(LeaderboardInputError, match=r"predictions\.parquet: missing"):
        build_site(subs, site, datasets=datasets)
    # A scores.json with no predictions at all (the reproduced forgery).
    import shutil

    shutil.rmtree(forged / "imagenet-mcq")
    shutil.rmtree(forged / "bench-c")
    with pytest.raises(LeaderboardInputError, match=r"forged/imagenet-mcq/predictions.parquet"):
        publish_site(subs, site, datasets=datasets)
    assert not site.exists()


def test_swapped_predictions_are_refused(board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    # model-2's better predictions under model-0, with model-0's scores.json
    import shutil

    shutil.copy(subs / "model-2" / "bench-c" / "predictions.parquet",
                subs / "model-0" / "bench-c" / "predictions.parquet")
    with pytest.raises(LeaderboardInputError, match="predictions_sha256"):
        load_verified_submissions(subs, datasets=board[1])


def test_leaderboard_needs_the_datasets(board: tuple[Path, list[Path]], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    subs = _copy(board[0], tmp_path / "somewhere" / "subs")
    monkeypatch.delenv("VLMROBUST_DATASETS", raising=False)
    with pytest.raises(LeaderboardInputError, match="--datasets DIR"):
        load_verified_submissions(subs)
    # Found by fingerprint in a store: an env var, or datasets/ beside the submissions.
    monkeypatch.setenv("VLMROBUST_DATASETS", str(board[1][0].parent))
    assert len(load_verified_submissions(subs)) == 3
    monkeypatch.delenv("VLMROBUST_DATASETS")
    _copy(board[1][0].parent, tmp_path / "somewhere" / "datasets")
    assert len(load_verified_submissions(subs)) == 3


# -- submit is all-or-nothing and locked -------------------------------------------------


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_submit_failure_midway_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "imagenet-mcq")
    bc = write_bench_c(tmp_path / "bench-c")
    subs = tmp_path / "subs"
    add_submission(subs, "m", ds, _perfect(ds, tmp_path / "a.parquet"))
    before = _snapshot(subs / "m")

    def boom(folder: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(submissions_mod, "_fsync_tree", boom)
    with pytest.raises(OSError):
        add_submission(subs, "m", bc, _perfect(bc, tmp_path / "b.parquet"))
    assert _snapshot(subs / "m") == before
    # through the CLI: one line naming the cause
    rc, err = _cli(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset",
                    str(bc), "--predictions", str(tmp_path / "b.parquet")], capsys)
    assert rc == 1 and "No space left on device" in err
    _one_line_error(err)
    assert _snapshot(subs / "m") == before
    assert not [p for p in subs.iterdir() if ".building-" in p.name]


def test_kill_between_the_swap_renames_is_recovered(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "imagenet-mcq")
    bc = write_bench_c(tmp_path / "bench-c")
    subs = tmp_path / "subs"
    add_submission(subs, "m", ds, _perfect(ds, tmp_path / "a.parquet"))
    before = _snapshot(subs / "m")
    os.replace(subs / "m", subs / ".m.old-4242")  # what a kill after the first rename leaves
    scores = add_submission(subs, "m", bc, _perfect(bc, tmp_path / "b.parquet"))
    assert sorted(scores["datasets"]) == ["bench-c", "imagenet-mcq"]
    after = _snapshot(subs / "m")
    assert after["imagenet-mcq/predictions.parquet"] == before["imagenet-mcq/predictions.parquet"]
    assert not list(subs.glob(".m.old-*"))


def _submit_worker(args: tuple[str, str, str, str]) -> str:
    subs, model_id, ds, pred = args
    add_submission(subs, model_id, ds, pred)
    return ds


def test_concurrent_submits_to_one_model_keep_every_section(tmp_path: Path) -> None:
    datasets = [write_mcq(tmp_path / "imagenet-mcq"), write_bench_c(tmp_path / "bench-c")]
    preds = [_perfect(d, tmp_path / f"p{i}.parquet") for i, d in enumerate(datasets)]
    ctx = multiprocessing.get_context("fork")
    for round_ in range(3):
        subs = tmp_path / f"subs{round_}"
        jobs = [(str(subs), "m", str(d), str(p)) for d, p in zip(datasets, preds, strict=True)]
        with ctx.Pool(2) as pool:
            pool.map(_submit_worker, jobs)
        scores = json.loads((subs / "m" / "scores.json").read_text())
        assert sorted(scores["datasets"]) == ["bench-c", "imagenet-mcq"]
        assert sorted(p.name for p in (subs / "m").iterdir()) == [
            "bench-c", "imagenet-mcq", "meta.yaml", "scores.json"]


# -- ids and limits ---------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["abc\n", "abc\r\n", "\nabc", "a\nb", "abc\x00"])
def test_model_ids_are_matched_whole(bad: str, tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="invalid model id"):
        validate_model_id(bad)
    with pytest.raises(SubmissionError, match="model_id"):
        from vlmrobust.evaluation.schemas import check_schema

        check_schema({"model_id": bad, "name": "x", "family": "vlm"}, "submission-meta", "m")


def test_newline_model_id_in_meta_yaml_is_refused_by_the_leaderboard(
        board: tuple[Path, list[Path]], tmp_path: Path) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    meta = subs / "model-1" / "meta.yaml"
    data = yaml.safe_load(meta.read_text())
    data["model_id"] = "model-1\n"
    meta.write_text(yaml.safe_dump(data))
    with pytest.raises(LeaderboardInputError, match=r"meta.yaml: model_id: 'model-1\\n' is not a valid"):
        load_submissions(subs)


def test_parquet_expanding_to_millions_of_rows_is_refused(mcq: Path, tmp_path: Path) -> None:
    n = 2_000_000
    table = pa.table({"id": pa.array(["x"] * n), "logits": pa.array([[0.0]] * n)})
    meta = read_prediction_meta(_perfect(mcq, tmp_path / "ok.parquet"))
    table = table.replace_schema_metadata({PARQUET_META_KEY: json.dumps(meta).encode()})
    p = tmp_path / "bomb.parquet"
    pq.write_table(table, p, compression="zstd")
    assert p.stat().st_size < 200_000
    with pytest.raises(SubmissionError, match=r"2000000 rows, more than the 100 allowed"):
        validate(mcq, p)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_metadata_linked_to_a_device_is_refused(mcq: Path, tmp_path: Path, target: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    if not Path(target).exists():
        pytest.skip(f"{target} not available")
    rows = dataset_rows(mcq)
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "logits": x}
                                           for r, x in zip(rows, random_logits(rows), strict=True)])
    (tmp_path / "p.jsonl.meta.yaml").symlink_to(target)
    rc, err = _cli(["validate", "--dataset", str(mcq), "--predictions", str(p)], capsys)
    assert rc == 1 and "not a regular file" in err
    _one_line_error(err)
    # the predictions file itself, and a leaderboard's meta.yaml
    (tmp_path / "q.jsonl").symlink_to(target)
    rc, err = _cli(["validate", "--dataset", str(mcq), "--predictions",
                    str(tmp_path / "q.jsonl")], capsys)
    assert rc == 1 and "not a regular file" in err
    import shutil

    ds = shutil.copytree(mcq, tmp_path / "ds")
    (ds / "manifest.json").unlink()
    (ds / "manifest.json").symlink_to(target)
    rc, err = _cli(["validate", "--dataset", str(ds), "--predictions", str(p)], capsys)
    assert rc == 1 and "manifest.json: not a regular file" in err
    _one_line_error(err)


def test_fifo_is_refused_without_blocking(mcq: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SubmissionError, match="not a regular file"):
        validate(mcq, fifo)


def test_oversized_metadata_is_refused(mcq: Path, tmp_path: Path) -> None:
    p = _perfect(mcq, tmp_path / "p.jsonl")
    side = tmp_path / "p.jsonl.meta.yaml"
    side.write_text(side.read_text() + "notes: " + "x" * 300_000 + "\n")
    with pytest.raises(SubmissionError, match="more than the 262144 allowed"):
        validate(mcq, p)


# -- one line, never a traceback -----------------------------------------------------------


def _with_meta(p: Path, ds: Path) -> Path:
    write_meta(p, ds)
    return p


def test_reproduced_tracebacks_are_one_line_errors(mcq: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rows = dataset_rows(mcq)
    ids = [r["id"] for r in rows]
    good = _perfect(mcq, tmp_path / "good" / "p.parquet")
    cases: dict[str, tuple[Path, str]] = {
        "prediction >= 2**53 (parquet int64)": (_with_meta(write_parquet(
            tmp_path / "a" / "p.parquet", ids, prediction=[2**62] * len(ids)), mcq),
            "prediction out of range"),
        "prediction >= 2**53 (jsonl)": (_with_meta(write_jsonl(
            tmp_path / "b" / "p.jsonl", [{"id": i, "prediction": 2**53 + 1} for i in ids]), mcq),
            "prediction out of range"),
        "logits of ±1e308": (_with_meta(write_jsonl(
            tmp_path / "c" / "p.jsonl", [{"id": r["id"], "logits": [1e308, -1e308] + [0.0] * (r["k"] - 2)}
                                         for r in rows]), mcq), "non-finite logits"),
        "deeply nested JSON line": (_with_meta(write_jsonl(tmp_path / "d" / "p.jsonl", []), mcq),
                                    "not a JSON object"),
    }
    (tmp_path / "d" / "p.jsonl").write_text('{"id": "a", "logits": ' + "[" * 100_000
                                            + "]" * 100_000 + "}\n")
    nested = tmp_path / "e" / "p.jsonl"
    nested.parent.mkdir()
    nested.write_bytes((tmp_path / "b" / "p.jsonl").read_bytes())
    (tmp_path / "e" / "p.jsonl.meta.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    cases["deeply nested YAML metadata"] = (nested, "nested deeper than")
    for name, (path, needle) in cases.items():
        out = tmp_path / "out" / "scores.json"
        rc, err = _cli(["score", "--dataset", str(mcq), "--predictions", str(path), "--out",
                        str(out)], capsys)
        assert rc == 1 and needle in err, (name, err)
        _one_line_error(err)
        assert not out.exists()
    # --out a directory / --out the predictions themselves
    rc, err = _cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                    str(tmp_path)], capsys)
    assert rc == 1 and "is a directory" in err
    before = good.read_bytes()
    rc, err = _cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                    str(good)], capsys)
    assert rc == 1 and "is an input of this command" in err and good.read_bytes() == before
    rc, err = _cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                    str(mcq / "scores.json")], capsys)
    assert rc == 1 and "inside the input folder" in err


def test_manifest_without_configs(mcq: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    ds = tmp_path / "ds"
    shutil.copytree(mcq, ds)
    manifest = json.loads((ds / "manifest.json").read_text())
    del manifest["configs"]
    (ds / "manifest.json").write_text(json.dumps(manifest))
    good = _perfect(mcq, tmp_path / "p.parquet")
    rc, err = _cli(["validate", "--dataset", str(ds), "--predictions", str(good)], capsys)
    assert rc == 1 and "lists no configs" in err
    _one_line_error(err)


def test_disk_full_and_read_only_output(mcq: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.core import atomic

    good = _perfect(mcq, tmp_path / "p.parquet")
    for code, needle in ((errno.ENOSPC, "the disk is full"), (errno.EROFS, "not writable"),
                         (errno.EACCES, "not writable")):
        def fail(*args: Any, code: int = code, **kwargs: Any) -> Any:
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(atomic.tempfile, "mkstemp", fail)
        rc, err = _cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                        str(tmp_path / "o" / "s.json")], capsys)
        assert rc == 1 and needle in err, err
        _one_line_error(err)
        monkeypatch.undo()
    assert not (tmp_path / "o" / "s.json").exists()


def test_huge_scores_json_is_refused_by_the_leaderboard(board: tuple[Path, list[Path]],
                                                        tmp_path: Path) -> None:
    subs = _copy(board[0], tmp_path / "subs")
    (subs / "model-0" / "scores.json").write_text('{"a": ' + "[" * 50 + "]" * 50 + "}")
    with pytest.raises(LeaderboardInputError, match="nested deeper than"):
        load_submissions(subs)
    (subs / "model-0" / "scores.json").unlink()
    (subs / "model-0" / "scores.json").symlink_to("/dev/zero")
    with pytest.raises(LeaderboardInputError, match="not a regular file"):
        load_submissions(subs)


def test_publish_keeps_files_it_did_not_create(board: tuple[Path, list[Path]],
                                               tmp_path: Path) -> None:
    subs, datasets = board
    site = tmp_path / "site"
    site.mkdir()
    (site / "CNAME").write_text("leaderboard.example.org\n")  # a Pages folder before its first build
    publish_site(subs, site, datasets=datasets)
    assert (site / "CNAME").read_text() == "leaderboard.example.org\n"
    (site / ".nojekyll").write_text("")
    (site / "well-known").mkdir()
    (site / "well-known" / "security.txt").write_text("contact: x\n")
    publish_site(subs, site, datasets=datasets)
    build_site(subs, site, datasets=datasets)
    assert (site / "CNAME").read_text() == "leaderboard.example.org\n"
    assert (site / ".nojekyll").exists()
    assert (site / "well-known" / "security.txt").read_text() == "contact: x\n"


# -- for researchers -------------------------------------------------------------------


def test_write_predictions_fills_the_fingerprint(mcq: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    code = "import sys, vlmrobust; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'numpy', 'yaml', 'torch')))"
    light = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert light.stdout.strip() == "[]"  # the root package stays light
    rows = dataset_rows(mcq)
    out = vlmrobust.write_predictions(mcq, [r["id"] for r in rows], random_logits(rows),
                                      model="my-vlm", family="vlm", out=tmp_path / "p.parquet",
                                      prompt_id="mcq-letter", params=7_000_000_000)
    meta = read_prediction_meta(out)
    manifest = json.loads((mcq / "manifest.json").read_text())
    assert meta["dataset"] == {"name": "imagenet-mcq", "version": "0.1.0",
                               "fingerprint": manifest["fingerprint"]}
    assert validate(mcq, out).meta == meta
    with pytest.raises(SubmissionError, match="missing id"):
        vlmrobust.write_predictions(mcq, [r["id"] for r in rows[1:]], random_logits(rows)[1:],
                                    model="m", family="vlm", out=tmp_path / "bad.parquet")
    assert not (tmp_path / "bad.parquet").exists()
    with pytest.raises(SubmissionError, match="family"):
        vlmrobust.write_predictions(mcq, [r["id"] for r in rows], random_logits(rows),
                                    model="m", family="robot", out=tmp_path / "bad.parquet")


def test_models_and_prompts_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for form in ("classifier:efficientnet-lite0", "classifier:timm:", "clip:ARCH:PRETRAINED",
                 "clip:DIR", "vlm:", "pipeline:CLASSIFIER+ANSWERER", "minilm"):
        assert form in out, form
    assert main(["prompts"]) == 0
    out = capsys.readouterr().out
    from vlmrobust.models.prompts import PROMPTS
    from vlmrobust.models.vlm import VLM_PROMPTS

    for name in (*PROMPTS, *VLM_PROMPTS):
        assert f"  {name}" in out, name


def test_journal_only_after_the_model_loads_and_overwrite(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import vlmrobust.evaluation.predict as predict_mod
    from tests.predict_fixtures import write_mcq as write_photo_mcq
    from vlmrobust.evaluation.predict import predict_dataset
    from vlmrobust.evaluation.predictions_io import partial_dir

    ds = write_photo_mcq(tmp_path / "ds", {"photo": 6}, with_class_ids=False)
    out = tmp_path / "p.parquet"

    def cannot_load(*args: Any, **kwargs: Any) -> Any:
        raise VlmrobustError("clip:x: could not load the model (no weights)")

    monkeypatch.setattr(predict_mod, "_load", cannot_load)
    with pytest.raises(VlmrobustError, match="could not load"):
        predict_dataset("clip:ViT-B-32:none", ds, out, progress=False)
    assert not partial_dir(out).exists() and not out.exists()

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_dataset(ToyAdapter("toy", "first"), ds, out, batch_size=2, progress=False,
                        after_batch=stop)
    assert partial_dir(out).exists()
    with pytest.raises(VlmrobustError, match="--overwrite"):
        predict_dataset(ToyAdapter("toy", "first"), ds, out, limit=2, progress=False)
    predict_dataset(ToyAdapter("toy", "first"), ds, out, limit=2, progress=False, overwrite=True)
    assert pq.read_table(out).num_rows == 2 and not partial_dir(out).exists()


def test_ids_and_links_elsewhere_are_matched_whole() -> None:
    from vlmrobust.evaluation.submissions import check_link
    from vlmrobust.leaderboard.baselines import BaselineSpec

    with pytest.raises(SubmissionError, match="not an http"):
        check_link("https://arxiv.org/abs/1\n", "paper_url")
    for bad in ("model-0 and more", "model-0\n"):
        with pytest.raises(ValueError, match="invalid model ids"):
            BaselineSpec(version="t", reference_models=(bad,))
