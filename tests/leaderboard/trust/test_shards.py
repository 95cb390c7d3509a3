"""The fingerprint covers every column the scorer reads, and the data shards are
checked against the sha256 the manifest records before anything is scored
(issue 22.6): a rebuild that changes only ``kappa`` or ``source_id`` gets a new
fingerprint; a shard edited, added or removed after the build is refused by
``validate``, ``score`` and ``leaderboard build`` in one line; a dataset built
before this change is refused with the command that rebuilds it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.score import bench_c_features, bench_c_rows, png
from tests.fixtures.submission import real_submissions
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.datadir import verify_shards
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.fingerprint import FINGERPRINT_VERSION, ContentHasher, file_sha256
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.validate.check import validate

BASE = {"id": "a", "image": png(1), "question": "q?", "options": ["x", "y"], "answer": 1,
        "source": "mmstar", "source_id": "0", "corruption": "fog", "severity": 3, "kappa": 0.5,
        "category": "ocr", "label": 7, "option_class_ids": [7, 9],
        "option_class_groups": [[7], [9, 10]], "variant": "imagenet-val"}


def _fp(**change: Any) -> str:
    h = ContentHasher("p")
    h.update("cfg", {**BASE, **change})
    return h.hexdigest()


@pytest.mark.parametrize("change", [
    {"source": "lego"}, {"source_id": "1"}, {"corruption": "none"}, {"severity": 4},
    {"kappa": 0.25}, {"category": "scene"}, {"label": 8}, {"option_class_ids": [7, 8]},
    {"option_class_groups": [[7], [9]]}, {"variant": "imagenet-v2"}, {"new_column": 1},
])
def test_every_scored_column_is_fingerprinted(change: dict[str, Any]) -> None:
    assert _fp(**change) != _fp()


def test_equal_values_in_other_types_fingerprint_alike() -> None:
    import numpy as np

    same = {"kappa": np.float64(0.5), "severity": np.int32(3),
            "option_class_ids": np.array([7, 9]), "option_class_groups": ((7,), (9, 10))}
    assert _fp(**same) == _fp()
    # column order does not matter
    h = ContentHasher("p")
    h.update("cfg", dict(reversed(list(BASE.items()))))
    assert h.hexdigest() == _fp()


def _build(out: Path, change: dict[str, Any] | None = None) -> Path:
    rows = [{**r, **(change or {})} for r in bench_c_rows()]
    write_dataset(out, configs={"default": rows}, features=bench_c_features(), card="t",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    return out


def _manifest(ds: Path) -> dict[str, Any]:
    return dict(json.loads((ds / "manifest.json").read_text()))


@pytest.mark.parametrize("change", [{"kappa": 0.123}, {"source_id": "other"}])
def test_rebuild_changing_only_a_scored_column_gets_a_new_fingerprint(
        tmp_path: Path, change: dict[str, Any]) -> None:
    a = _manifest(_build(tmp_path / "a"))
    b = _manifest(_build(tmp_path / "b", change))
    assert a["fingerprint"] != b["fingerprint"]
    assert _manifest(_build(tmp_path / "c"))["fingerprint"] == a["fingerprint"]  # reproducible


def test_manifest_records_every_shard(tmp_path: Path) -> None:
    rows = bench_c_rows()
    ds = tmp_path / "ds"
    m = write_dataset(ds, configs={"default": rows[:7], "other": rows[7:]},
                      features=bench_c_features(), card="t", rows_per_shard=3,
                      info=BuildInfo("bench-c", "0.1.0", 0))
    files = sorted(p.relative_to(ds).as_posix() for p in (ds / "data").rglob("*.parquet"))
    assert sorted(m["shards"]) == files and len(files) == 3 + 3  # 7 and 8 rows, 3 a shard
    for rel, rec in m["shards"].items():
        assert rec == {"sha256": file_sha256(ds / rel), "bytes": (ds / rel).stat().st_size}
    assert m["fingerprint_version"] == FINGERPRINT_VERSION
    assert verify_shards(ds) == sum(r["bytes"] for r in m["shards"].values())


def _edit_a_shard(ds: Path) -> Path:
    """Rewrite the shard with one answer changed: a valid parquet file, same ids."""
    shard = next((ds / "data" / "default").glob("*.parquet"))
    t = pq.read_table(shard)
    answers = t.column("answer").to_pylist()
    answers[0] = (answers[0] + 1) % 4
    t = t.set_column(t.schema.get_field_index("answer"), "answer", pa.array(answers, pa.int32()))
    pq.write_table(t, shard)
    return shard


def test_shard_edited_after_the_build_is_refused_by_score(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _build(tmp_path / "ds")
    pred = perfect_predictions(ds, tmp_path / "p.parquet")
    shard = _edit_a_shard(ds)
    out = tmp_path / "s.json"
    for cmd in (["score", "--out", str(out)], ["validate"]):
        rc, err = run_cli([cmd[0], "--dataset", str(ds), "--predictions", str(pred), *cmd[1:]],
                          capsys)
        assert rc == 1 and str(shard) in err and "changed after the build" in err, err
        one_line_error(err)
    assert not out.exists()


def test_added_or_missing_shard_is_refused(tmp_path: Path) -> None:
    ds = _build(tmp_path / "ds")
    pred = perfect_predictions(ds, tmp_path / "p.parquet")
    shard = next((ds / "data" / "default").glob("*.parquet"))
    extra = shard.with_name("test-00001-of-00001.parquet")
    shutil.copy(shard, extra)
    with pytest.raises(VlmrobustError, match="a data shard the manifest does not list"):
        validate(ds, pred)
    extra.unlink()
    shard.rename(tmp_path / "moved.parquet")
    with pytest.raises(VlmrobustError, match="is missing"):
        validate(ds, pred)


def test_dataset_built_before_shard_checksums_says_rebuild(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = _build(tmp_path / "ds")
    pred = perfect_predictions(ds, tmp_path / "p.parquet")
    m = _manifest(ds)
    del m["shards"]
    m["fingerprint_version"] = 2
    (ds / "manifest.json").write_text(json.dumps(m))
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(pred), "--out",
                       str(tmp_path / "s.json")], capsys)
    assert rc == 1 and "fingerprint version 2" in err
    assert f"vlmrobust build bench-c --out {ds}" in err
    one_line_error(err)


def test_leaderboard_build_refuses_an_edited_shard(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subs, datasets = real_submissions(tmp_path / "board", 1)
    assert datasets[-1].name == "bench-c"
    shard = _edit_a_shard(datasets[-1])
    rc, err = run_cli(["leaderboard", "build", "--submissions", str(subs), "--out",
                       str(tmp_path / "site"), "--datasets", *map(str, datasets)], capsys)
    assert rc == 1 and "changed after the build" in err and str(shard) in err, err
    one_line_error(err)
    assert not (tmp_path / "site").exists()


def test_leaderboard_checks_each_dataset_once(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from vlmrobust.core import datadir
    from vlmrobust.leaderboard.trust.verify import load_verified_submissions

    subs, datasets = real_submissions(tmp_path / "board", 3)
    calls: list[Path] = []
    real = datadir.verify_shards

    def spy(dataset_dir: Path, manifest: dict[str, Any] | None = None) -> int:
        calls.append(Path(dataset_dir))
        return real(dataset_dir, manifest)

    monkeypatch.setattr(datadir, "verify_shards", spy)
    assert len(load_verified_submissions(subs, datasets=datasets)) == 3
    assert sorted(p.name for p in calls) == sorted(d.name for d in datasets)  # 3 models, once each
