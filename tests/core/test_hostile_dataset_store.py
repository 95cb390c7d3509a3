"""A dataset build shipped in a submissions folder (``submissions/datasets/``,
where the leaderboard looks for the builds its submissions answer) whose rows
were relabelled while its manifest kept the published fingerprint (and got new
shard checksums) re-scored a submission against the forged answers: a model
at chance showed accuracy 1.0. The leaderboard recomputes a store build's
content fingerprint from its rows before using it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vlmrobust
from tests.fixtures.score import dataset_rows, write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.core.fingerprint import recompute_fingerprints


def _forge(ds: Path, answer: int) -> None:
    """Every row's answer set to ``answer``; the manifest keeps its fingerprint
    and records the new shards' sha256 and size (what verify_shards checks)."""
    m = json.loads((ds / "manifest.json").read_text())
    for rel in m["shards"]:
        t = pq.read_table(ds / rel)
        col = t.column_names.index("answer")
        t = t.set_column(col, "answer", pa.array([answer] * t.num_rows, pa.int32()))
        pq.write_table(t, ds / rel)
        data = (ds / rel).read_bytes()
        m["shards"][rel] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (ds / "manifest.json").write_text(json.dumps(m, indent=2))


def _board(tmp_path: Path, forged: bool, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    subs = tmp_path / "subs"
    ds = subs / "datasets" / "imagenet-mcq"
    write_mcq(ds, n=10, k=5)
    if forged:
        _forge(ds, 0)
    rows = dataset_rows(ds)
    logits = [[1.0] + [0.0] * (r["k"] - 1) for r in rows]  # always option 0
    preds = vlmrobust.write_predictions(ds, [r["id"] for r in rows], logits,
                                        out=tmp_path / "p.parquet", model="m", family="other")
    assert run_cli(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset",
                    str(ds), "--predictions", str(preds)], capsys)[0] == 0
    return run_cli(["leaderboard", "build", "--quiet", "--submissions", str(subs), "--out",
                    str(tmp_path / "site")], capsys)


def test_a_relabelled_build_in_the_submissions_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _board(tmp_path, True, capsys)
    assert rc == 1
    one_line_error(err)
    assert "its rows do not give the content fingerprint its manifest.json claims" in err, err
    assert str(tmp_path / "subs" / "datasets" / "imagenet-mcq") in err
    assert not (tmp_path / "site").exists()


def test_the_untouched_build_in_the_submissions_folder_is_used(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _board(tmp_path, False, capsys)
    assert rc == 0, err
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    text = json.dumps(board)
    assert '"m"' in text


def test_recomputed_fingerprint_is_the_built_one_and_moves_with_any_cell(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "ds", n=6, k=4)
    m = json.loads((ds / "manifest.json").read_text())
    assert m["fingerprint"] in recompute_fingerprints(ds, m)
    other = tmp_path / "other"
    shutil.copytree(ds, other)
    shard = sorted((other / "data").rglob("*.parquet"))[0]
    t = pq.read_table(shard)
    labels = np.asarray(t.column("label").to_pylist())
    labels[0] += 1  # a column the scorer may read, not the answer
    pq.write_table(t.set_column(t.column_names.index("label"), "label",
                                pa.array(labels.tolist(), t.schema.field("label").type)), shard)
    assert m["fingerprint"] not in recompute_fingerprints(other, m)
