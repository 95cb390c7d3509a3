"""lmms-eval bridge, import side: the per-sample log of ``lmms_eval ...
--log_samples`` for tasks written by ``vlmrobust export lmms-eval``, as a
predictions file.

lmms-eval (0.7.x, loggers/evaluation_tracker.py) writes, per task,
``<date>_samples_<task>.jsonl`` beside ``<date>_results.json``. A sample line
holds ``doc_id`` (the row's position in the config, in the dataset's order),
``target`` (str of the answer index), ``input`` (the rendered question),
``filtered_resps`` and the task's metrics; it no longer holds the doc. The
results JSON holds each task's config (with our ``metadata``: the dataset
build's fingerprint, config and prompt), ``lmms_eval_version`` and the model
(``config.model``, ``model_name``).

- ``multiple_choice``: ``filtered_resps`` is one ``[value, is_greedy]`` per
  option. lmms-eval's convention (api/task.py: "we return the actual loss ...
  we just use the argmin") is that the value is a loss: lower is better; its
  model classes return the negative log-likelihood (``llava_hf``: the mean
  token cross-entropy of the continuation). The logit is ``-value``, except
  where the value also averages prompt tokens (``llava_hf`` with an image of
  several tokens, llava_hf.py): then lmms-eval's argmin is the ``prediction``
  and there are no logits (accuracy only, ``harness.accuracy_only``).
- ``generate_until``: ``filtered_resps`` is the text; it is kept as ``text``
  and ``prediction`` is read from it by vlmrobust.core.text.matcher.

Each row is checked against the dataset before anything is written: the
results JSON's build, ``input`` against the question as the exported prompt
renders it, ``target`` against the answer, one value per option, every row of
the config present once, and lmms-eval's own per-row score against the
values it was computed from (a forged ``acc`` or edited log-likelihood).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.fingerprint import file_sha256
from vlmrobust.evaluation.harness.lmms_eval.llava_hf import accuracy_only_reason
from vlmrobust.evaluation.harness.lmms_eval.task import GENERATE_UNTIL, MULTIPLE_CHOICE
from vlmrobust.evaluation.predictions.jsonl import MAX_TEXT_CHARS

MAX_SAMPLES_BYTES = 1 << 30
MAX_LINE_BYTES = 4 << 20
MAX_RESULTS_BYTES = 64 << 20
SAMPLES_MARK = "_samples_"


@dataclass(frozen=True)
class SamplesFile:
    path: Path
    task: str
    results: Path


def locate(path: Path, results: Path | None = None) -> SamplesFile:
    """The task a samples file answers and the results JSON beside it."""
    from vlmrobust.evaluation.harness.vlmevalkit.results import refuse_not_a_file

    refuse_not_a_file(path, "give lmms-eval's <date>_samples_<task>.jsonl from its --output_path")
    stem = path.name.removesuffix(".jsonl")
    date, mark, task = stem.partition(SAMPLES_MARK)
    if not mark or not task or path.suffix != ".jsonl":
        raise VlmrobustError(f"{path}: not an lmms-eval samples file (lmms-eval names them "
                             "<date>_samples_<task>.jsonl)")
    if results is None:
        results = path.with_name(f"{date}_results.json")
        if not results.exists():
            raise VlmrobustError(f"{path}: no {results.name} beside it (lmms-eval writes both "
                                 "into one folder); give it with --results")
    return SamplesFile(path, task, results)


def read_results(path: Path) -> dict[str, Any]:
    from vlmrobust.core.files.bounded import read_json_bounded

    obj = read_json_bounded(path, MAX_RESULTS_BYTES, "lmms-eval results JSON")
    if not isinstance(obj, dict) or not isinstance(obj.get("configs"), dict):
        raise VlmrobustError(f"{path}: not an lmms-eval results JSON (no 'configs')")
    return obj


def task_metadata(results: Mapping[str, Any], where: Path, task: str) -> dict[str, Any]:
    cfg = results["configs"].get(task)
    meta = cfg.get("metadata") if isinstance(cfg, dict) else None
    if not isinstance(meta, dict) or "vlmrobust_fingerprint" not in meta:
        raise VlmrobustError(f"{where}: task {task!r} was not exported by 'vlmrobust export "
                             "lmms-eval' (its config has no vlmrobust_fingerprint metadata)")
    out = dict(meta)
    out["output_type"] = cfg.get("output_type")
    return out


def read_samples(path: Path, max_rows: int) -> list[dict[str, Any]]:
    """The sample lines of ``path`` as a list (:func:`iter_samples`)."""
    return list(iter_samples(path, max_rows))


def iter_samples(path: Path, max_rows: int) -> Iterator[dict[str, Any]]:
    """The sample lines one at a time, size-bounded: at most ``max_rows`` lines
    of 4 MiB. Streamed (issue 41.1): the import keeps per row only its values,
    so a 160 MB samples file no longer peaks at 1.7 GB."""
    from vlmrobust.core.files.bounded import open_bounded

    rows = 0
    with open_bounded(path, MAX_SAMPLES_BYTES, "lmms-eval samples file") as f:
        n = 0
        while True:
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            n += 1
            if len(line) > MAX_LINE_BYTES:
                raise VlmrobustError(f"{path} line {n}: over {MAX_LINE_BYTES} bytes")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:  # + an int of > 4300 digits, deep nesting
                raise VlmrobustError(f"{path} line {n}: not JSON ({str(exc)[:120]})") from None
            if not isinstance(obj, dict):
                raise VlmrobustError(f"{path} line {n}: expected a JSON object")
            rows += 1
            if rows > max_rows:
                raise VlmrobustError(f"{path}: more than {max_rows} samples, more than the "
                                     "config has rows; not a log of this dataset")
            obj["_line"] = n
            yield obj


# lmms-eval 0.7's evaluator logs a (loss, is_greedy) response as the text of the
# tuple (api/instance.py unwrap_generation_output: str(output)); older versions as
# a JSON list. Python writes floats so that they read back exactly.
_TUPLE_RE = re.compile(r"\(\s*([-+0-9.eEinfaINF]+)\s*,\s*(True|False)\s*\)")


def _loss(value: Any, where: str) -> float:
    v: Any = value
    if isinstance(value, str):
        m = _TUPLE_RE.fullmatch(value.strip())
        v = m.group(1) if m else None
    elif isinstance(value, list) and len(value) == 2 and isinstance(value[1], bool):
        v = value[0]
    try:
        loss = float(v) if not isinstance(v, bool) and isinstance(v, (int, float, str)) else None
    except (ValueError, OverflowError):  # OverflowError: an int of 400 digits (issue 40.14)
        loss = None
    if loss is None or not math.isfinite(loss):
        raise VlmrobustError(f"{where}: a log-likelihood response is {str(value)[:60]!r}, not "
                             "(loss, is_greedy); not a multiple_choice log")
    return loss


def _text(value: Any, where: str) -> str:
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str):
        raise VlmrobustError(f"{where}: the response is {type(value).__name__}, not text; "
                             "not a generate_until log")
    return value


def expected_input(row: Mapping[str, Any], prompt_id: str, output_type: str) -> str:
    """The ``input`` lmms-eval logs for ``row`` (what the exported utils.py renders)."""
    from vlmrobust.models.readers.base import format_question, question_and_options

    options = [str(o) for o in row["options"]]
    if output_type == MULTIPLE_CHOICE:
        return question_and_options(str(row["question"] or ""), options, prompt_id)[0].strip()
    return format_question(str(row["question"] or ""), options, prompt_id)


def import_lmms_eval(samples: Sequence[str | Path], dataset: str | Path, out: str | Path,
                     results: str | Path | None = None, model: str | None = None,
                     family: str = "vlm", harness_version: str | None = None) -> Path:
    """Turn lmms-eval samples files (one per task; all of one output type) into
    one predictions file for ``dataset``. Nothing is written unless every row
    checks out (module doc)."""
    from vlmrobust.core.text.public_names import looks_like_path, public_name
    from vlmrobust.evaluation.predict.rows import DatasetReader
    from vlmrobust.evaluation.predictions.api import write_predictions

    if not samples:
        raise VlmrobustError("give at least one lmms-eval samples file")
    files = [locate(Path(p), Path(results) if results is not None else None) for p in samples]
    if not Path(dataset).is_dir():
        raise VlmrobustError(f"--dataset {dataset}: give the dataset directory the tasks were "
                             "exported from (a hub dataset: download it first)")
    reader = DatasetReader(dataset)
    fingerprint = reader.info.fingerprint
    ids: list[str] = []
    logits: list[list[float]] = []
    texts: list[str] = []
    predictions: list[int | None] = []
    configs: list[str] = []
    types: set[str] = set()
    prompts: set[str] = set()
    first_results: dict[str, Any] | None = None
    withheld: str | None = None  # why the values are not our logits (llava_hf.py)
    for sf in files:
        res = read_results(sf.results)
        first_results = first_results or res
        meta = task_metadata(res, sf.results, sf.task)
        if meta["vlmrobust_fingerprint"] != fingerprint:
            raise VlmrobustError(
                f"{sf.path}: task {sf.task} ran on dataset build "
                f"{str(meta['vlmrobust_fingerprint'])[:12]}..., not {dataset} "
                f"({fingerprint[:12]}...); export that dataset again and rerun lmms-eval")
        config, prompt_id, otype = (str(meta.get("vlmrobust_config")),
                                    str(meta.get("vlmrobust_prompt")), meta["output_type"])
        if otype not in (MULTIPLE_CHOICE, GENERATE_UNTIL):
            raise VlmrobustError(f"{sf.results}: task {sf.task} has output_type {otype!r}")
        types.add(otype)
        prompts.add(prompt_id)
        withheld = withheld or accuracy_only_reason(res, otype)
        if config in configs:
            raise VlmrobustError(f"{sf.path}: config {config!r} is given twice; import one "
                                 "samples file per config")
        if config not in reader.configs(None):
            raise VlmrobustError(f"{sf.path}: config {config!r} is not in {dataset}")
        configs.append(config)
        wanted = ["id", "question", "options", "answer"]
        if "option_class_ids" in reader.column_names(config):
            wanted.append("option_class_ids")
        cols = reader.read_columns(config, wanted)
        n = len(cols["id"])
        seen: set[int] = set()
        per_row: dict[int, tuple[list[float] | None, str | None]] = {}
        for s in iter_samples(sf.path, n):
            where = f"{sf.path} line {s['_line']}"
            doc = s.get("doc_id")
            if isinstance(doc, bool) or not isinstance(doc, int) or not 0 <= doc < n:
                raise VlmrobustError(f"{where}: doc_id {doc!r} is no row of config {config!r} "
                                     f"({n} rows); unknown id")
            if doc in seen:
                raise VlmrobustError(f"{where}: row {cols['id'][doc]!r} (doc_id {doc}) "
                                     "appears twice")
            seen.add(doc)
            row = {k: cols[k][doc] for k in cols}
            rid = str(row["id"])
            if s.get("input") != expected_input(row, prompt_id, otype) \
                    or str(s.get("target")) != str(int(row["answer"])):
                raise VlmrobustError(
                    f"{where}: row {rid!r} (doc_id {doc}) asks another question or answer than "
                    f"{dataset} has; the log is of another dataset build or order")
            resps = s.get("filtered_resps")
            if otype == MULTIPLE_CHOICE:
                k = len(row["options"])
                if not isinstance(resps, list) or len(resps) != k:
                    raise VlmrobustError(f"{where}: row {rid!r} has {k} options but "
                                         f"{len(resps) if isinstance(resps, list) else 0} "
                                         "log-likelihoods")
                losses = [_loss(v, where) for v in resps]
                _check_acc(s, losses, int(row["answer"]), where, rid)
                per_row[doc] = ([-v for v in losses], None)
            else:
                said = _text(resps, where)
                if len(said) > MAX_TEXT_CHARS:  # validate's bound on a text value
                    raise VlmrobustError(f"{where}: row {rid!r}'s response is over "
                                         f"{MAX_TEXT_CHARS} characters; not a model's answer")
                _check_letter(s, said, int(row["answer"]), where, rid)
                per_row[doc] = (None, said)
        if otype == GENERATE_UNTIL and n and all(not t for _, t in per_row.values()):
            raise VlmrobustError(
                f"{sf.path}: every response is empty; lmms-eval logs '' for a row whose "
                "generation failed (its log says 'Error ... in generating'): fix the run first")
        missing = [i for i in range(n) if i not in seen]
        if missing:
            raise VlmrobustError(
                f"{sf.path}: {len(missing)} of {n} rows of config {config!r} are missing, first "
                f"{cols['id'][missing[0]]!r} (doc_id {missing[0]}); run lmms-eval without --limit")
        for i in range(n):
            lg, text = per_row[i]
            ids.append(str(cols["id"][i]))
            if lg is not None:
                logits.append(lg)
            if text is not None:
                texts.append(text)
                predictions.append(_match(text, cols_row(cols, i)))
    if len(types) > 1 or len(prompts) > 1:
        raise VlmrobustError("the samples files mix output types or prompts; import the "
                             "multiple_choice and the generate_until logs separately")
    assert first_results is not None
    otype, prompt_id = types.pop(), prompts.pop()
    name = model or _model_name(first_results)
    if looks_like_path(name):
        name = public_name(name, None)[0]
    harness = {"name": "lmms-eval",
               "version": harness_version or _version(first_results),
               "result_file": ", ".join(sf.path.name for sf in files)[:300],
               "result_sha256": file_sha256(files[0].path) if len(files) == 1 else _combined(files),
               "model_class": str((first_results.get("config") or {}).get("model") or "")[:100],
               "output_type": otype}
    common: dict[str, Any] = {"model": name, "family": family, "out": out,
                              "prompt_id": prompt_id, "configs": configs, "harness": harness}
    if otype == MULTIPLE_CHOICE and withheld is not None:
        harness["accuracy_only"] = withheld
        # lmms-eval's own choice: the first argmin of its values (_check_acc)
        choice = [max(range(len(lg)), key=lg.__getitem__) for lg in logits]
        return write_predictions(Path(dataset), ids, prediction=choice,
                                 mode="lmms-eval:loglikelihood", **common)
    if otype == MULTIPLE_CHOICE:
        return write_predictions(Path(dataset), ids, logits=logits,
                                 mode="lmms-eval:loglikelihood", **common)
    return write_predictions(Path(dataset), ids, text=texts, prediction=predictions,
                             mode="generate", **common)


def cols_row(cols: Mapping[str, list[Any]], i: int) -> dict[str, Any]:
    return {k: v[i] for k, v in cols.items()}


def _match(text: str, row: Mapping[str, Any]) -> int | None:
    """The option the text answers, read as validate reads it (evaluation/scoring/text_answers.py):
    the dataset's options, with the WordNet synonyms of ImageNet-1k option classes."""
    from vlmrobust.core.classes import N_CLASSES
    from vlmrobust.core.text.matcher import match_option, row_synonyms

    ids = row.get("option_class_ids")
    ok = ids is not None and all(isinstance(c, int) and 0 <= c < N_CLASSES for c in ids)
    return match_option(text, [str(o) for o in row["options"]],
                        row_synonyms(row) if ok else None)


def _check_acc(sample: Mapping[str, Any], losses: Sequence[float], answer: int, where: str,
               rid: str) -> None:
    """lmms-eval's ``acc`` is 1 when the argmin loss is the answer (api/task.py);
    a row whose recorded ``acc`` says otherwise was edited after the run."""
    acc = sample.get("acc")
    if acc is None:
        return
    low = min(losses)
    tied = [i for i, v in enumerate(losses) if v == low]
    if (acc == 1) != (tied[0] == answer):
        raise VlmrobustError(f"{where}: row {rid!r} records acc {acc} but its log-likelihoods "
                             f"pick option {tied[0]}, answer {answer}: the log was edited "
                             "(forged); import lmms-eval's own output")


def _check_letter(sample: Mapping[str, Any], text: str, answer: int, where: str,
                  rid: str) -> None:
    """The exported generate task's ``letter_match`` (utils.process_results_letter,
    computed by lmms-eval from the text it generated) against the logged text:
    they disagree when the text was edited after the run."""
    got = sample.get("letter_match")
    if got is None:
        return
    head = text.strip().lstrip("(").upper()[:1]
    if (got == 1) != (head == "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[answer]):
        raise VlmrobustError(f"{where}: row {rid!r} records letter_match {got} but its text "
                             f"{text[:40]!r} says otherwise: the log was edited (forged); "
                             "import lmms-eval's own output")


def _combined(files: Sequence[SamplesFile]) -> str:
    h = hashlib.sha256()
    for sf in sorted(files, key=lambda f: f.path.name):
        h.update(f"{sf.path.name}\t{file_sha256(sf.path)}\n".encode())
    return h.hexdigest()


def _version(results: Mapping[str, Any]) -> str:
    """lmms-eval's ``lmms_eval_version`` (``<branch>@<commit>`` of a git checkout;
    a pip install records ``unknown@unknown``, which says nothing: 'unrecorded')."""
    v = str(results.get("lmms_eval_version") or "")
    return v[:100] if v and v.replace("unknown", "").strip("@") else "unrecorded"


def _model_name(results: Mapping[str, Any]) -> str:
    name = results.get("model_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    raise VlmrobustError("the lmms-eval results JSON names no model (model_name); "
                         "pass --model NAME")
