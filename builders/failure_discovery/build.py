"""``build(raw_spec, spec_path, options) -> manifest`` for the failure-discovery
family: records of ``vlmrobust discover`` + their images -> a dataset directory
with two configs of different kinds:

- ``open`` (kind ``open``): one row per question slot, every record kept (also
  invalid and missing questions, so QVR can be recomputed from the rows), in
  record order: the image, the question, the answerer's answer, the verdicts
  V / C with their justifications, skills, meta-skill, step, method and the
  questioner / answerer / verifier ids, plus the reference answer when one is
  known (choices.py);
- ``mcq`` (kind ``mcq``): one row per verified failure with a reference answer
  (choices.py), scored like every MCQ family. The records carry no reference
  answer (seed 004's verifier returns verdicts, not answers), so a failure
  without one is left out and counted in the card and the manifest's
  ``mcq_skipped``; when no failure has one (a single answerer's run: nobody
  answered its failures right) the build holds ``open`` alone.

The settings of the runs behind the records (runs.py: a ``<name>.run.json``
beside a records file, or a journal's ``discover_run.json``) go into the card,
one line per run, and into the manifest's ``source_runs``; the run records'
sha256 join the source fingerprints.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.failure_discovery.card import render_card
from vlmrobust.builders.failure_discovery.choices import (
    Choice,
    build_choices,
    norm_question,
    references,
)
from vlmrobust.builders.failure_discovery.runs import source_runs
from vlmrobust.builders.failure_discovery.source import (
    Source,
    fingerprints,
    parse_spec,
    read_source,
)
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.discover_records import DiscoveryRecord
from vlmrobust.core.errors import SourceError, VlmrobustError
from vlmrobust.core.kinds import OPEN
from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset

FAMILY = "failure-discovery"
OPEN_CONFIG = "open"
MCQ_CONFIG = "mcq"


def record_key(r: DiscoveryRecord) -> str:
    """A record's stable id: 16 hex of sha256 over what makes the slot unique."""
    parts = (r.method, r.questioner, r.answerer, r.verifier, str(r.seed), str(r.step),
             r.completion_id, str(r.slot))
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def open_features() -> Any:
    from datasets import Features, Image, List, Value

    s, b, i = Value("string"), Value("bool"), Value("int64")
    return Features({
        "id": s, "image": Image(), "question": s, "answerer_answer": s, "valid": b,
        "correct": b, "valid_reason": s, "correct_reason": s, "verifier_parsed": b,
        "reference_answer": s, "skills": List(s), "meta_skill": s, "step": i, "method": s,
        "questioner": s, "answerer": s, "verifier": s, "seed": i, "completion_id": s,
        "slot": i, "image_file": s, "image_sha256": s,
    })


def choice_features() -> Any:
    from datasets import Value

    s = Value("string")
    return mcq_features({
        "wrong_option": Value("int32"), "open_id": s, "question_type": s, "meta_skill": s,
        "method": s, "questioner": s, "answerer": s, "verifier": s, "step": Value("int64"),
        "image_file": s,
    })


def _image(src: Source, r: DiscoveryRecord) -> dict[str, Any]:
    return {"bytes": src.images[r.image], "path": None}


def open_rows(src: Source, keys: Sequence[str]) -> Iterator[dict[str, Any]]:
    refs = references(src.records)
    for r, key in zip(src.records, keys, strict=True):
        ref = refs.get((r.image_sha256, norm_question(r.question))) if r.question else None
        yield {"id": f"fd-{key}", "image": _image(src, r), "question": r.question,
               "answerer_answer": r.answer, "valid": r.valid, "correct": r.correct,
               "valid_reason": r.valid_reason, "correct_reason": r.correct_reason,
               "verifier_parsed": r.verifier_parsed, "reference_answer": ref,
               "skills": list(r.skills), "meta_skill": r.meta_skill, "step": r.step,
               "method": r.method, "questioner": r.questioner, "answerer": r.answerer,
               "verifier": r.verifier, "seed": r.seed, "completion_id": r.completion_id,
               "slot": r.slot, "image_file": r.image, "image_sha256": r.image_sha256}


def mcq_rows(src: Source, keys: Sequence[str], choices: Sequence[Choice],
             ) -> Iterator[dict[str, Any]]:
    for c in choices:
        r = src.records[c.source]
        yield {"id": f"fd-mcq-{keys[c.source]}", "image": _image(src, r),
               "question": r.question, "options": list(c.options), "answer": c.answer,
               "wrong_option": c.wrong_option, "open_id": f"fd-{keys[c.source]}",
               "question_type": c.qtype, "meta_skill": r.meta_skill, "method": r.method,
               "questioner": r.questioner, "answerer": r.answerer, "verifier": r.verifier,
               "step": r.step, "image_file": r.image}


def _unique_keys(src: Source) -> list[str]:
    keys = [record_key(r) for r in src.records]
    seen: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k in seen:
            r = src.records[i]
            raise SourceError(f"record of completion {r.completion_id!r} slot {r.slot} "
                              f"({r.method}, answerer {r.answerer}) appears twice among "
                              f"{', '.join(map(str, src.files))}; fix: keep each records "
                              "file once")
        seen[k] = i
    return keys


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    spec = parse_spec(raw_spec, spec_path)
    if options.sample or options.source_root is None:
        raise VlmrobustError("failure-discovery builds from what `vlmrobust discover sample` "
                             "(or a train run's journal.jsonl) wrote; fix: pass --source-root "
                             f"DIR holding {spec.records}/*.jsonl and {spec.images}/ "
                             "(see benchmarks/failure-discovery.yaml)")
    root = Path(options.source_root)
    src = read_source(root, spec, options.limit)
    keys = _unique_keys(src)
    choices, skipped = build_choices(src.records, keys, spec.n_options, spec.seed)
    runs, run_files = source_runs(src.files, root)
    n_fail = sum(r.failure for r in src.records)
    info = BuildInfo(
        spec.name, spec.version, spec.seed,
        source_fingerprints=fingerprints([*src.files, *run_files], root),
        extra={"family": FAMILY, "n_options": spec.n_options, "n_failures": n_fail,
               "mcq_skipped": dict(skipped), "source_runs": runs.manifest()})
    card = render_card(src.records, choices, skipped, runs, n_options=spec.n_options)
    configs = {OPEN_CONFIG: open_rows(src, keys)}
    if choices:  # an empty config would be a dataset nobody can be scored on
        configs[MCQ_CONFIG] = mcq_rows(src, keys, choices)
    return write_dataset(
        options.out, configs=configs, features=choice_features(), card=card, info=info,
        config_kinds={OPEN_CONFIG: OPEN}, config_features={OPEN_CONFIG: open_features()},
        card_header=card_meta.header(FAMILY, sample=False))
