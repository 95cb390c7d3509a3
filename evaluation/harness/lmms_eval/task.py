"""The files of an lmms-eval task folder (``vlmrobust export lmms-eval``): one
YAML per (config, output type) and one ``utils.py`` that lmms-eval imports.

``utils.py`` runs inside lmms-eval's own environment, where vlmrobust is not
installed, so it holds the prompt as data (the seed prompt's kind and text, the
answer instruction) and repeats the two renderings of
vlmrobust.models.readers: the ``likelihood`` user turn (the question alone,
options as answers) and the ``generate`` / ``letter`` user turn
(``format_question``). tests/evaluation/harness/lmms_eval/test_bridge.py imports the written
file and checks both against the registry on every row, so a prompt id means
the same in both tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlmrobust.core.errors import VlmrobustError

MULTIPLE_CHOICE = "multiple_choice"
GENERATE_UNTIL = "generate_until"
OUTPUT_TYPES = (MULTIPLE_CHOICE, GENERATE_UNTIL)
#: the task-name suffix of each output type
SUFFIX = {MULTIPLE_CHOICE: "", GENERATE_UNTIL: "_gen"}
# what an exported task generates at most (as `vlmrobust predict --max-new-tokens`)
MAX_NEW_TOKENS = 256
# bump when the files' layout changes (recorded in each task's metadata)
TASK_VERSION = 1


def task_name(family: str, config: str, output_type: str) -> str:
    """``vlmrobust_<family>_<config>`` (``_gen`` for generate_until), with every
    character outside [A-Za-z0-9_] written as ``_``.

    >>> task_name("imagenet-mcq", "imagenet-r-wordnet", "multiple_choice")
    'vlmrobust_imagenet_mcq_imagenet_r_wordnet'
    >>> task_name("bench-c", "default", "generate_until")
    'vlmrobust_bench_c_default_gen'
    """
    base = re.sub(r"[^A-Za-z0-9_]", "_", f"vlmrobust_{family}_{config}")
    return base + SUFFIX[output_type]


@dataclass(frozen=True)
class TaskSpec:
    """One exported task: which config, output type and dataset build it reads."""

    name: str
    config: str
    output_type: str
    dataset_path: str
    revision: str | None
    # datasets' cache for this build: inside the task folder, named by the fingerprint.
    # datasets reuses a local folder's cached copy across rebuilds of the same folder
    # (same path, config and file names: seen with datasets 4.8), so a shared cache
    # could hand lmms-eval an older build's rows.
    cache_dir: str
    fingerprint: str
    family: str
    version: str
    prompt_id: str

    def __post_init__(self) -> None:
        if self.output_type not in OUTPUT_TYPES:
            raise ValueError(f"output_type must be one of {OUTPUT_TYPES}, got {self.output_type!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", self.fingerprint):
            raise VlmrobustError(f"dataset {self.dataset_path}: its manifest has no sha256 "
                                 "fingerprint; rebuild it with 'vlmrobust build'")


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=False)


def task_yaml(spec: TaskSpec, tool_version: str) -> str:
    """The task's YAML: the dataset read from ``dataset_path`` / ``dataset_name``
    (a local dataset directory or a hub id), the rows made by ``utils.py``."""
    kwargs = f"\n  cache_dir: {_q(spec.cache_dir)}"
    if spec.revision:
        kwargs += f"\n  revision: {_q(spec.revision)}"
    lines = [
        f"# written by vlmrobust {tool_version} (vlmrobust export lmms-eval); dataset "
        f"{spec.family} {spec.version}, build {spec.fingerprint[:12]}",
        f"task: {_q(spec.name)}",
        f"dataset_path: {_q(spec.dataset_path)}",
        f"dataset_name: {_q(spec.config)}",
        f"dataset_kwargs:{kwargs}",
        "test_split: test",
        f"output_type: {spec.output_type}",
        "process_docs: !function utils.process_docs",
        "doc_to_visual: !function utils.doc_to_visual",
    ]
    if spec.output_type == MULTIPLE_CHOICE:
        lines += [
            "doc_to_text: !function utils.doc_to_text_question",
            "doc_to_choice: !function utils.doc_to_choice",
            "doc_to_target: answer",
            'target_delimiter: " "',
            "process_results: !function utils.process_results_choice",
            "metric_list:",
            "  - metric: acc",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    else:
        lines += [
            "doc_to_text: !function utils.doc_to_text_lettered",
            "doc_to_target: answer",
            "generation_kwargs:",
            f"  max_new_tokens: {MAX_NEW_TOKENS}",
            "  temperature: 0",
            "  do_sample: false",
            "  until: []",
            "process_results: !function utils.process_results_letter",
            "metric_list:",
            "  - metric: letter_match",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    lines += [
        "metadata:",
        f"  version: {TASK_VERSION}",
        f"  vlmrobust_fingerprint: {_q(spec.fingerprint)}",
        f"  vlmrobust_dataset: {_q(spec.family)}",
        f"  vlmrobust_dataset_version: {_q(spec.version)}",
        f"  vlmrobust_config: {_q(spec.config)}",
        f"  vlmrobust_prompt: {_q(spec.prompt_id)}",
    ]
    return "\n".join(lines) + "\n"


UTILS_TEMPLATE = '''\
"""lmms-eval task functions written by vlmrobust {tool_version} (`vlmrobust export
lmms-eval`) for dataset build {fingerprint}, prompt {prompt_id!r}.

The prompt is held as data and rendered as vlmrobust renders it, so the same
prompt id means the same text in both tools. Do not edit: export again."""

import json
import os

FINGERPRINT = {fingerprint!r}
# the local dataset directory the tasks read (None: a hub dataset)
DATASET_DIR = {dataset_dir!r}
# the seed prompt: kind "class" writes every option through TEXT ({{class}} = the
# option), kind "question" replaces the dataset question by TEXT; None: as given
PROMPT_KIND = {kind!r}
PROMPT_TEXT = {text!r}
INSTRUCTION = {instruction!r}
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def process_docs(dataset):
    """Refuse a dataset directory rebuilt since the export; stamp every doc with
    the build (lmms-eval 0.7 logs a hash of each doc, older versions the doc)."""
    if DATASET_DIR is not None:
        with open(os.path.join(DATASET_DIR, "manifest.json"), encoding="utf-8") as f:
            found = json.load(f).get("fingerprint")
        if found != FINGERPRINT:
            raise ValueError(
                f"{{DATASET_DIR}} is dataset build {{str(found)[:12]}}, but these tasks were "
                f"exported for build {{FINGERPRINT[:12]}}: run 'vlmrobust export lmms-eval' again")
    return dataset.add_column("vlmrobust_fingerprint", [FINGERPRINT] * len(dataset))


def _texts(doc):
    question, options = str(doc["question"] or ""), [str(o) for o in doc["options"]]
    if PROMPT_KIND == "class":
        return question, [PROMPT_TEXT.replace("{{class}}", o) for o in options]
    if PROMPT_KIND == "question":
        return PROMPT_TEXT, options
    return question, options


def doc_to_visual(doc):
    image = doc["image"]
    return [image.convert("RGB") if image.mode != "RGB" else image]


def doc_to_text_question(doc):
    """multiple_choice: the question alone; each option is a continuation."""
    return _texts(doc)[0].strip()


def doc_to_choice(doc):
    return _texts(doc)[1]


def doc_to_text_lettered(doc):
    """generate_until: the question, the lettered options, the instruction."""
    question, options = _texts(doc)
    lines = [question.strip()] + [f"{{LETTERS[i]}}. {{o}}" for i, o in enumerate(options)]
    return "\\n".join([*lines, INSTRUCTION])


def _loss(response):
    """A log-likelihood response: (loss, is_greedy), or the text of that tuple,
    which lmms-eval 0.7's evaluator makes of every response that is not text
    (api/instance.py unwrap_generation_output), so that its own multiple_choice
    scoring cannot unpack it."""
    if isinstance(response, str):
        response = response.strip().strip("()").split(",")[0]
    elif isinstance(response, (tuple, list)):
        response = response[0]
    return float(response)


def process_results_choice(doc, results):
    """lmms-eval's multiple_choice accuracy: the option of least loss (its
    model classes return the loss, api/task.py), on the responses as logged."""
    losses = [_loss(r) for r in results]
    return {{"acc": float(losses.index(min(losses)) == int(doc["answer"]))}}


def process_results_letter(doc, results):
    """A rough in-harness score (the output starts with the right letter);
    `vlmrobust import lmms-eval` never reads it: the answer is re-read from the
    text by vlmrobust's matcher."""
    text = (results[0] if results else "") or ""
    head = text.strip().lstrip("(").upper()[:1]
    return {{"letter_match": float(head == LETTERS[int(doc["answer"])])}}
'''


def utils_py(*, tool_version: str, fingerprint: str, dataset_dir: str | None,
             prompt_id: str, prompt: Mapping[str, Any]) -> str:
    """The ``utils.py`` source; ``prompt`` holds ``kind``, ``text``, ``instruction``."""
    return UTILS_TEMPLATE.format(tool_version=tool_version, fingerprint=fingerprint,
                                 dataset_dir=dataset_dir, prompt_id=prompt_id,
                                 kind=prompt["kind"], text=prompt["text"],
                                 instruction=prompt["instruction"])
