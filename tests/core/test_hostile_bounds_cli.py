"""Hostile-suite reproductions (issue 40.12, 40.13; issue 41.5, 41.6, 41.7):
number flags out of range, a decompression-bomb PNG, a control character in
a record and ``--threads 100000`` are each refused in one ``error:`` line, or
printed escaped, never as a traceback or a raw escape sequence."""

from __future__ import annotations

import base64
import csv
from pathlib import Path

import pytest

from tests.fixtures.bomb import bomb_png
from tests.fixtures.discover import make_record, planted_folder
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import write_records
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.discover.images import list_images


def one_error(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err  # a model load may draw a progress bar first
    assert err.endswith("\n") and err.count("error: ") == 1, err
    assert err.splitlines()[-1].startswith("error: ")
    assert "Traceback" not in err and "\x1b" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Planted images and a questioner folder that is never loaded: every
    number flag is checked before any model is."""
    root = tmp_path_factory.mktemp("discover")
    return planted_folder(root, n=3), root / "questioner-never-loaded"


def sample_argv(world: tuple[Path, Path], out: Path, *extra: str) -> list[str]:
    images, questioner = world
    return ["discover", "sample", "--questioner", str(questioner), "--images", str(images),
            "--answerer", "rule:blind=count", "--verifier", "rule:planted",
            "--out", str(out), *extra]


@pytest.mark.parametrize(("extra", "needle"), [
    (("--limit", "-1"), "--limit -1"),  # 41.6: sliced off the last image, exit 0
    (("--limit", "0"), "--limit 0"),
    (("--max-new-tokens", "-1"), "--max-new-tokens -1"),
    (("--temperature", "nan"), "--temperature nan"),
    (("--temperature", "inf"), "--temperature inf"),
    (("--top-p", "nan"), "--top-p nan"),
    (("--seed", "-1"), "--seed -1"),
    (("--answer-max-new-tokens", "0"), "--answer-max-new-tokens 0"),
])
def test_discover_sample_number_flags(world, tmp_path, capsys, extra, needle) -> None:
    out = tmp_path / "r.jsonl"
    assert main(sample_argv(world, out, *extra)) == 1
    one_error(capsys, needle)
    assert not out.exists()


def test_discover_planted_negative_seed(tmp_path, capsys) -> None:
    out = tmp_path / "imgs"
    assert main(["discover", "planted", "--out", str(out), "--n", "2", "--seed", "-1"]) == 1
    one_error(capsys, "--seed -1")
    assert not out.exists()


def test_discover_image_decompression_bomb(tmp_path) -> None:
    """``discover sample`` loads each image through ImageRef.load (the CLI
    run of this needs a questioner model: minutes on a loaded machine)."""
    (tmp_path / "zz-bomb.png").write_bytes(bomb_png())
    (ref,) = list_images(tmp_path)
    with pytest.raises(VlmrobustError) as err:
        ref.load()
    msg = str(err.value)
    assert "zz-bomb.png: not a readable image" in msg and "decompression bomb" in msg
    assert "\n" not in msg


def test_discover_evaluate_escapes_record_names(tmp_path, capsys) -> None:
    records = tmp_path / "r.jsonl"
    write_records(records, [make_record(answerer="evil\x1b[2J\x1b[31m", image=f"{i}.png",
                                        completion_id=f"{i}.png#0") for i in range(3)])
    assert main(["discover", "evaluate", str(records), "--out", str(tmp_path / "m.json"),
                 "--no-sd", "--min-skill-questions", "0"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "evil\\x1b[2J" in out


def test_convert_decompression_bomb(tmp_path, capsys) -> None:
    source = tmp_path / "bench.tsv"
    with source.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["index", "question", "A", "B", "answer", "category", "image"])
        w.writerow([7, "q?", "x", "y", "A", "c", base64.b64encode(bomb_png()).decode("ascii")])
    out = tmp_path / "out"
    assert main(["convert", "vlmevalkit-tsv", str(source), "--out", str(out)]) == 1
    one_error(capsys, "index 7: image exceeds", "decompression bomb")
    assert not out.exists()


@pytest.mark.parametrize("threads", ["100000", "0"])
def test_predict_threads_bounded_by_cpus(tmp_path, capsys, monkeypatch, threads) -> None:
    from vlmrobust.core import cpus

    monkeypatch.setattr(cpus, "available_cpus", lambda root=cpus._CGROUP: 4)
    out = tmp_path / "p.parquet"
    assert main(["predict", "--model", "clip:ViT-B-32:openai", "--dataset",
                 str(tmp_path / "no-dataset"), "--out", str(out), "--threads", threads]) == 1
    one_error(capsys, f"--threads {threads}: give 1 to 4")
    assert not out.exists()


def test_convert_escapes_the_spec_name(tmp_path, capsys) -> None:
    """41.5: the dataset's name (here --name; a spec's ``name`` in build) printed raw."""
    from tests.builders.test_convert import mmbench

    source, _ = mmbench(tmp_path)
    rc = main(["convert", "vlmevalkit-tsv", str(source), "--out", str(tmp_path / "out"),
               "--name", "mm\x1b[2Jbench"])
    out = capsys.readouterr().out
    assert rc == 0 and "\x1b" not in out and "mm\\x1b[2Jbench" in out
