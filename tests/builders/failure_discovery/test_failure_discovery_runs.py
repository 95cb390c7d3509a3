"""The failure-discovery card and manifest state the settings the source runs
actually used, read from each run's `discover_run.json` (a real `discover
train` run with non-default reward and GRPO settings), and say so where a
records file has no run record; a malformed run record is one line."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.fixtures.failure_discovery import planted_source
from vlmrobust.builders.failure_discovery.runs import FIELDS, run_record_path
from vlmrobust.cli.main import main
from vlmrobust.core.errors import SourceError

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(source root with records/{count,color}.jsonl + images/, a finished
    `discover train` run over the same images with λ_scale 2, no δ_ifreq,
    batch reward scaling and 30-token completions)."""
    root = tmp_path_factory.mktemp("fdruns")
    (root / "src").mkdir()
    source = planted_source(root / "src")
    run = root / "run"
    assert main(["discover", "train", "--questioner", str(root / "src" / "questioner"),
                 "--images", str(source / "images"), "--out", str(run), "--steps", "1",
                 "--images-per-step", "2", "--group-size", "2", "--lr", "3e-3",
                 "--answerer", "rule:blind=count", "--verifier", "rule:planted",
                 "--max-completion-length", "30", "--device", "cpu",
                 "--lambda-scale", "2", "--no-ifreq", "--scale-rewards", "batch"]) == 0
    return source, run


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("questioner"))
    return dest


def _build(src: Path, out: Path) -> tuple[str, dict]:
    assert main(["build", "failure-discovery", "--source-root", str(src), "--out",
                 str(out)]) == 0
    return (out / "README.md").read_text(), json.loads((out / "manifest.json").read_text())


def _lookup(obj: dict, path: tuple[str, ...]) -> object:
    for key in path:
        obj = obj[key]
    return obj


def test_card_and_manifest_state_the_runs_settings(world, tmp_path: Path) -> None:
    source, run = world
    src = _copy(source, tmp_path / "src")
    shutil.copy(run / "discover_run.json", src / "records" / "count.run.json")
    record = json.loads((run / "discover_run.json").read_text())
    reward = record["settings"]["train"]["reward"]
    assert reward["lambda_scale"] == 2 and reward["use_ifreq"] is False  # the run's own
    card, manifest = _build(src, tmp_path / "fd")
    (line,) = [ln for ln in card.splitlines() if ln.startswith("- `records/count.jsonl`")]
    for text in (f"λ_scale {reward['lambda_scale']:g}",
                 f"λ_penalty {reward['lambda_penalty']:g}",
                 "δ_emb on", "δ_ifreq off", f"k {reward['k']}", f"L {reward['prefix_len']} words",
                 f"loss_type `{record['grpo']['loss_type']}`",
                 f"scale_rewards `{record['grpo']['scale_rewards']}`",
                 f"max completion length {record['grpo']['max_completion_length']} tokens",
                 f"group size {record['grpo']['num_generations']}",
                 f"learning rate {record['grpo']['learning_rate']:g} (`constant`)"
                 if record["grpo"]["lr_scheduler_type"] == "constant" else
                 f"learning rate {record['grpo']['learning_rate']:g}",
                 f"answerer `{record['settings']['answerer']}`",
                 f"status `{record['status']}`, {record['steps_done']} of 1 steps done",
                 "sha256 `" + hashlib.sha256(record["settings"]["prompt"].encode()).hexdigest()[:12]):
        assert text in line, text
    assert "scale_rewards `batch`" in line and "max completion length 30 tokens" in line
    (no_run,) = [ln for ln in card.splitlines() if ln.startswith("- `records/color.jsonl`")]
    assert "no run record" in no_run and "records/color.run.json" in no_run
    assert "| 1, 1 |" not in card and "λ_scale, λ_penalty" not in card  # no printed defaults
    for deviation in ("BERTopic", "SciPy average-linkage", "whitespace-separated words",
                      "`VERIFIER_PROMPT`", "`QUESTIONER`", "`ANSWERER_PROMPT`"):
        assert deviation in card, deviation

    with_run, without = manifest["source_runs"]
    assert without == {"run_record": None, "records": ["records/color.jsonl"]}
    assert with_run["records"] == ["records/count.jsonl"]
    assert with_run["run_record"] == "records/count.run.json"
    data = (src / "records" / "count.run.json").read_bytes()
    assert with_run["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["source_fingerprints"]["records/count.run.json"] == with_run["sha256"]
    kept = with_run["settings"]
    for key, paths, _ in FIELDS:  # the first recorded path (GRPO's value over TrainConfig's)
        want = next((_lookup(record, p) for p in paths
                     if _has(record, p) and _lookup(record, p) is not None), None)
        assert kept[key] == want, key
    assert kept["verifier_prompt"] == record["settings"]["verifier_prompt"]
    assert kept["questioner_prompt"] == record["settings"]["prompt"]


def _has(obj: dict, path: tuple[str, ...]) -> bool:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return False
        obj = obj[key]
    return True


def test_a_journal_read_in_place_has_its_run_and_same_runs_share_a_line(world,
                                                                        tmp_path: Path) -> None:
    source, run = world
    src = _copy(source, tmp_path / "src")
    shutil.copy(run / "journal.jsonl", src / "records" / "journal.jsonl")
    shutil.copy(run / "discover_run.json", src / "records" / "discover_run.json")
    shutil.copy(run / "discover_run.json", src / "records" / "count.run.json")
    assert run_record_path(src / "records" / "journal.jsonl") == \
        src / "records" / "discover_run.json"
    assert run_record_path(src / "records" / "color.jsonl") is None
    card, manifest = _build(src, tmp_path / "fd")
    runs = manifest["source_runs"]
    assert [r["records"] for r in runs] == [["records/count.jsonl", "records/journal.jsonl"],
                                           ["records/color.jsonl"]]
    lines = [ln for ln in card.splitlines() if ln.startswith("- `records/")]
    assert len(lines) == 2 and "δ_ifreq off" in lines[0] and "no run record" in lines[1]


def test_rebuild_is_byte_identical(world, tmp_path: Path) -> None:
    source, run = world
    src = _copy(source, tmp_path / "src")
    shutil.copy(run / "discover_run.json", src / "records" / "color.run.json")
    card1, m1 = _build(src, tmp_path / "a")
    card2, m2 = _build(src, tmp_path / "b")
    assert m1["fingerprint"] == m2["fingerprint"] and m1 == m2 and card1 == card2
    for f in sorted((tmp_path / "a").rglob("*")):
        if f.is_file():
            assert f.read_bytes() == (tmp_path / "b" / f.relative_to(tmp_path / "a")).read_bytes()


@pytest.mark.parametrize(("content", "needle"), [
    (b"{not json", "not valid JSON"),
    (json.dumps({"schema": "other"}).encode(), "not a run record"),
    (json.dumps({"schema": "vlmrobust.discover.run/1",
                 "settings": {"train": {"reward": {"lambda_scale": "two"}}}}).encode(),
     "settings.train.reward.lambda_scale must be a number"),
    (json.dumps({"schema": "vlmrobust.discover.run/1", "grpo": {"loss_type": 3}}).encode(),
     "grpo.loss_type must be a string"),
])
def test_a_bad_run_record_is_one_line_and_nothing_is_written(world, tmp_path: Path, capsys,
                                                             content: bytes,
                                                             needle: str) -> None:
    source, _ = world
    src = _copy(source, tmp_path / "src")
    (src / "records" / "count.run.json").write_bytes(content)
    capsys.readouterr()
    assert main(["build", "failure-discovery", "--source-root", str(src), "--out",
                 str(tmp_path / "fd")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "count.run.json" in err[0], err
    assert not (tmp_path / "fd").exists()


def test_a_run_record_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "a.run.json").mkdir()
    with pytest.raises(SourceError, match=re.escape("a.run.json: the run record of a.jsonl")):
        run_record_path(tmp_path / "a.jsonl")
