"""VLMEvalKit bridge: a built dataset as the TSV VLMEvalKit loads as a custom
MCQ dataset, and VLMEvalKit's per-sample result file back as a predictions file.

Export writes VLMEvalKit's MCQ columns (``index``, base64 ``image``,
``question``, ``A``..., ``answer`` as a letter, ``category`` = our config) plus
four columns of ours that VLMEvalKit carries through to its result file
untouched: ``vlmrobust_id``, ``vlmrobust_config``, ``vlmrobust_fingerprint``
(the dataset build) and ``vlmrobust_tsv`` (the TSV's stem, which VLMEvalKit
uses as the dataset name in its result file name ``<model>_<dataset>.xlsx``).

Import reads the result file's ``prediction`` column (VLMEvalKit's raw model
output) into the predictions' ``text``; the answer is then read by
vlmrobust.core.text.matcher, never taken from VLMEvalKit's own extraction.
"""

from __future__ import annotations

import base64
import csv
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.fingerprint import file_sha256
from vlmrobust.core.kinds import refuse_open
from vlmrobust.evaluation.harness.vlmevalkit.results import (
    LETTERS,
    OUR_COLUMNS,
    located_result_rows,
)


def export_vlmevalkit(dataset: str | Path, out: str | Path, config: str | None = None,
                      prompt: str | None = None) -> tuple[Path, str, int]:
    """Write ``out`` (.tsv) for the configs of ``dataset`` (all, or ``config``);
    return (path, md5, rows). ``prompt`` rewrites the question and option texts
    as the project's prompt of that id does for VLMs (e.g. ``photo-of``), so a
    prompt id means the same in both tools."""
    from vlmrobust.core.files.atomic import atomic_file
    from vlmrobust.core.files.output_guard import check_file_output
    from vlmrobust.evaluation.predict.rows import DatasetReader
    from vlmrobust.models.label_space_prompts import resolve_vlm_prompt

    out = Path(out)
    if out.suffix != ".tsv":
        raise VlmrobustError(f"--out {out}: VLMEvalKit loads a .tsv file; name it NAME.tsv")
    prompt_id = resolve_vlm_prompt(prompt)
    reader = DatasetReader(dataset)
    check_file_output(out, "--out", input_dirs=[reader.local])
    configs = reader.configs(config)
    refuse_open(reader.manifest, configs, f"{reader.source}/manifest.json")
    for cfg in configs:  # a label-space (classification, ood) config has no options to letter
        missing = {"image", "question", "options", "answer"} - set(reader.column_names(cfg))
        if missing:
            raise VlmrobustError(f"{reader.where(cfg)}: no {', '.join(sorted(missing))} column; "
                                 "VLMEvalKit benchmarks are exported for multiple-choice datasets")
    fingerprint = reader.info.fingerprint
    rows = list(_export_rows(reader, configs))
    if not rows:
        raise VlmrobustError(f"{dataset}: no rows to export")
    k_max = max(len(r["options"]) for _, r in rows)
    if k_max > len(LETTERS):
        raise VlmrobustError(f"{dataset}: {k_max} options; VLMEvalKit letters at most 26")
    header = ["index", "image", "question", *LETTERS[:k_max], "answer", "category", *OUR_COLUMNS]
    md5 = hashlib.md5(usedforsecurity=False)
    with atomic_file(out, "w") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        for index, (cfg, row) in enumerate(rows):
            question, options, answer = _shown(row, prompt_id)
            cells = [str(index), _image_b64(row["image"], row["id"]), question,
                     *(options + [""] * (k_max - len(options))),
                     answer, cfg,
                     str(row["id"]), cfg, fingerprint, out.stem]
            writer.writerow(cells)
    with out.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            md5.update(chunk)
    return out, md5.hexdigest(), len(rows)


def _shown(row: Mapping[str, Any], prompt_id: str | None) -> tuple[str, list[str], str]:
    """The question, option texts and answer letter a row is exported with
    (``prompt_id`` rewrites the texts as the project's VLM prompt does)."""
    from vlmrobust.models.prompts import SEED_PROMPTS

    question, options = str(row["question"]), [str(o) for o in row["options"]]
    if prompt_id is not None and prompt_id in SEED_PROMPTS:
        question, options = SEED_PROMPTS[prompt_id].vlm_texts(question, options)
    return question, options, LETTERS[int(row["answer"])]


def _cell(value: Any) -> str:
    """A result cell as text (xlsx gives numbers and None where the TSV had text)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _check_shown(result: Path, rows: Sequence[Mapping[str, Any]], dataset: str | Path,
                 configs: Sequence[str], prompt: str | None) -> None:
    """Each result row's question, option letters and answer equal what the export
    wrote for its dataset row: a result edited after the run is refused."""
    from vlmrobust.evaluation.predict.rows import DatasetReader
    from vlmrobust.models.label_space_prompts import resolve_vlm_prompt

    if "question" not in rows[0]:
        return  # a result file without the TSV's columns: nothing to compare
    prompt_id = resolve_vlm_prompt(prompt)
    reader = DatasetReader(dataset)
    shown: dict[str, tuple[str, list[str], str]] = {}
    for cfg in configs:
        cols = reader.read_columns(cfg, ["id", "question", "options", "answer"])
        for i, rid in enumerate(cols["id"]):
            shown[str(rid)] = _shown({k: cols[k][i] for k in cols}, prompt_id)
    for n, r in enumerate(rows, start=1):
        want = shown.get(str(r.get("vlmrobust_id")))
        if want is None:
            continue  # an unknown id: write_predictions refuses it as validate does
        question, options, answer = want
        cells = {"question": question, "answer": answer,
                 **{LETTERS[j]: o for j, o in enumerate(options)}}
        for col, value in cells.items():
            if col in r and _cell(r[col]) != value:
                raise VlmrobustError(
                    f"{result} record {n} (id {r.get('vlmrobust_id')!r}): its {col!r} differs "
                    "from the dataset row's as exported (an edited result file, or one exported "
                    "with another --prompt: import it with the export's --prompt)")


def _export_rows(reader: Any, configs: Sequence[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for cfg in configs:
        n = len(reader.read_columns(cfg, ["id"])["id"])
        for _, row in reader.iter_rows(cfg, set(range(n))):
            yield cfg, row


def _image_b64(image: Any, rid: Any) -> str:
    data = image.get("bytes") if isinstance(image, Mapping) else image
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise VlmrobustError(f"row {rid!r}: the image has no embedded bytes; rebuild the dataset")
    return base64.b64encode(bytes(data)).decode("ascii")


def read_result_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a VLMEvalKit result file (.xlsx, .tsv or .jsonl), size-bounded."""
    return [r for _, r in located_result_rows(path)]


def prediction_text(value: Any, where: str, rid: Any) -> str:
    """A result row's ``prediction`` cell as the answer text: text as it is, a
    number as the sheet shows it; a null, a list, a mapping or another non-text
    cell is refused rather than scored as some text nobody wrote.

    >>> prediction_text(" (B) cat", "r.jsonl line 2", "x"), prediction_text(3.0, "r.xlsx", "x")
    (' (B) cat', '3')
    """
    fix = ("the prediction column holds the model's answer text; rerun VLMEvalKit's "
           "inference for it, or write its raw output there")
    if value is None or (isinstance(value, float) and value != value):
        raise VlmrobustError(f"{where} (id {rid!r}): the prediction is empty (null); {fix}")
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _cell(value)
    what = {list: "a list", dict: "a mapping", bool: "a true/false value"}.get(
        type(value), f"a {type(value).__name__}")
    raise VlmrobustError(f"{where} (id {rid!r}): the prediction is {what}, not text; {fix}")


def model_from_filename(path: Path, tsv_stem: str) -> str | None:
    """VLMEvalKit names a result ``<model>_<dataset>.<ext>``; the dataset is the TSV stem.

    >>> model_from_filename(Path("Qwen2-VL-7B_vlmrobust-mcq.xlsx"), "vlmrobust-mcq")
    'Qwen2-VL-7B'
    >>> model_from_filename(Path("results.xlsx"), "vlmrobust-mcq") is None
    True
    """
    suffix = f"_{tsv_stem}"
    return path.stem[: -len(suffix)] if path.stem.endswith(suffix) and path.stem != suffix else None


def import_vlmevalkit(result: str | Path, dataset: str | Path, out: str | Path,
                      model: str | None = None, family: str = "vlm",
                      harness_version: str | None = None, prompt: str | None = None) -> Path:
    """Turn a VLMEvalKit result file into a predictions file for ``dataset``.
    Rows of another dataset build, unknown ids and missing rows are refused
    (as ``validate`` refuses them); nothing is written then."""
    from vlmrobust.evaluation.predict.rows import DatasetReader
    from vlmrobust.evaluation.predictions.api import write_predictions
    from vlmrobust.evaluation.validate.dataset_index import BYTES_BASE, BYTES_PER_ROW

    result = Path(result)
    reader = DatasetReader(dataset)
    # one row per dataset row: the bounds validate sets for this dataset's predictions
    n_rows = sum(v for v in (reader.manifest.get("configs") or {}).values()
                 if isinstance(v, int) and not isinstance(v, bool))
    located = located_result_rows(result, max_rows=max(n_rows, 1),
                                  max_bytes=BYTES_BASE + BYTES_PER_ROW * max(n_rows, 1))
    rows = [r for _, r in located]
    if not rows:
        raise VlmrobustError(f"{result}: no rows")
    missing = [c for c in ("vlmrobust_id", "vlmrobust_fingerprint", "prediction") if c not in rows[0]]
    if missing:
        raise VlmrobustError(
            f"{result}: no {', '.join(missing)} column; import results of a TSV written by "
            "'vlmrobust export vlmevalkit' (VLMEvalKit keeps its columns)")
    fingerprint = reader.info.fingerprint
    ids, texts, configs = [], [], []
    for n, (loc, r) in enumerate(located, start=1):
        if str(r.get("vlmrobust_fingerprint")) != fingerprint:
            raise VlmrobustError(
                f"{result} record {n} (id {r.get('vlmrobust_id')!r}): answers dataset build "
                f"{str(r.get('vlmrobust_fingerprint'))[:12]}..., not {dataset} "
                f"({fingerprint[:12]}...); export that dataset again and rerun VLMEvalKit")
        ids.append(str(r["vlmrobust_id"]))
        texts.append(prediction_text(r.get("prediction"), f"{result} {loc}", r["vlmrobust_id"]))
        configs.append(str(r.get("vlmrobust_config") or ""))
    _check_shown(result, rows, dataset, sorted({c for c in configs if c}), prompt)
    name = model or model_from_filename(result, str(rows[0].get("vlmrobust_tsv") or ""))
    if not name:
        raise VlmrobustError(f"{result}: cannot tell the model from the file name "
                             "(VLMEvalKit writes <model>_<dataset>.xlsx); pass --model NAME")
    harness = {"name": "vlmevalkit", "version": harness_version or "unrecorded",
               "result_file": result.name, "result_sha256": file_sha256(result)}
    return write_predictions(dataset, ids, text=texts, model=name, family=family, out=out,
                             prompt_id=prompt, configs=sorted(set(configs)) or None,
                             harness=harness, source=result)  # errors name the result file


