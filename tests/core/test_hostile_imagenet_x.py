"""Hostile ImageNet-X annotation files (`score --imagenet-x FILE`): bytes that are
not UTF-8, JSON nested past Python's recursion limit, a FIFO, a folder and a
value the size of the file are each one line naming the file (and the line),
never a traceback or a read that never returns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.scoring.dataset import score_tables
from vlmrobust.evaluation.scoring.imagenet_x import load_annotations
from vlmrobust.metrics.lines.factors import FACTORS


def _line(name: str, **on: object) -> str:
    return json.dumps({"file_name": name, **{f: on.get(f, 0) for f in FACTORS}})


def _score(ann: Path) -> dict[str, object]:
    """score_tables over two imagenet-val rows with ``ann`` as --imagenet-x."""
    files = ["ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000002.JPEG"]
    dataset = pa.table({"id": ["v-0", "v-1"], "options": [["a", "b"]] * 2, "answer": [0, 1],
                        "variant": ["imagenet-val"] * 2, "distractors": ["wordnet"] * 2,
                        "source_file": files, "config": ["imagenet-val-wordnet"] * 2})
    manifest = {"spec": {"name": "imagenet-mcq", "version": "1"}, "fingerprint": "f",
                "reference_variant": "imagenet-val", "configs": {"imagenet-val-wordnet": 2}}
    preds = pa.table({"id": ["v-0", "v-1"], "logits": [[1.0, 0.0], [1.0, 0.0]]})
    return score_tables(dataset, manifest, preds, "m", imagenet_x=ann)


@pytest.mark.parametrize(("content", "match"), [
    (b"\xff\xfe" + _line("a.JPEG").encode() + b"\n", r"line 1 is not UTF-8 text"),
    (_line("a.JPEG").encode() + b"\n" + b"[" * 200_000 + b"]" * 200_000 + b"\n",
     r"line 2 is not JSON"),
    (_line("a.JPEG", pose="x" * 100_000).encode() + b"\n", r"factor 'pose' is 'xxx"),
])
def test_bad_bytes_are_one_line(tmp_path: Path, content: bytes, match: str) -> None:
    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_bytes(content)
    with pytest.raises(VlmrobustError, match=match) as exc:
        _score(ann)
    msg = str(exc.value)
    assert "\n" not in msg and str(ann) in msg and len(msg) < 500


def test_a_folder_is_refused_as_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(VlmrobustError, match=r"is a directory, expected a ImageNet-X"):
        load_annotations(tmp_path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    # in a child: a read that blocks on the FIFO (no writer) must not hang the test
    code = ("import sys; from vlmrobust.core.errors import VlmrobustError\n"
            "from vlmrobust.evaluation.scoring.imagenet_x import load_annotations\n"
            "try:\n    load_annotations(sys.argv[1])\n"
            "except VlmrobustError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True,
                         text=True, timeout=120)
    assert "not a regular file" in out.stdout and str(fifo) in out.stdout


def test_good_file_still_scores(tmp_path: Path) -> None:
    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text(_line("ILSVRC2012_val_00000001.JPEG", pose=1) + "\n"
                   + _line("ILSVRC2012_val_00000002.JPEG", pose=1) + "\n")
    cfg = _score(ann)["datasets"]["imagenet-mcq"]["configs"]["imagenet-val-wordnet"]  # type: ignore[index]
    assert cfg["factors"]["pose"] == {"n": 2, "accuracy": 0.5}


def test_imagenet_x_on_a_dataset_without_imagenet_val_is_refused(tmp_path: Path) -> None:
    """Issue 40.5: `score --imagenet-x` on a dataset with no imagenet-val rows did
    nothing, silently."""
    ann = tmp_path / "imagenet_x_val_top_factor.jsonl"
    ann.write_text(_line("ILSVRC2012_val_00000001.JPEG", pose=1) + "\n")
    dataset = pa.table({"id": ["r-0"], "options": [["a", "b"]], "answer": [0],
                        "variant": ["imagenet-r"], "distractors": ["wordnet"],
                        "source_file": ["art_0.jpg"], "config": ["imagenet-r-wordnet"]})
    manifest = {"spec": {"name": "imagenet-mcq", "version": "1"}, "fingerprint": "f",
                "reference_variant": "imagenet-val", "configs": {"imagenet-r-wordnet": 1}}
    preds = pa.table({"id": ["r-0"], "logits": [[1.0, 0.0]]})
    with pytest.raises(VlmrobustError, match=r"--imagenet-x .*no imagenet-val rows.*drop --imagenet-x"):
        score_tables(dataset, manifest, preds, "m", imagenet_x=ann)
    assert score_tables(dataset, manifest, preds, "m")["datasets"]["imagenet-mcq"]["configs"]
