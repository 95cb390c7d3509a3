"""lmms-eval bridge without lmms-eval: the exported task folder (YAML, utils.py
rendering our prompt registry), and logs written in lmms-eval 0.7.3's
``--log_samples`` layout (loggers/evaluation_tracker.py: the doc and arguments
dropped, ``input`` kept, a log-likelihood response as the text of its
``(loss, is_greedy)`` tuple) imported, validated, scored and refused.
tests/evaluation/harness/lmms_eval/test_run.py runs the real lmms-eval."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from tests.fixtures.lmms_eval import write_llava_config
from tests.fixtures.score import write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.evaluation.predictions.meta import read_prediction_meta as read_meta

CONFIGS = ("sample-photo-random", "sample-rendition-random")


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    return write_mcq(tmp_path / "ds", n=6, k=4)


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: f"!function {node.value}")


def _export(ds: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    from vlmrobust.cli import main

    assert main(["export", "lmms-eval", str(ds), "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def _utils(tasks: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"utils_{abs(hash(tasks))}", tasks / "utils.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _docs(ds: Path, config: str, utils: ModuleType) -> Any:
    import datasets

    return utils.process_docs(datasets.load_dataset(str(ds), config, split="test"))


def test_export_writes_one_task_per_config_and_output_type(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.core.datadir import read_manifest

    out = tmp_path / "tasks"
    printed = _export(ds, out, capsys)
    names = {f"vlmrobust_imagenet_mcq_{c.replace('-', '_')}{s}" for c in CONFIGS for s in ("", "_gen")}
    assert {p.stem for p in out.glob("*.yaml")} == names
    # one run line per output type; multiple_choice needs --force_simple (issue 40.3:
    # without it lmms-eval 0.7.3 exits 0 with no samples)
    runs = {ln.split("--tasks ")[1].split()[0]: ln for ln in printed.splitlines() if ln.startswith("run: ")}
    assert set(",".join(runs).split(",")) == names and len(runs) == 2
    for tasks, line in runs.items():
        gen = {t.endswith("_gen") for t in tasks.split(",")}
        assert len(gen) == 1 and ("--force_simple" in line) == (gen == {False}), line
    fingerprint = read_manifest(ds)["fingerprint"]
    for name in names:
        cfg = yaml.load((out / f"{name}.yaml").read_text(), Loader=_Loader)
        assert cfg["task"] == name and cfg["dataset_path"] == str(ds.resolve())
        assert cfg["dataset_name"] in CONFIGS and name.startswith(
            "vlmrobust_imagenet_mcq_" + cfg["dataset_name"].replace("-", "_"))
        assert cfg["metadata"]["vlmrobust_fingerprint"] == fingerprint
        assert cfg["metadata"]["vlmrobust_config"] == cfg["dataset_name"]
        # datasets' cache per build, inside the task folder (a shared one served stale rows)
        assert cfg["dataset_kwargs"]["cache_dir"] == str(
            out.resolve() / ".hf-datasets-cache" / fingerprint[:16])
        assert cfg["output_type"] == ("generate_until" if name.endswith("_gen") else "multiple_choice")
    record = json.loads((out / "vlmrobust_tasks.json").read_text())
    assert record["dataset"]["fingerprint"] == fingerprint and set(record["tasks"]) == names
    # an earlier export is replaced; only one output type when asked
    _export(ds, out, capsys, "--output-type", "generate_until", "--config", CONFIGS[0])
    assert [p.stem for p in out.glob("*.yaml")] == ["vlmrobust_imagenet_mcq_sample_photo_random_gen"]


@pytest.mark.parametrize("prompt", ["mcq-letter", "photo-of", "what-type", "mcq-letter-short"])
def test_utils_renders_our_prompt_registry_on_every_row(
        ds: Path, tmp_path: Path, prompt: str, capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.core.datadir import read_table
    from vlmrobust.models.readers.base import format_question
    from vlmrobust.models.readers.likelihood import question_prompt
    from vlmrobust.models.runtime import to_pil

    out = tmp_path / "tasks"
    _export(ds, out, capsys, "--prompt", prompt)
    utils = _utils(out)
    for config in CONFIGS:
        docs = _docs(ds, config, utils)
        ours = read_table(ds, config, ["id", "image", "question", "options", "answer"]).to_pylist()
        assert len(docs) == len(ours)
        for doc, row in zip(docs, ours, strict=True):
            assert doc["id"] == row["id"] and doc["vlmrobust_fingerprint"] == utils.FINGERPRINT
            p, answers = question_prompt(row, prompt)
            assert utils.doc_to_text_question(doc) == p.text
            assert utils.doc_to_choice(doc) == answers
            assert utils.doc_to_text_lettered(doc) == format_question(
                row["question"], row["options"], prompt)
            (image,) = utils.doc_to_visual(doc)
            assert np.array_equal(np.asarray(image), np.asarray(to_pil(row["image"])))
    if prompt == "photo-of":
        assert utils.doc_to_choice(docs[0])[0] == "A photo of a class 0"


def test_process_docs_refuses_a_rebuilt_dataset(ds: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import datasets

    out = tmp_path / "tasks"
    _export(ds, out, capsys)
    utils = _utils(out)
    data = datasets.load_dataset(str(ds), CONFIGS[0], split="test")
    manifest = json.loads((ds / "manifest.json").read_text())
    manifest["fingerprint"] = "f" * 64
    (ds / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="exported for build"):
        utils.process_docs(data)


def test_process_results_reads_what_lmms_eval_logs(ds: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks"
    _export(ds, out, capsys)
    utils = _utils(out)
    doc = {"answer": 2}
    # lmms-eval 0.7.3 hands over str((loss, is_greedy)); older versions the tuple
    assert utils.process_results_choice(doc, ["(6.5, False)", "(6.4, False)", "(1e-3, True)"]) == {"acc": 1.0}
    assert utils.process_results_choice(doc, [(0.5, True), (6.4, False), (1.0, False)]) == {"acc": 0.0}
    assert utils.process_results_letter(doc, ["(C) class 2"]) == {"letter_match": 1.0}
    assert utils.process_results_letter(doc, ["B"]) == {"letter_match": 0.0}


# -- logs in lmms-eval 0.7.3's layout -----------------------------------------------------------

def _log(ds: Path, tasks: Path, logs: Path, output_type: str,
         answer: Callable[[int, dict[str, Any]], Any], configs: tuple[str, ...] = CONFIGS,
         date: str = "20261126_063610", model_args: str | None = None,
         model_class: str = "llava_hf") -> list[Path]:
    """Write ``<date>_results.json`` and one samples file per config as lmms-eval
    0.7.3 does; ``answer(doc_id, doc)`` gives a row's losses (multiple_choice)
    or text (generate_until); ``model_args`` as given to ``--model_args``."""
    utils = _utils(tasks)
    suffix = "_gen" if output_type == "generate_until" else ""
    results: dict[str, Any] = {"results": {}, "configs": {}, "lmms_eval_version": "unknown@unknown",
                               "model_name": "/home/me/ckpts/tiny-llava",
                               "config": {"model": model_class, "model_args": model_args}}
    logs.mkdir(parents=True, exist_ok=True)
    paths = []
    for config in configs:
        task = f"vlmrobust_imagenet_mcq_{config.replace('-', '_')}{suffix}"
        results["configs"][task] = yaml.load((tasks / f"{task}.yaml").read_text(),
                                             Loader=_Loader)
        lines = []
        for i, doc in enumerate(_docs(ds, config, utils)):
            got = answer(i, doc)
            if output_type == "multiple_choice":
                resps = [str((float(v), False)) for v in got]
                sample = {"doc_id": i, "target": str(doc["answer"]), "filtered_resps": resps,
                          "token_counts": [None] * len(resps), "doc_hash": "0" * 64,
                          **utils.process_results_choice(doc, resps),
                          "input": utils.doc_to_text_question(doc)}
            else:
                sample = {"doc_id": i, "target": str(doc["answer"]), "filtered_resps": got,
                          "token_counts": [None], "doc_hash": "0" * 64,
                          **utils.process_results_letter(doc, [got]),
                          "input": utils.doc_to_text_lettered(doc)}
            lines.append(json.dumps(sample) + "\n")
        path = logs / f"{date}_samples_{task}.jsonl"
        path.write_text("".join(lines))
        paths.append(path)
    (logs / f"{date}_results.json").write_text(json.dumps(results, indent=2))
    return paths


def _losses(i: int, doc: dict[str, Any]) -> list[float]:
    rng = np.random.default_rng(i + 100 * len(doc["id"]))
    return list(rng.uniform(1.0, 8.0, size=len(doc["options"])))


def _import(paths: list[Path], ds: Path, out: Path, capsys: pytest.CaptureFixture[str],
            *extra: str) -> tuple[int, str]:
    capsys.readouterr()  # the datasets progress bars of writing the log
    return run_cli(["import", "lmms-eval", *map(str, paths), "--dataset", str(ds), "--out",
                    str(out), *extra], capsys)


def test_multiple_choice_log_imports_as_logits_and_scores(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks"
    _export(ds, tasks, capsys)
    # one image token (one 8x8 patch): llava_hf's value is the option's mean loss alone
    one = write_llava_config(tmp_path / "ckpts" / "tiny-llava", image_size=8)
    paths = _log(ds, tasks, tmp_path / "logs", "multiple_choice", _losses,
                 model_args=f"pretrained={one},device=cpu")
    preds = tmp_path / "preds.parquet"
    rc, err = _import(paths, ds, preds, capsys)
    assert rc == 0, err
    import pyarrow.parquet as pq

    got = {r["id"]: r["logits"] for r in pq.read_table(preds).to_pylist()}
    utils = _utils(tasks)
    expected_right = 0
    for config in CONFIGS:
        for i, doc in enumerate(_docs(ds, config, utils)):
            want = -np.array(_losses(i, doc))
            assert np.array_equal(np.array(got[doc["id"]]), want)  # str(float) reads back exactly
            expected_right += int(np.argmax(want) == doc["answer"])
    meta = read_meta(preds)
    assert meta["model"].startswith("tiny-llava@") and "/home" not in json.dumps(meta)
    assert meta["mode"] == "lmms-eval:loglikelihood" and meta["prompt_id"] == "mcq-letter"
    h = meta["harness"]
    assert "accuracy_only" not in h
    assert (h["name"], h["version"], h["model_class"], h["output_type"]) == (
        "lmms-eval", "unrecorded", "llava_hf", "multiple_choice")
    rc, err = run_cli(["validate", "--dataset", str(ds), "--predictions", str(preds)], capsys)
    assert rc == 0, err
    scores = tmp_path / "scores.json"
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                       str(scores)], capsys)
    assert rc == 0, err
    section = json.loads(scores.read_text())["datasets"]["imagenet-mcq"]
    assert section["has_logits"]
    per = section["configs"].values()
    assert sum(c["accuracy"] * c["n"] for c in per) == pytest.approx(expected_right)


def test_generate_log_keeps_text_and_our_matcher_decides(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks"
    _export(ds, tasks, capsys)

    def text(i: int, doc: dict[str, Any]) -> str:
        right = int(doc["answer"])
        return ["ABCD"[right], f"It is {doc['options'][(right + 1) % 4]}.", "No idea."][i % 3]

    paths = _log(ds, tasks, tmp_path / "logs", "generate_until", text)
    preds = tmp_path / "preds.jsonl"
    rc, err = _import(paths, ds, preds, capsys, "--model", "Tiny VLM", "--harness-version", "0.7.3")
    assert rc == 0, err
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert [r["prediction"] for r in rows[:3]] == [0, 2, None]  # doc 0: answer 0; doc 1: answer 1
    assert rows[2]["text"] == "No idea."
    meta = read_meta(preds)
    assert meta["model"] == "Tiny VLM" and meta["harness"]["version"] == "0.7.3"
    assert "accuracy_only" not in meta["harness"]  # llava_hf's text is its own answer
    scores = tmp_path / "scores.json"
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                       str(scores)], capsys)
    assert rc == 0, err
    section = json.loads(scores.read_text())["datasets"]["imagenet-mcq"]
    assert section["has_text"] and not section["has_logits"] and section["no_answer"] == 4


@pytest.mark.parametrize("damage", ["another_build", "missing_row", "unknown_id", "twice",
                                    "forged_acc", "edited_loss", "other_question", "k_values",
                                    "no_results"])
def test_refusals_in_one_line_and_nothing_written(
        ds: Path, tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks"
    _export(ds, tasks, capsys)
    logs = tmp_path / "logs"
    (path,) = _log(ds, tasks, logs, "multiple_choice", _losses, configs=CONFIGS[:1])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    results = logs / "20261126_063610_results.json"
    expect = {"another_build": "dataset build ffffffffffff", "missing_row": "sample-photo-002",
              "unknown_id": "doc_id 17", "twice": "appears twice", "forged_acc": "forged",
              "edited_loss": "forged", "other_question": "another question",
              "k_values": "4 options but 3", "no_results": "results.json"}[damage]
    if damage == "another_build":
        r = json.loads(results.read_text())
        for cfg in r["configs"].values():
            cfg["metadata"]["vlmrobust_fingerprint"] = "f" * 64
        results.write_text(json.dumps(r))
    elif damage == "missing_row":
        lines.pop(2)
    elif damage == "unknown_id":
        lines[2]["doc_id"] = 17
    elif damage == "twice":
        lines[3] = dict(lines[2])
    elif damage == "forged_acc":
        lines[1]["acc"] = 1.0 - lines[1]["acc"]
    elif damage == "edited_loss":  # the right option made the likeliest, acc left as it was
        answer = int(lines[1]["target"])
        lines[1]["filtered_resps"][answer] = "(0.001, True)"
        lines[1]["acc"] = 0.0
    elif damage == "other_question":
        lines[0]["input"] = "Which animal is this?"
    elif damage == "k_values":
        lines[0]["filtered_resps"].pop()
    else:
        results.unlink()
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    preds = tmp_path / "preds.parquet"
    rc, err = _import([path], ds, preds, capsys)
    assert rc == 1, err
    one_line_error(err)
    assert expect in err, err
    assert not preds.exists()


def test_export_refuses_a_foreign_folder_and_non_mcq(ds: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    rc, err = run_cli(["export", "lmms-eval", str(ds), "--out", str(out)], capsys)
    assert rc == 1 and "not a task folder" in err
    one_line_error(err)
    assert (out / "notes.txt").read_text() == "keep me"
    rc, err = run_cli(["import", "lmms-eval", str(tmp_path / "results.jsonl"), "--dataset",
                       str(ds), "--out", str(tmp_path / "p.parquet")], capsys)
    assert rc == 1 and "no such file" in err


def test_refuses_a_generate_log_whose_every_text_is_empty(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lmms-eval's llava_hf logs '' for a row whose generation raised; a log of
    nothing but '' is a failed run, not a model that never answers."""
    tasks = tmp_path / "tasks"
    _export(ds, tasks, capsys)
    paths = _log(ds, tasks, tmp_path / "logs", "generate_until", lambda i, doc: "")
    preds = tmp_path / "preds.parquet"
    rc, err = _import(paths, ds, preds, capsys, "--model", "m")
    assert rc == 1 and "every response is empty" in err
    one_line_error(err)
    assert not preds.exists()
    # a text edited after the run: lmms-eval's letter_match was computed from the original
    paths = _log(ds, tasks, tmp_path / "logs1", "generate_until", lambda i, doc: "ABCD"[(i + 1) % 4])
    lines = [json.loads(x) for x in paths[0].read_text().splitlines()]
    lines[1]["filtered_resps"] = "ABCD"[int(lines[1]["target"])]  # made right
    paths[0].write_text("".join(json.dumps(x) + "\n" for x in lines))
    rc, err = _import(paths, ds, preds, capsys, "--model", "m")
    assert rc == 1 and "forged" in err and "line 2" in err, err
    one_line_error(err)
    paths = _log(ds, tasks, tmp_path / "logs2", "generate_until",
                 lambda i, doc: "B" if i == 0 and doc["id"].startswith("sample-photo") else "")
    rc, err = _import(paths, ds, preds, capsys, "--model", "m")
    assert rc == 1 and "every response is empty" in err  # the second config's
    paths = _log(ds, tasks, tmp_path / "logs3", "generate_until", lambda i, doc: "" if i else "B")[:1]
    rc, err = _import(paths, ds, preds, capsys, "--model", "m", "--results",
                      str(tmp_path / "logs3" / "20261126_063610_results.json"))
    assert rc == 0, err
