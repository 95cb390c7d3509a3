"""`vlmrobust convert` on hand-written fixtures in the six Bench-C sources'
published VLMEvalKit TSV layouts, a parquet snapshot and a YAML mapping."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from vlmrobust.builders.convert.mcq import ConvertOptions, convert
from vlmrobust.core.errors import SourceError


def _img(seed: int, size: tuple[int, int] = (24, 16), fmt: str = "JPEG") -> bytes:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, fmt)
    return buf.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _write_tsv(path: Path, header: list[str], rows: list[dict[str, Any]]) -> Path:
    # pandas.DataFrame.to_csv(sep="\t", index=False): NaN as '', minimal quoting
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow(["" if r.get(h) is None else r[h] for h in header])
    return path


# Each source: header as VLMEvalKit publishes it, rows, and per row the
# expected (options, answer index, category).
def mmbench(root: Path) -> tuple[Path, list[tuple[list[str], int, str]]]:
    header = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image",
              "source", "l2-category", "comment", "split"]
    rows = [
        {"index": 0, "question": "Which city is shown?", "hint": "The photo was taken in 2010.",
         "A": "Paris", "B": "Rome", "C": "Oslo", "D": "Lima", "answer": "C",
         "category": "image_scene", "image": _b64(_img(0)), "source": "MMBench",
         "l2-category": "coarse_perception", "split": "dev"},
        {"index": 1, "question": "Is the sky\tblue?", "A": "yes", "B": "no", "answer": "B",
         "category": "attribute_recognition", "image": _b64(_img(1)),
         "l2-category": "finegrained_perception (instance-level)", "split": "dev"},
        {"index": 2, "question": 'What does the sign say, "stop" or "go"?', "A": "stop",
         "B": "go", "C": "wait", "answer": "A", "category": "ocr", "image": _b64(_img(2)),
         "l2-category": "finegrained_perception (instance-level)", "split": "dev"},
    ]
    want = [(["Paris", "Rome", "Oslo", "Lima"], 2, "image_scene"),
            (["yes", "no"], 1, "attribute_recognition"), (["stop", "go", "wait"], 0, "ocr")]
    return _write_tsv(root / "MMBench_DEV_EN_V11.tsv", header, rows), want


def mmstar(root: Path) -> tuple[Path, list[tuple[list[str], int, str]]]:
    header = ["index", "question", "answer", "category", "l2-category", "image",
              "A", "B", "C", "D"]
    rows = [{"index": i, "question": f"Question {i}?", "answer": "ABCD"[i],
             "category": "coarse perception", "l2-category": "image scene and topic",
             "image": _b64(_img(10 + i, fmt="PNG")),
             "A": "red", "B": "green", "C": "blue", "D": "white"} for i in range(4)]
    want = [(["red", "green", "blue", "white"], i, "coarse perception") for i in range(4)]
    return _write_tsv(root / "MMStar.tsv", header, rows), want


def seedbench2_plus(root: Path) -> tuple[Path, list[tuple[list[str], int, str]]]:
    header = ["index", "question", "A", "B", "C", "D", "answer", "category", "image"]
    rows = [{"index": 100 + i, "question": "What is the value in the top row of the chart?",
             "A": "12", "B": "15", "C": "20", "D": "31", "answer": "D",
             "category": cat, "image": _b64(_img(20 + i))}
            for i, cat in enumerate(["chart", "map", "web"])]
    want = [(["12", "15", "20", "31"], 3, c) for c in ["chart", "map", "web"]]
    return _write_tsv(root / "SEEDBench2_Plus.tsv", header, rows), want


def mmt_bench(root: Path) -> tuple[Path, list[tuple[list[str], int, str]]]:
    header = ["index", "image", "question", "A", "B", "C", "D", "E", "F", "G", "H", "I",
              "answer", "category", "l2-category", "split"]
    rows = [
        {"index": 7, "image": _b64(_img(30)), "question": "Which emotion?", "A": "happy",
         "B": "sad", "C": "angry", "D": "calm", "E": "afraid", "F": "bored", "answer": "F",
         "category": "emotion_recognition", "l2-category": "facial_expression", "split": "val"},
        {"index": 8, "image": _b64(_img(31)), "question": "How many cars?", "A": "1", "B": "2",
         "answer": "A", "category": "counting", "l2-category": "counting_by_category",
         "split": "val"},
    ]
    want = [(["happy", "sad", "angry", "calm", "afraid", "bored"], 5, "emotion_recognition"),
            (["1", "2"], 0, "counting")]
    return _write_tsv(root / "MMT-Bench_VAL.tsv", header, rows), want


def mme_realworld_lite(root: Path) -> tuple[Path, list[tuple[list[str], int, str]]]:
    header = ["index", "image", "question", "multi-choice options", "answer", "category",
              "l2-category"]
    opts = ["(A) 3", "(B) 4", "(C) 5", "(D) 6", "(E) The image does not feature the object"]
    rows = [{"index": f"perception/{i}", "image": _b64(_img(40 + i, (64, 48))),
             "question": "How many people are on the bridge?", "multi-choice options":
             repr(opts), "answer": "BE"[i], "category": "Perception",
             "l2-category": "Monitoring"} for i in range(2)]
    texts = ["3", "4", "5", "6", "The image does not feature the object"]
    want = [(texts, 1, "Perception"), (texts, 4, "Perception")]
    return _write_tsv(root / "MME-RealWorld-Lite.tsv", header, rows), want


def lego(root: Path) -> tuple[Path, list[tuple[list[str], int, str]]]:
    header = ["index", "image", "question", "A", "B", "C", "D", "answer", "category",
              "question_type"]
    three = [_img(50, (20, 20)), _img(51, (30, 16)), _img(52, (10, 24))]
    rows = [
        {"index": 0, "image": repr([_b64(b) for b in three]),
         "question": "Given <image 1>, which of <image 2> and <image 3> comes next?",
         "A": "<image 2>", "B": "<image 3>", "answer": "B", "category": "next_step",
         "question_type": "single_choice"},
        {"index": 1, "image": _b64(_img(53)), "question": "Is the brick on top?", "A": "Yes",
         "B": "No", "answer": "A", "category": "height", "question_type": "single_choice"},
        {"index": 2, "image": repr([_b64(_img(54)), _b64(_img(55))]),
         "question": "Order the steps.", "A": "<image 1>", "B": "<image 2>",
         "answer": "BA", "category": "ordering", "question_type": "sort"},
    ]
    want = [(["<image 2>", "<image 3>"], 1, "next_step"), (["Yes", "No"], 0, "height")]
    return _write_tsv(root / "LEGO.tsv", header, rows), want


SOURCES = [mmbench, mmstar, seedbench2_plus, mmt_bench, mme_realworld_lite, lego]


@pytest.mark.parametrize("make", SOURCES, ids=lambda f: f.__name__)
def test_six_source_layouts_convert(tmp_path: Path, make: Any) -> None:
    import datasets

    path, want = make(tmp_path)
    # unique names: the session's datasets cache keys local folders by name
    out = tmp_path / f"conv-{make.__name__}"
    manifest = convert(ConvertOptions("vlmevalkit-tsv", path, out))
    ds = datasets.load_dataset(str(out), "default", split="test")
    assert len(ds) == len(want) == manifest["num_rows"]
    for row, (options, answer, category) in zip(ds, want, strict=True):
        assert row["options"] == options and row["answer"] == answer
        assert row["category"] == category and row["id"] == row["source_index"]
        assert row["image"].size[0] > 0
    assert manifest["source_fingerprints"][path.stem] == \
        "md5:" + hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def test_hint_l2_category_and_quoted_fields(tmp_path: Path) -> None:
    import datasets

    path, _ = mmbench(tmp_path)
    convert(ConvertOptions("vlmevalkit-tsv", path, tmp_path / "hint-out"))
    ds = datasets.load_dataset(str(tmp_path / "hint-out"), "default", split="test")
    assert ds[0]["question"] == "Hint: The photo was taken in 2010.\nQuestion: Which city is shown?"
    assert ds[0]["hint"] == "The photo was taken in 2010." and ds[1]["hint"] == ""
    assert ds[1]["question"] == "Is the sky\tblue?"
    assert ds[2]["question"] == 'What does the sign say, "stop" or "go"?'
    assert ds[0]["l2_category"] == "coarse_perception"
    # the stored image is the source's own bytes, not a re-encoding
    raw = ds.cast_column("image", datasets.Image(decode=False))[0]["image"]["bytes"]
    assert raw == _img(0)


def test_multi_image_questions_keep_every_image_in_order(tmp_path: Path) -> None:
    import datasets

    path, _ = lego(tmp_path)
    manifest = convert(ConvertOptions("vlmevalkit-tsv", path, tmp_path / "lego-out"))
    assert manifest["converted_from"]["skipped"] == {"question_type=sort": 1}
    ds = datasets.load_dataset(str(tmp_path / "lego-out"), "default", split="test")
    ds = ds.cast_column("images", datasets.Sequence(datasets.Image(decode=False)))
    first = ds[0]
    assert [im["bytes"] for im in first["images"]] == [_img(50, (20, 20)), _img(51, (30, 16)),
                                                       _img(52, (10, 24))]
    assert len(ds[1]["images"]) == 1
    tiled = first["image"]
    assert tiled.size == (20 + 30 + 10 + 2 * 8, 24)  # side by side, 8 px gaps
    # the middle image sits at x = 28 in the tile
    mid = np.asarray(Image.open(io.BytesIO(_img(51, (30, 16)))).convert("RGB"))
    assert np.array_equal(np.asarray(tiled)[:16, 28:58], mid)


def test_bad_rows_are_refused_by_index_and_nothing_is_written(tmp_path: Path) -> None:
    header = ["index", "question", "A", "B", "C", "D", "answer", "category", "image"]
    good = {"question": "q?", "A": "x", "B": "y", "category": "c"}
    rows = [
        {"index": 11, **good, "answer": "A", "image": _b64(_img(1))},
        {"index": 12, **good, "answer": "C", "image": _b64(_img(2))},  # no option C
        {"index": 13, **good, "answer": "B", "image": _b64(b"not an image at all")},
        {"index": 14, **good, "answer": "B", "image": "%%%"},  # not base64
        {"index": 15, **good, "answer": "B", "image": _b64(_img(3)[:60])},  # truncated
    ]
    path = _write_tsv(tmp_path / "bad.tsv", header, rows)
    out = tmp_path / "out"
    with pytest.raises(SourceError) as err:
        convert(ConvertOptions("vlmevalkit-tsv", path, out))
    msg = str(err.value)
    assert "4 bad row(s), nothing written" in msg and "\n" not in msg
    assert "index 12: answer 'C' is not one of the row's option letters (A, B)" in msg
    assert "index 13: image cannot be decoded" in msg
    assert "index 14: image is not valid base64" in msg
    assert "index 15: image cannot be decoded" in msg and "index 11" not in msg
    assert not out.exists()


def test_md5_is_checked(tmp_path: Path) -> None:
    path, _ = mmstar(tmp_path)
    digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    with pytest.raises(SourceError, match=r"MD5 .* differs from the expected 0{32}"):
        convert(ConvertOptions("vlmevalkit-tsv", path, tmp_path / "a", md5="0" * 32))
    # the fixture is not VLMEvalKit's published file
    with pytest.raises(SourceError, match="e1ecd2140806c1b1bbf54b43372efb9e"):
        convert(ConvertOptions("vlmevalkit-tsv", path, tmp_path / "a", md5="published"))
    assert not (tmp_path / "a").exists()
    convert(ConvertOptions("vlmevalkit-tsv", path, tmp_path / "a", md5=digest.upper()))
    assert (tmp_path / "a" / "manifest.json").is_file()


def _hf_parquet(path: Path, rows: list[dict[str, Any]], features: Any) -> None:
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))


def test_parquet_snapshot(tmp_path: Path) -> None:
    import datasets
    from datasets import Features, Value
    from datasets import Image as HFImage

    # the lmms-lab MMBench snapshot layout: letter columns and an Image struct
    feats = Features({"index": Value("int64"), "question": Value("string"),
                      "hint": Value("string"), "A": Value("string"), "B": Value("string"),
                      "C": Value("string"), "D": Value("string"), "answer": Value("string"),
                      "category": Value("string"), "image": HFImage(),
                      "l2-category": Value("string")})
    rows = [{"index": i, "question": f"q{i}", "hint": None, "A": "a", "B": "b",
             "C": "c" if i else None, "D": None, "answer": "AB"[i], "category": "cat",
             "image": {"bytes": _img(i, fmt="PNG"), "path": None}, "l2-category": "l2"}
            for i in range(2)]
    snap = tmp_path / "snap"
    _hf_parquet(snap / "data" / "dev-00000-of-00002.parquet", rows[:1], feats)
    _hf_parquet(snap / "data" / "dev-00001-of-00002.parquet", rows[1:], feats)
    convert(ConvertOptions("parquet", snap, tmp_path / "snap-out"))
    ds = datasets.load_dataset(str(tmp_path / "snap-out"), "default", split="test")
    assert ds["options"] == [["a", "b"], ["a", "b", "c"]] and ds["answer"] == [0, 1]
    assert ds["question"] == ["q0", "q1"] and ds["id"] == ["0", "1"]


def test_yaml_mapping_for_another_layout(tmp_path: Path) -> None:
    import datasets
    from datasets import Features, List, Value
    from datasets import Image as HFImage

    feats = Features({"qid": Value("string"), "img": HFImage(), "prompt": Value("string"),
                      "choices": List(Value("string")), "label": Value("int32"),
                      "task": Value("string")})
    rows = [{"qid": f"x{i}", "img": {"bytes": _img(i), "path": None}, "prompt": "what?",
             "choices": ["p", "q", "r"], "label": i, "task": "t"} for i in range(3)]
    _hf_parquet(tmp_path / "t.parquet", rows, feats)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("columns: {index: qid, image: img, question: prompt, options: choices,\n"
                       "          answer: label, category: task}\nanswer_format: index\n")
    convert(ConvertOptions("parquet", tmp_path / "t.parquet", tmp_path / "map-out",
                           mapping=mapping))
    ds = datasets.load_dataset(str(tmp_path / "map-out"), "default", split="test")
    assert ds["answer"] == [0, 1, 2] and ds["options"][0] == ["p", "q", "r"]
    assert ds["category"] == ["t"] * 3 and ds["id"] == ["x0", "x1", "x2"]
    # a mapping naming a column the table lacks is refused before any row
    mapping.write_text("columns: {index: qid, image: picture, question: prompt, "
                       "options: choices, answer: label}\nanswer_format: index\n")
    with pytest.raises(SourceError, match=r"missing column\(s\) \['picture'\]"):
        convert(ConvertOptions("parquet", tmp_path / "t.parquet", tmp_path / "o2",
                               mapping=mapping))


def test_cli_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.cli import main

    path, _ = seedbench2_plus(tmp_path)
    text = path.read_text().replace("\tD\tchart\t", "\tZ\tchart\t")
    path.write_text(text)
    rc = main(["convert", "vlmevalkit-tsv", str(path), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1 and "index 100: answer 'Z'" in err
    assert not (tmp_path / "o").exists()
    path2, _ = mmstar(tmp_path)
    assert main(["convert", "vlmevalkit-tsv", str(path2), "--out", str(tmp_path / "o")]) == 0
    assert "converted MMStar: 4 questions" in capsys.readouterr().out


def test_parquet_bad_rows_are_all_reported(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    img = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    table = pa.table({
        "index": pa.array([1, 2, 3, 4]),
        "question": ["q"] * 4, "A": ["a"] * 4, "B": ["b"] * 4,
        "answer": ["A", "B", "A", "B"], "category": ["c"] * 4,
        "image": pa.array([{"bytes": _img(1), "path": None},
                           {"bytes": None, "path": "x.jpg"},  # only a path
                           {"bytes": b"garbage", "path": None},
                           {"bytes": _img(2), "path": None}], img),
    })
    pq.write_table(table, tmp_path / "s.parquet")
    with pytest.raises(SourceError) as err:
        convert(ConvertOptions("parquet", tmp_path / "s.parquet", tmp_path / "out"))
    msg = str(err.value)
    assert "2 bad row(s)" in msg and "index 2: image struct holds no bytes" in msg
    assert "index 3: image cannot be decoded" in msg
    assert not (tmp_path / "out").exists()
