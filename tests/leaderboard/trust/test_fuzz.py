"""Fuzz (hypothesis): any predictions file with any metadata, through the CLI,
ends in exit 0 or one `error:` line, never a traceback, and a failure writes
nothing anywhere."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.score import dataset_rows, write_bench_c
from vlmrobust.cli import main

_DIR = tempfile.TemporaryDirectory(prefix="vlmrobust-fuzz-")
DATASET = write_bench_c(Path(_DIR.name) / "bench-c")
MANIFEST = json.loads((DATASET / "manifest.json").read_text())
ROWS = dataset_rows(DATASET)
IDS = [r["id"] for r in ROWS]

floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70),
                   st.just(1e308), st.just(-1e308))
junk = st.recursive(st.one_of(st.none(), st.booleans(), floats, st.text(max_size=8)),
                    lambda c: st.one_of(st.lists(c, max_size=4),
                                        st.dictionaries(st.text(max_size=5), c, max_size=3)),
                    max_leaves=12)
ids = st.one_of(st.sampled_from(IDS), st.text(max_size=6), st.integers(), st.none())
logits = st.one_of(st.lists(floats, min_size=0, max_size=6), junk)


@st.composite
def rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly the real ids with noise: the checks past 'unknown id' get exercised."""
    base = [{"id": i, "logits": [0.0] * 4} for i in IDS]
    out = []
    for r in base:
        action = draw(st.sampled_from(["keep", "keep", "keep", "drop", "mutate", "dup"]))
        if action == "drop":
            continue
        if action == "mutate":
            r = dict(r)
            key = draw(st.sampled_from(["id", "logits", "prediction", "extra"]))
            r[key] = draw(ids if key == "id" else logits if key == "logits" else junk)
        out.append(r)
        if action == "dup":
            out.append(dict(r))
    return out


@st.composite
def metadata(draw: st.DrawFn) -> Any:
    good = {"model": "fuzz-model", "family": "clip",
            "dataset": {"name": "bench-c", "version": "0.1.0",
                        "fingerprint": MANIFEST["fingerprint"]}}
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return None  # no metadata at all
    if choice == 1:
        return draw(junk)
    meta = json.loads(json.dumps(good))
    if choice == 3:
        path = draw(st.sampled_from(["model", "family", "dataset", "params", "model_id",
                                     "configs", "date"]))
        meta[path] = draw(junk)
    if choice == 4:
        meta["dataset"] = dict(meta["dataset"], fingerprint=draw(st.text(max_size=70)))
    return meta


def _write(folder: Path, fmt: str, data: list[dict[str, Any]], meta: Any, raw: bytes | None) -> Path:
    if fmt == "raw":
        p = folder / "p.jsonl"
        p.write_bytes(raw or b"")
    elif fmt == "jsonl":
        p = folder / "p.jsonl"
        p.write_text("".join(json.dumps(r, default=str) + "\n" for r in data))
    else:
        p = folder / "p.parquet"
        try:
            table = pa.Table.from_pylist(data) if data else pa.table({"id": pa.array([], pa.string())})
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            table = pa.table({"id": [str(r.get("id")) for r in data]})
        if meta is not None and fmt == "parquet-embedded":
            text = json.dumps(meta, default=str).encode()
            table = table.replace_schema_metadata({b"vlmrobust.meta": text})
            meta = None
        pq.write_table(table, p)
    if meta is not None:
        (folder / (p.name + ".meta.yaml")).write_text(yaml.safe_dump(meta) if not isinstance(
            meta, str) else meta)
    return p


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fmt=st.sampled_from(["jsonl", "parquet", "parquet-embedded", "raw"]), data=rows(),
       meta=metadata(), raw=st.binary(max_size=64),
       command=st.sampled_from(["validate", "score", "submit"]))
def test_fuzz_predictions_and_metadata(fmt: str, data: list[dict[str, Any]], meta: Any,
                                       raw: bytes, command: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        p = _write(root / "in", fmt, data, meta, raw)
        before_data = _files(DATASET)
        before = _files(root)
        out = root / "out" / "scores.json"
        argv = {"validate": ["validate", "--dataset", str(DATASET), "--predictions", str(p)],
                "score": ["score", "--dataset", str(DATASET), "--predictions", str(p), "--out",
                          str(out)],
                "submit": ["submit", "--submissions", str(root / "subs"), "--model-id", "m",
                           "--dataset", str(DATASET), "--predictions", str(p)]}[command]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = main(argv)
        message = err.getvalue()
        assert "Traceback" not in message
        if rc != 0:
            assert rc == 1 and message.startswith("error: ") and message.count("\n") == 1, message
            after = {k: v for k, v in _files(root).items() if not k.startswith("subs/.m.lock")}
            assert after == before, "a failed command wrote something"
        assert _files(DATASET) == before_data


@pytest.mark.parametrize("meta_text", ["model: [unclosed", "*alias", "!!python/object:os.system {}",
                                       "a: &x [1]\nb: [*x, *x]\n" * 3, "\x00\x01", "- " * 5000])
def test_hostile_sidecars_are_one_line(meta_text: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, "jsonl", [{"id": i, "logits": [0.0] * 4} for i in IDS], None, None)
    (tmp_path / "p.jsonl.meta.yaml").write_text(meta_text)
    assert main(["validate", "--dataset", str(DATASET), "--predictions", str(p)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
