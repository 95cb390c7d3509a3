"""The dataset writer: loadable by `datasets`, deterministic, atomic."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image

from vlmrobust.builders.hub import push_dataset
from vlmrobust.core.datadir import config_names, read_manifest, read_table
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.writer import BuildInfo, write_dataset

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("int32"),
    }
)


def _png(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(8, 10, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _rows(prefix: str, n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}-{i}",
            "image": {"bytes": _png(offset + i), "path": None},
            "question": "What is in the image?",
            "options": ["cat", "dog", "bird"],
            "answer": i % 3,
        }
        for i in range(n)
    ]


def _build(out: Path, seed: int = 0, shard: int = 2) -> dict[str, Any]:
    return write_dataset(
        out,
        configs={"a": _rows("a", 5), "b": _rows("b", 3, offset=100)},
        features=FEATURES,
        card="# Toy\n\nA toy dataset.",
        info=BuildInfo(spec_name="toy", spec_version="1.0.0", seed=seed,
                       source_fingerprints={"src": "abc"}),
        rows_per_shard=shard,
    )


def test_load_dataset_reads_configs_with_images(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    manifest = _build(out)
    assert manifest["configs"] == {"a": 5, "b": 3}
    assert config_names(out) == ["a", "b"]
    ds = datasets.load_dataset(str(out), "a", split="test")
    assert len(ds) == 5
    assert ds[0]["id"] == "a-0"
    assert isinstance(ds[0]["image"], Image.Image)
    assert ds[0]["image"].size == (10, 8)
    assert list(read_table(out, "b", ["id"]).column("id").to_pylist()) == ["b-0", "b-1", "b-2"]
    # 5 rows at 2 per shard -> 3 shards, named for the HF convention
    shards = sorted(p.name for p in (out / "data" / "a").iterdir())
    assert shards == [f"test-0000{i}-of-00003.parquet" for i in range(3)]


def test_image_payloads_are_stored_raw_and_the_rest_zstd(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    feats = datasets.Features({**FEATURES, "views": datasets.List(datasets.Image())})
    rows = [{**r, "views": [{"bytes": _png(7), "path": None}]} for r in _rows("a", 2)]
    out = tmp_path / "ds"
    write_dataset(out, configs={"a": rows}, features=feats, card="toy",
                  info=BuildInfo(spec_name="toy", spec_version="1", seed=0))
    (shard,) = (out / "data" / "a").iterdir()
    meta = pq.ParquetFile(shard).metadata.row_group(0)
    cols = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    raw = {"image.bytes", "views.list.element.bytes"}
    assert raw < set(cols)
    for path, col in cols.items():
        assert col.compression == ("UNCOMPRESSED" if path in raw else "ZSTD"), path
        if path in raw:
            assert col.statistics is None, path
    assert cols["id"].statistics is not None and cols["id"].statistics.has_min_max
    ds = datasets.load_dataset(str(out), "a", split="test")
    assert np.array_equal(np.asarray(ds[1]["views"][0]), np.asarray(Image.open(io.BytesIO(_png(7)))))


def test_same_input_same_bytes_and_fingerprint(tmp_path: Path) -> None:
    m1 = _build(tmp_path / "x")
    m2 = _build(tmp_path / "y")
    assert m1["fingerprint"] == m2["fingerprint"]
    files1 = sorted(p.relative_to(tmp_path / "x") for p in (tmp_path / "x").rglob("*") if p.is_file())
    files2 = sorted(p.relative_to(tmp_path / "y") for p in (tmp_path / "y").rglob("*") if p.is_file())
    assert files1 == files2
    for rel in files1:
        assert (tmp_path / "x" / rel).read_bytes() == (tmp_path / "y" / rel).read_bytes(), rel


def test_fingerprint_sees_image_bytes(tmp_path: Path) -> None:
    base = _build(tmp_path / "x")
    changed = write_dataset(
        tmp_path / "z",
        configs={"a": _rows("a", 5, offset=1), "b": _rows("b", 3, offset=100)},
        features=FEATURES, card="x",
        info=BuildInfo(spec_name="toy", spec_version="1.0.0", seed=0),
    )
    assert changed["fingerprint"] != base["fingerprint"]


def test_failed_build_leaves_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    before = _build(out)

    def broken_rows():  # dies halfway, as a killed build would
        yield from _rows("a", 2)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_dataset(out, configs={"a": broken_rows()}, features=FEATURES, card="x",
                      info=BuildInfo(spec_name="toy", spec_version="1.0.0", seed=0))
    assert read_manifest(out)["fingerprint"] == before["fingerprint"]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no temp dirs left behind


def test_duplicate_ids_rejected_and_nothing_written(tmp_path: Path) -> None:
    rows = _rows("a", 2) + _rows("a", 1)
    with pytest.raises(ValueError, match="duplicate id 'a-0'"):
        write_dataset(tmp_path / "ds", configs={"a": rows}, features=FEATURES, card="x",
                      info=BuildInfo(spec_name="toy", spec_version="1.0.0", seed=0))
    assert not (tmp_path / "ds").exists()


def test_manifest_records_provenance(tmp_path: Path) -> None:
    _build(tmp_path / "ds", seed=7)
    m = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert m["spec"] == {"name": "toy", "version": "1.0.0"}
    assert m["seed"] == 7
    assert m["source_fingerprints"] == {"src": "abc"}
    assert m["num_rows"] == 8
    assert m["libraries"]["datasets"] == datasets.__version__
    assert len(m["fingerprint"]) == 64
    card = (tmp_path / "ds" / "README.md").read_text()
    assert card.startswith("---\nconfigs:")


def test_build_info_validates() -> None:
    with pytest.raises(ValueError, match="seed must be an int"):
        BuildInfo(spec_name="x", spec_version="1", seed="3")  # type: ignore[arg-type]


class _FakeApi:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create_repo(self, repo_id: str, **kw: Any) -> None:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kw}))

    def upload_folder(self, **kw: Any) -> None:
        self.calls.append(("upload_folder", kw))

    def create_tag(self, repo_id: str, **kw: Any) -> None:
        self.calls.append(("create_tag", {"repo_id": repo_id, **kw}))


def _publishable(out: Path) -> None:
    from vlmrobust.builders.card_meta import header

    write_dataset(out, configs={"a": _rows("a", 5)}, features=FEATURES, card="# Toy\n",
                  info=BuildInfo(spec_name="toy", spec_version="1.0.0", seed=0),
                  card_header=header("imagenet-mcq", sample=False, features=FEATURES))


def test_push_uploads_and_tags_version(tmp_path: Path) -> None:
    _publishable(tmp_path / "ds")
    api = _FakeApi()
    assert push_dataset(tmp_path / "ds", "org/toy", api=api) == "v1.0.0"
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder", "create_tag"]
    assert api.calls[1][1]["folder_path"] == str(tmp_path / "ds")
    assert api.calls[2][1]["tag"] == "v1.0.0"


def test_push_refuses_a_card_the_hub_would_reject_before_uploading(tmp_path: Path) -> None:
    _build(tmp_path / "ds")  # only `configs:` in its YAML header: no licence, no task
    api = _FakeApi()
    with pytest.raises(VlmrobustError, match="license"):
        push_dataset(tmp_path / "ds", "org/toy", api=api)
    assert api.calls == []


def test_push_refuses_sample_builds(tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", configs={"a": _rows("a", 1)}, features=FEATURES, card="x",
                  info=BuildInfo(spec_name="toy", spec_version="1", seed=0, sample=True))
    with pytest.raises(VlmrobustError, match="embedded sample"):
        push_dataset(tmp_path / "ds", "org/toy", api=_FakeApi())


_KILLED_BUILD = r"""
import sys, time, io
import datasets
from vlmrobust.core.writer import BuildInfo, write_dataset
sys.path.insert(0, sys.argv[2])
from test_writer import FEATURES, _rows

def slow_rows():
    for i, row in enumerate(_rows("a", 1000)):
        if i == 3:
            print("halfway", flush=True)
            time.sleep(60)
        yield row

write_dataset(sys.argv[1], configs={"a": slow_rows()}, features=FEATURES, card="x",
              info=BuildInfo(spec_name="toy", spec_version="2.0.0", seed=0), rows_per_shard=2)
"""


def test_sigkill_midway_leaves_previous_output(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    out = tmp_path / "ds"
    before = _build(out)
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD, str(out), str(Path(__file__).parent)],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "halfway"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    manifest = read_manifest(out)
    assert manifest["fingerprint"] == before["fingerprint"]
    assert manifest["spec"]["version"] == "1.0.0"
    assert datasets.load_dataset(str(out), "a", split="test").num_rows == 5
    # the killed build's scratch dir is hidden beside the output; the next build
    # removes it
    leftovers = [p for p in tmp_path.iterdir() if p.name != "ds"]
    assert leftovers and all(p.name.startswith(".ds.building-") for p in leftovers)
    _build(out)
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_atomic_writes_get_normal_permissions(tmp_path: Path) -> None:
    import os
    import stat

    from vlmrobust.core.files.atomic import write_text_atomic

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "f.json", "{}")
        _build(tmp_path / "ds")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "ds").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "ds" / "manifest.json").stat().st_mode) == 0o644


def test_mcq_features_put_core_columns_first_and_refuse_clashes() -> None:
    from vlmrobust.core.writer import mcq_features

    f = mcq_features({"label": datasets.Value("int32")})
    assert list(f) == ["id", "image", "question", "options", "answer", "label"]
    with pytest.raises(ValueError, match="redefine MCQ core columns"):
        mcq_features({"answer": datasets.Value("string")})


def _big_png(seed: int, side: int = 64) -> bytes:
    """Noise PNG: incompressible, so its size is ~side²·3 bytes."""
    arr = np.random.default_rng(seed).integers(0, 256, size=(side, side, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def test_shards_are_cut_by_bytes_in_bounded_row_groups(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    rows = [{"id": f"r{i}", "image": {"bytes": _big_png(i), "path": None},
             "question": "q", "options": ["a", "b"], "answer": 0} for i in range(40)]
    one = len(rows[0]["image"]["bytes"])
    out = tmp_path / "ds"
    write_dataset(out, configs={"a": rows}, features=FEATURES, card="x",
                  info=BuildInfo(spec_name="toy", spec_version="1.0.0", seed=0),
                  shard_bytes=10 * one, row_group_bytes=3 * one)
    files = sorted((out / "data" / "a").glob("*.parquet"))
    # ~10 images per shard (a row's other columns push it over a little earlier)
    assert 4 <= len(files) <= 5, [f.name for f in files]
    assert files[0].name == f"test-00000-of-{len(files):05d}.parquet"
    total = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        total += meta.num_rows
        assert meta.num_rows <= 10
        # row groups of at most 3 images: the writer never held more
        assert all(meta.row_group(g).num_rows <= 3 for g in range(meta.num_row_groups))
    assert total == 40
    ds = datasets.load_dataset(str(out), "a", split="test")
    assert ds["id"] == [f"r{i}" for i in range(40)]
    assert ds[17]["image"].size == (64, 64)


def test_byte_sharding_keeps_the_fingerprint(tmp_path: Path) -> None:
    """How rows are cut into files is not content: the fingerprint ignores it."""
    rows = _rows("a", 7)
    info = BuildInfo(spec_name="toy", spec_version="1.0.0", seed=0)
    a = write_dataset(tmp_path / "a", configs={"a": rows}, features=FEATURES, card="x", info=info)
    b = write_dataset(tmp_path / "b", configs={"a": rows}, features=FEATURES, card="x", info=info,
                      shard_bytes=200, row_group_bytes=50)
    assert a["fingerprint"] == b["fingerprint"]
    assert len(list((tmp_path / "b" / "data" / "a").glob("*.parquet"))) > 1

