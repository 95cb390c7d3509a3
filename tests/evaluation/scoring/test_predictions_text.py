"""Predictions that carry text (#21 items 3-4): ``text`` / ``prompt_text`` /
``prediction`` columns, the scorer reading the answer from the text with the
matcher, forged predictions refused, no-answer rows counted, size bounds, old
files still valid, and the JSON Schemas agreeing with what is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.score import (
    dataset_rows,
    random_logits,
    write_jsonl,
    write_mcq,
    write_meta,
    write_parquet,
)
from vlmrobust.cli.main import main
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.text.matcher import match_option
from vlmrobust.evaluation.predictions.read import MAX_TEXT_CHARS, read_predictions
from vlmrobust.evaluation.predictions.write import predictions_table, write_predictions_file
from vlmrobust.evaluation.schemas import check_schema, load_schema
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.scoring.rows.results import rows_path
from vlmrobust.evaluation.validate.check import validate

CLASS_NAMES = ("tench", "goldfish", "great white shark", "tiger shark", "hammerhead")


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # options "class 0".."class 4"; option_class_ids 0..4 (ImageNet tench ... hammerhead)
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq", n=10)


def _texts(rows: list[dict[str, Any]]) -> list[str]:
    """Row i: a letter answer, an option text, a synonym (WordNet lemma), a hedge
    that names two options, or nothing, cycling."""
    out = []
    for i, r in enumerate(rows):
        right = r["answer"]
        kind = i % 5
        if kind == 0:
            out.append(f"The answer is ({'ABCDE'[right]}).")
        elif kind == 1:
            out.append(f"I am sure it is class {(right + 1) % r['k']}.")  # wrong on purpose
        elif kind == 2:
            out.append(f"<think>hmm</think>That is a {CLASS_NAMES[right]}.")  # synonym
        elif kind == 3:
            out.append("Either class 0 or class 1.")
        else:
            out.append("I cannot tell.")
    return out


def _expected(rows: list[dict[str, Any]], texts: list[str]) -> list[int | None]:
    opts = [f"class {j}" for j in range(5)]
    syn = [[n] for n in CLASS_NAMES]
    return [match_option(t, opts, syn) for t in texts]


def test_text_only_jsonl_scores_with_the_matcher(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    texts = _texts(rows)
    want = _expected(rows, texts)
    # the cycle above gives right / wrong / right (synonym) / no answer / no answer
    assert [w == r["answer"] if w is not None else None for w, r in zip(want[:5], rows[:5], strict=True)] \
        == [True, False, True, None, None]
    p = write_jsonl(tmp_path / "p.jsonl", [
        {"id": r["id"], "text": t, "prompt_text": f"<|user|>Q{i}<|assistant|>"}
        for i, (r, t) in enumerate(zip(rows, texts, strict=True))])
    write_meta(p, mcq)
    out = tmp_path / "scores.json"
    scores = score(mcq, p, out)
    section = scores["datasets"]["imagenet-mcq"]
    assert section["has_logits"] is False and section["has_text"] is True
    assert section["no_answer"] == sum(w is None for w in want) == 8
    for config, block in section["configs"].items():
        mine = [(w, r) for w, r in zip(want, rows, strict=True) if r["config"] == config]
        assert block["n"] == len(mine)
        assert block["accuracy"] == pytest.approx(sum(w == r["answer"] for w, r in mine) / len(mine))
        assert block["no_answer"] == sum(w is None for w, _ in mine)
        assert block["ece"] is None and block["temperature"] is None
    check_schema(scores, "scores", str(out))
    records = [json.loads(line) for line in rows_path(out).read_text().splitlines()]
    assert [r["id"] for r in records] == [r["id"] for r in rows]
    for rec, w, r in zip(records, want, rows, strict=True):
        assert rec["predicted"] == w and rec["no_answer"] is (w is None)
        assert rec["correct"] is (w == r["answer"]) and rec["from_text"] is True
        assert rec["confidence"] is None and rec["answer"] == r["answer"]


def test_forged_prediction_is_refused_naming_the_row(mcq: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rows = dataset_rows(mcq)
    texts = _texts(rows)
    want = _expected(rows, texts)
    honest = [w for w in want]
    forged = list(honest)
    forged[3] = rows[3]["answer"]  # a hedge "answered" by the submitter's own extraction
    for name, preds in (("honest", honest), ("forged", forged)):
        p = write_jsonl(tmp_path / name / "p.jsonl", [
            {"id": r["id"], "text": t, "prediction": v}
            for r, t, v in zip(rows, texts, preds, strict=True)])
        write_meta(p, mcq)
    assert validate(mcq, tmp_path / "honest" / "p.jsonl").aligned.predicted.tolist() == \
        [-1 if w is None else w for w in want]
    out = tmp_path / "forged" / "scores.json"
    code = main(["score", "--dataset", str(mcq), "--predictions", str(tmp_path / "forged" / "p.jsonl"),
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and err.startswith("error: ")
    assert "prediction disagrees with text" in err and f"line 4 (id {rows[3]['id']!r})" in err
    assert "its text answers no option" in err
    assert not out.exists() and not rows_path(out).exists()


def test_text_beside_logits_decides_the_answer_and_logits_the_probabilities(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    logits = random_logits(rows, seed=3)
    texts: list[str | None] = [None] * len(rows)
    argmax0 = max(range(5), key=lambda j: logits[0][j])
    said = (argmax0 + 1) % 5  # the text answers another option than the logits' argmax
    texts[0] = "Answer: " + "ABCDE"[said]
    table = predictions_table([r["id"] for r in rows], [r["config"] for r in rows], logits, text=texts)
    p = tmp_path / "p.parquet"
    pq.write_table(table, p)
    write_meta(p, mcq)
    rep = validate(mcq, p)
    assert rep.aligned.predicted[0] == said
    assert rep.aligned.from_text is not None
    assert rep.aligned.from_text.tolist() == [True] + [False] * (len(rows) - 1)
    assert rep.aligned.predicted[1:].tolist() == [max(range(5), key=lambda j: z[j]) for z in logits[1:]]
    scores = score(mcq, p, tmp_path / "scores.json")
    section = scores["datasets"]["imagenet-mcq"]
    assert section["has_logits"] is True and section["has_text"] is True and section["no_answer"] == 0
    assert all(b["ece"] is not None for b in section["configs"].values())


def test_old_format_files_stay_valid(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    ids = [r["id"] for r in rows]
    old_parquet = write_parquet(tmp_path / "a" / "p.parquet", ids, random_logits(rows))
    old_jsonl = write_jsonl(tmp_path / "b" / "p.jsonl",
                            [{"id": r["id"], "prediction": r["answer"]} for r in rows])
    for p in (old_parquet, old_jsonl):
        write_meta(p, mcq)
        s = score(mcq, p, p.with_name("scores.json"))["datasets"]["imagenet-mcq"]
        assert s["has_text"] is False and s["no_answer"] == 0
        assert all(b["no_answer"] == 0 for b in s["configs"].values())
        assert rows_path(p.with_name("scores.json")).is_file()
    assert score(mcq, old_jsonl, tmp_path / "b" / "s2.json")["datasets"]["imagenet-mcq"][
        "configs"]["sample-photo-random"]["accuracy"] == 1.0


def test_text_bounds_and_types(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    recs: list[dict[str, Any]] = [{"id": r["id"], "text": "A"} for r in rows]
    recs[1]["text"] = "x" * (MAX_TEXT_CHARS + 1)
    recs[2]["text"] = 7
    recs[3]["prompt_text"] = ["not", "a", "string"]
    recs[4]["prompt_text"] = "y" * (MAX_TEXT_CHARS + 1)
    p = write_jsonl(tmp_path / "p.jsonl", recs)
    write_meta(p, mcq)
    with pytest.raises(SubmissionError) as exc:
        validate(mcq, p)
    msg = str(exc.value)
    assert "\n" not in msg
    for kind, line in (("text too long", 2), ("text not a string", 3),
                       ("prompt_text not a string", 4), ("prompt_text too long", 5)):
        assert f"{kind}:" in msg and f"line {line} (" in msg, kind
    # parquet: a text column of the wrong type is refused in one line; too long is a row problem
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "text": list(range(len(rows)))}), bad)
    with pytest.raises(SubmissionError, match="column 'text' has type int64, expected string"):
        read_predictions(bad)
    long = tmp_path / "long.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows],
                             "text": ["B"] + ["z" * (MAX_TEXT_CHARS + 1)] * (len(rows) - 1)}), long)
    pf = read_predictions(long)
    assert [p.kind for p in pf.problems] == ["text too long"] and pf.problems[0].count == len(rows) - 1


def test_rows_without_any_answer_are_refused(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    recs: list[dict[str, Any]] = [{"id": r["id"], "text": "B"} for r in rows]
    recs[5]["text"] = None
    p = write_jsonl(tmp_path / "p.jsonl", recs)
    write_meta(p, mcq)
    with pytest.raises(SubmissionError, match=r"no answer given: a row without logits needs text "
                                              r"or a prediction \[1 row: line 6"):
        validate(mcq, p)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_written_files_round_trip_and_match_the_row_schema(mcq: Path, tmp_path: Path, suffix: str) -> None:
    rows = dataset_rows(mcq)
    ids = [r["id"] for r in rows]
    texts = _texts(rows)
    prompts = [f"<|im_start|>user\n{i}: é ✓<|im_end|>" for i in range(len(rows))]
    preds = _expected(rows, texts)
    table = predictions_table(ids, [r["config"] for r in rows], None, text=texts,
                              prompt_text=prompts, prediction=preds)
    out = tmp_path / f"p{suffix}"
    manifest = json.loads((mcq / "manifest.json").read_text())
    meta = {"model": "m", "family": "vlm", "dataset": {
        "name": "imagenet-mcq", "version": manifest["spec"]["version"],
        "fingerprint": manifest["fingerprint"]}}
    write_predictions_file(out, table, meta)
    pf = read_predictions(out)
    assert pf.text is not None and pf.text.tolist() == texts
    assert pf.prompt_text is not None and pf.prompt_text.tolist() == prompts
    assert validate(mcq, out).file.has_text
    row_schema = load_schema("predictions-row")
    records = ([json.loads(line) for line in out.read_text("utf-8").splitlines()] if suffix == ".jsonl"
               else pq.read_table(out).to_pylist())
    for rec in records:
        jsonschema.validate(rec, row_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "x", "prompt_text": "only a prompt"}, row_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "x", "text": "t" * (MAX_TEXT_CHARS + 1)}, row_schema)
    with pytest.raises(ValueError, match="text has 1 entries"):
        predictions_table(ids, [r["config"] for r in rows], None, text=["x"])


def test_write_predictions_api_and_submit_keep_the_audit_trail(mcq: Path, tmp_path: Path) -> None:
    import vlmrobust
    from vlmrobust.evaluation.submissions import add_submission

    rows = dataset_rows(mcq)
    texts = _texts(rows)
    prompts = [f"prompt {i}" for i in range(len(rows))]
    out = vlmrobust.write_predictions(mcq, [r["id"] for r in rows], text=texts, prompt_text=prompts,
                                      model="toy-vlm", family="vlm", out=tmp_path / "p.jsonl")
    scores = add_submission(tmp_path / "subs", "toy-vlm", mcq, out)
    assert scores["datasets"]["imagenet-mcq"]["no_answer"] == 8
    stored = tmp_path / "subs" / "toy-vlm" / "imagenet-mcq"
    table = pq.read_table(stored / "predictions.parquet")
    assert table.column("text").to_pylist() == texts
    assert table.column("prompt_text").to_pylist() == prompts
    records = [json.loads(line) for line in (stored / "rows.jsonl").read_text().splitlines()]
    assert [r["predicted"] for r in records] == _expected(rows, texts)
    # the stored form re-validates to the same answers (what the leaderboard re-scores)
    again = validate(mcq, stored / "predictions.parquet")
    assert [None if v < 0 else v for v in again.aligned.predicted.tolist()] == _expected(rows, texts)


def test_open_world_rows_succeed_when_the_class_is_named(mcq: Path, tmp_path: Path) -> None:
    # seed 002's open world: no options were shown; a row succeeds when the
    # ground-truth class name or one of its WordNet synonyms is in the output
    rows = dataset_rows(mcq)
    texts = []
    for i, r in enumerate(rows):
        right, other = CLASS_NAMES[r["answer"]], CLASS_NAMES[(r["answer"] + 1) % 5]
        texts.append([f"A {right} swimming next to a {other}.",  # both named: still a success
                      f"Clearly a {other}.", "A fish of some kind.", "Answer: A"][i % 4])
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "text": t}
                                           for r, t in zip(rows, texts, strict=True)])
    write_meta(p, mcq, mode="open-world", family="vlm")
    rep = validate(mcq, p)
    want = [r["answer"] if i % 4 == 0 else -1 for i, r in enumerate(rows)]
    assert rep.aligned.predicted.tolist() == want
    # the same texts read as closed-world generation: the hedge answers nothing,
    # "Answer: A" is option A
    closed = tmp_path / "closed" / "p.jsonl"
    closed.parent.mkdir()
    closed.write_bytes(p.read_bytes())
    write_meta(closed, mcq, family="vlm")
    got = validate(mcq, closed).aligned.predicted.tolist()
    assert got[0] == -1 and got[3] == 0 and got[1] == (rows[1]["answer"] + 1) % 5
    s = score(mcq, p, tmp_path / "scores.json")["datasets"]["imagenet-mcq"]
    assert s["no_answer"] == sum(w == -1 for w in want)


def test_class_ids_outside_imagenet_give_no_synonyms_not_a_traceback() -> None:
    from vlmrobust.evaluation.scoring.dataset import score_tables

    dataset = pa.table({"id": ["a", "b"], "options": [["tench", "goldfish"]] * 2,
                        "option_class_ids": [[-1, 5000], [0, 1]], "answer": [1, 1]})
    manifest = {"spec": {"name": "toy", "version": "1"}, "configs": {"default": 2}}
    preds = pa.table({"id": ["a", "b"], "text": ["Carassius auratus", "Carassius auratus"]})
    s = score_tables(dataset, manifest, preds)["datasets"]["toy"]
    # row a: ids are not ImageNet classes, so the lemma decides nothing; row b: goldfish
    assert s["no_answer"] == 1 and s["configs"]["default"]["accuracy"] == 0.5


def test_cli_score_reports_no_answer_and_the_rows_file(mcq: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rows = dataset_rows(mcq)
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "text": t}
                                           for r, t in zip(rows, _texts(rows), strict=True)])
    write_meta(p, mcq, family="vlm")
    out = tmp_path / "o" / "scores.json"
    assert main(["score", "--dataset", str(mcq), "--predictions", str(p), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no answer in 8 rows (counted as wrong)" in printed
    assert f"wrote {out} and {tmp_path / 'o' / 'scores.rows.jsonl'}" in printed
