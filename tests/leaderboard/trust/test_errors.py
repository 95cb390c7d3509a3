"""One line, never a traceback: inputs that once crashed score/validate, a
manifest without configs, and a full disk or read-only output all end in one
line naming the cause, with nothing written."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.score import (
    dataset_rows,
    write_jsonl,
    write_mcq,
    write_meta,
    write_parquet,
)
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq")


def _with_meta(p: Path, ds: Path) -> Path:
    write_meta(p, ds)
    return p


def test_reproduced_tracebacks_are_one_line_errors(mcq: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rows = dataset_rows(mcq)
    ids = [r["id"] for r in rows]
    good = perfect_predictions(mcq, tmp_path / "good" / "p.parquet")
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
        rc, err = run_cli(["score", "--dataset", str(mcq), "--predictions", str(path), "--out",
                        str(out)], capsys)
        assert rc == 1 and needle in err, (name, err)
        one_line_error(err)
        assert not out.exists()
    # --out a directory / --out the predictions themselves
    rc, err = run_cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                    str(tmp_path)], capsys)
    assert rc == 1 and "is a directory" in err
    before = good.read_bytes()
    rc, err = run_cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                    str(good)], capsys)
    assert rc == 1 and "is an input of this command" in err and good.read_bytes() == before
    rc, err = run_cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
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
    good = perfect_predictions(mcq, tmp_path / "p.parquet")
    rc, err = run_cli(["validate", "--dataset", str(ds), "--predictions", str(good)], capsys)
    assert rc == 1 and "lists no configs" in err
    one_line_error(err)


def test_disk_full_and_read_only_output(mcq: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.core.files import atomic

    good = perfect_predictions(mcq, tmp_path / "p.parquet")
    for code, needle in ((errno.ENOSPC, "the disk is full"), (errno.EROFS, "not writable"),
                         (errno.EACCES, "not writable")):
        def fail(*args: Any, code: int = code, **kwargs: Any) -> Any:
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(atomic.tempfile, "mkstemp", fail)
        rc, err = run_cli(["score", "--dataset", str(mcq), "--predictions", str(good), "--out",
                        str(tmp_path / "o" / "s.json")], capsys)
        assert rc == 1 and needle in err, err
        one_line_error(err)
        monkeypatch.undo()
    assert not (tmp_path / "o" / "s.json").exists()
