"""lmms-eval bridge, export side: a built dataset as lmms-eval tasks.

``export_lmms_eval`` writes one folder for ``lmms_eval --include_path DIR``:
per config, a ``multiple_choice`` task (``vlmrobust_<family>_<config>``: the
question alone, each option a continuation, so the harness logs one
log-likelihood per option) and a ``generate_until`` task (``..._gen``: the
lettered question, free text); one ``utils.py`` rendering our prompt registry's
texts (evaluation/harness/lmms_eval/task.py); and ``vlmrobust_tasks.json``, our record
of what was exported (tasks, configs, the dataset build, the prompt).

The tasks read the dataset itself: a local dataset directory by its absolute
path (``datasets.load_dataset(DIR, CONFIG)``, offline), or a hub dataset by its
id and revision. Each names the build's fingerprint in its ``metadata``, which
lmms-eval copies into its results JSON; ``utils.process_docs`` refuses a local
directory rebuilt since the export. The import side is
evaluation/harness/lmms_eval/import_.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import refuse_open
from vlmrobust.evaluation.harness.lmms_eval.task import (
    MULTIPLE_CHOICE,
    OUTPUT_TYPES,
    TASK_VERSION,
    TaskSpec,
    task_name,
    task_yaml,
    utils_py,
)

RECORD = "vlmrobust_tasks.json"
UTILS = "utils.py"
CACHE = ".hf-datasets-cache"


@dataclass(frozen=True)
class ExportedTasks:
    out: Path
    names: tuple[str, ...]
    fingerprint: str
    output_types: tuple[str, ...] = ()  # per name, in the same order

    def run_lines(self) -> list[str]:
        """One lmms-eval command line per output type. multiple_choice needs
        ``--force_simple``: lmms-eval 0.7.3's chat model classes build message
        requests for generation only ("messages is used for generation only")
        and exit 0 with no samples without it."""
        lines = []
        for kind in sorted(set(self.output_types)):
            names = [n for n, t in zip(self.names, self.output_types, strict=True) if t == kind]
            simple = " --force_simple" if kind == MULTIPLE_CHOICE else ""
            lines.append(f"lmms_eval --model MODEL{simple} --model_args pretrained=... "
                         f"--include_path {self.out} --tasks {','.join(names)} "
                         "--log_samples --output_path logs/")
        return lines


def prompt_data(prompt_id: str) -> dict[str, str | None]:
    """The prompt as ``utils.py`` holds it: seed prompt kind and text (None for
    an answer-instruction id), and the answer instruction of the lettered turn."""
    from vlmrobust.models.prompts import DEFAULT_VLM_PROMPT, SEED_PROMPTS, VLM_INSTRUCTIONS

    seed = SEED_PROMPTS.get(prompt_id)
    return {"kind": seed.kind if seed else None, "text": seed.text if seed else None,
            "instruction": VLM_INSTRUCTIONS.get(prompt_id, VLM_INSTRUCTIONS[DEFAULT_VLM_PROMPT])}


def _owned(folder: Path) -> bool:
    """Whether ``folder`` holds only what an earlier export wrote."""
    names = {e.name for e in os.scandir(folder)}
    if RECORD not in names:
        return False
    return all(n in (RECORD, UTILS, CACHE, "__pycache__") or n.endswith(".yaml") for n in names)


def _export_carry(previous: Path) -> Callable[[str], bool]:
    """At swap time, drop what an earlier export wrote; anything else that
    appeared in the folder while this one ran is carried over."""
    def written(rel: str) -> bool:
        top = rel.split("/", 1)[0]
        return top in (RECORD, UTILS, CACHE, "__pycache__") or ("/" not in rel
                                                                and rel.endswith(".yaml"))
    return written


def export_lmms_eval(dataset: str | Path, out: str | Path, config: str | None = None,
                     prompt: str | None = None,
                     output_types: Sequence[str] = OUTPUT_TYPES) -> ExportedTasks:
    """Write the task folder ``out`` for the configs of ``dataset`` (all, or
    ``config``). ``out`` must be new, empty, or an earlier export (replaced
    whole, atomically)."""
    from vlmrobust import __version__
    from vlmrobust.core.files.atomic import atomic_directory, write_text_atomic
    from vlmrobust.core.files.output_guard import check_not_input, lstat_or_none, resolve
    from vlmrobust.evaluation.predict.rows import DatasetReader
    from vlmrobust.models.label_space_prompts import resolve_vlm_prompt

    out = Path(out)
    bad = [t for t in output_types if t not in OUTPUT_TYPES]
    if bad or not output_types:
        raise VlmrobustError(f"--output-type {bad[0] if bad else ''!r}: use "
                             f"{' or '.join(OUTPUT_TYPES)}")
    prompt_id = resolve_vlm_prompt(prompt)
    reader = DatasetReader(dataset)
    info = reader.info
    resolve(out.parent, "--out")
    st = lstat_or_none(out, "--out")
    if st is not None:
        import stat

        if not stat.S_ISDIR(st.st_mode) or (any(os.scandir(out)) and not _owned(out)):
            raise VlmrobustError(f"--out {out} exists and is not a task folder written by "
                                 f"'vlmrobust export lmms-eval' (no {RECORD}); give a new or "
                                 "empty folder")
    check_not_input(out, "--out", input_dirs=[reader.local])
    configs = reader.configs(config)
    refuse_open(reader.manifest, configs, f"{reader.source}/manifest.json")
    for cfg in configs:
        missing = {"image", "question", "options", "answer"} - set(reader.column_names(cfg))
        if missing:
            raise VlmrobustError(f"{reader.where(cfg)}: no {', '.join(sorted(missing))} column; "
                                 "lmms-eval tasks are exported for multiple-choice datasets")
    if reader.local is not None:
        dataset_path, revision = str(reader.local.resolve()), None
    else:
        repo, _, rev = reader.source.partition("@")
        dataset_path, revision = repo, rev or None
    specs = [TaskSpec(name=task_name(info.name, cfg, t), config=cfg, output_type=t,
                      dataset_path=dataset_path, revision=revision,
                      cache_dir=str(out.resolve() / CACHE / info.fingerprint[:16]),
                      fingerprint=info.fingerprint, family=info.name, version=info.version,
                      prompt_id=prompt_id)
             for cfg in configs for t in output_types]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise VlmrobustError(f"{dataset}: two configs give the task name {dup!r} (names keep "
                             "[A-Za-z0-9_] only); export them one at a time with --config")
    record = {
        "tool": "vlmrobust", "tool_version": __version__, "task_version": TASK_VERSION,
        "dataset": {"name": info.name, "version": info.version,
                    "fingerprint": info.fingerprint, "source": info.source},
        "prompt_id": prompt_id,
        "tasks": {s.name: {"config": s.config, "output_type": s.output_type} for s in specs},
    }
    with atomic_directory(out, carry=_export_carry) as tmp:
        for s in specs:
            write_text_atomic(tmp / f"{s.name}.yaml", task_yaml(s, __version__))
        write_text_atomic(tmp / UTILS, utils_py(
            tool_version=__version__, fingerprint=info.fingerprint,
            dataset_dir=dataset_path if reader.local is not None else None,
            prompt_id=prompt_id, prompt=prompt_data(prompt_id)))
        write_text_atomic(tmp / RECORD, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return ExportedTasks(out=out, names=tuple(names), fingerprint=info.fingerprint,
                         output_types=tuple(s.output_type for s in specs))
