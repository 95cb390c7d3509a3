"""Bench-C builder: sources -> balanced pool -> 95 corrupted copies each ->
κ from selector models -> greedy κ + diversity selection -> dataset dir.

The corrupted copies live in memory only: worker processes make them while
each selector answers, and PNGs are encoded for the kept questions alone,
straight into the dataset's shards (the disk is written once). Selector answers
are cached in ``<out>.work/`` (removed after a successful build), so a killed
build resumes where it stopped; they are keyed by (selector, seed, size cap,
image, question, options), so a source or selector list that changed in
between recomputes exactly what changed. Every candidate's κ, diversity, score
and selector answers go to ``selection.parquet``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.builders import card_meta
from vlmrobust.builders.bench_c.audit import FILE as AUDIT_FILE
from vlmrobust.builders.bench_c.audit import selection_table, summary, table_bytes
from vlmrobust.builders.bench_c.card import render_card
from vlmrobust.builders.bench_c.copies import Workers, copies_nbytes, copy_tasks, encode_copies
from vlmrobust.builders.bench_c.pool import balanced_pool
from vlmrobust.builders.bench_c.scoring import (
    TextEmbedder,
    image_embeddings,
    kappa_answers,
    minilm_embedder,
    question_text,
    selector_answers,
)
from vlmrobust.builders.bench_c.selection import greedy_select
from vlmrobust.builders.bench_c.sources import Candidate, LoadedSource, load_source
from vlmrobust.builders.bench_c.spec import BenchCSpec, SelectionSpec, SourceSpec, parse_spec
from vlmrobust.builders.bench_c.work import CLEAN, variants
from vlmrobust.builders.corruptions import ALL_CORRUPTIONS
from vlmrobust.builders.corruptions.registry import GROUPS as CORRUPTION_GROUPS
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.errors import SourceError, VlmrobustError
from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset
from vlmrobust.metrics.bench_c.kappa import kappa as kappa_metric

FAMILY = "bench-c"
AdapterLoader = Callable[[str], Any]


def features(with_class_ids: bool, corruptions: Sequence[str] = ALL_CORRUPTIONS) -> Any:
    from datasets import ClassLabel, List, Value

    cols: dict[str, Any] = {
        "source_id": Value("string"),
        "source": Value("string"),
        "category": Value("string"),
        # stored as an index into ["none", *corruptions]; readers decode to names
        "corruption": ClassLabel(names=[CLEAN[0], *corruptions]),
        "severity": Value("int32"),
        "kappa": Value("float64"),
    }
    if with_class_ids:
        cols["option_class_ids"] = List(Value("int32"))
    return mcq_features(cols)


def work_dir(out: Path) -> Path:
    return out.parent / f"{out.name}.work"


def _sample_source(src: SourceSpec, out: Path, work: Path, options: BuildOptions) -> Path:
    """The sample source dataset dir: a sibling ``<out>/../<family>`` already built
    from the sample (the demo's layout), else built now into the work dir."""
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.builders.families import get_builder
    from vlmrobust.core.datadir import read_manifest

    assert src.spec is not None
    sibling = out.parent / src.spec
    if (sibling / "manifest.json").is_file():
        m = read_manifest(sibling)
        if m.get("sample") and m["spec"]["name"] == src.spec and all(
                c in m["configs"] for c in src.configs):
            return sibling
    target = work / f"source-{src.name}"
    if (target / "manifest.json").is_file():
        return target
    path = resolve_spec(src.spec)
    get_builder(src.spec)(load_spec_yaml(path), path, BuildOptions(
        out=target, sample=True, progress=options.progress, device=options.device))
    return target


def default_loader(device: str | None, trust_remote_code: bool = False) -> AdapterLoader:
    def load(name: str) -> Any:
        from vlmrobust.models import load_adapter

        if trust_remote_code and name.startswith(("vlm:", "moondream:")):
            return load_adapter(name, device=device, trust_remote_code=True)
        return load_adapter(name, device=device)

    return load


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    """The family entry point (``vlmrobust build bench-c``)."""
    spec = parse_spec(raw_spec, spec_path)
    out = Path(options.out)
    work = work_dir(out)
    if options.sample:
        if spec.sample_source is None:
            raise VlmrobustError(f"{spec_path}: no 'sample.source' section; add one to build "
                                 "with --sample")
        selection = spec.sample_selection or spec.selection
        max_side = spec.sample_max_side
        _check_adapters(selection)
        path = _sample_source(spec.sample_source, out, work, options)
        loaded = [load_source(spec.sample_source, None, path)]
    else:
        selection = spec.selection
        max_side = spec.max_side
        _check_adapters(selection)
        loaded = [load_source(s, options.source_root) for s in spec.sources]
    return build_dataset(spec, selection, loaded, options=options, max_side=max_side)


def _check_adapters(selection: SelectionSpec) -> None:
    from vlmrobust.models import parse_adapter_name

    for name in (*selection.selectors, selection.image_embedder):
        parse_adapter_name(name)  # bad names fail before any work


def build_dataset(spec: BenchCSpec, selection: SelectionSpec, sources: Sequence[LoadedSource],
                  *, options: BuildOptions, loader: AdapterLoader | None = None,
                  text_embedder: TextEmbedder | None = None,
                  keep_work: bool = False, max_side: int | None = None) -> dict[str, Any]:
    """Everything after reading the sources, written to ``options.out``. ``loader``
    (adapter name -> adapter) and ``text_embedder`` can be injected (tests); by
    default they are ``vlmrobust.models.load_adapter`` and MiniLM."""
    out = Path(options.out)
    load = loader or default_loader(
        options.device, selection.trust_remote_code or options.trust_remote_code)
    all_cands = [c for s in sources for c in s.candidates]
    with_ids = all(c.option_class_ids is not None for c in all_cands)
    if any(s.startswith("classifier:") for s in selection.selectors) and not with_ids:
        raise SourceError("classifier selectors need option_class_ids in every source; "
                          "use clip/vlm selectors for these sources")
    caps = [n for n in (selection.pool_size, options.limit) if n is not None]
    pool = balanced_pool(all_cands, selection.pool_per_category, spec.seed,
                         min(caps) if caps else None, per_source=selection.pool_per_source)
    if not pool:
        raise SourceError("the candidate pool is empty; check the sources")
    # one pool for both stages: spawned workers take seconds to warm up
    with Workers(options.workers) as workers:
        work = work_dir(out)
        work.mkdir(parents=True, exist_ok=True)
        tasks = copy_tasks(pool, spec.corruptions, spec.severities, spec.seed, max_side)

        # cached answers are keyed by selector, question content and what shapes the
        # copies, so a changed source or selector recomputes exactly what it must
        salt = json.dumps([spec.seed, max_side])
        answers = selector_answers(
            [(name, functools.partial(load, name)) for name in selection.selectors], pool, tasks,
            work, selection.batch_size, options.progress, salt, workers)  # (Q, M, 1 + C·S)
        kappas = kappa_metric(kappa_answers(answers, len(spec.corruptions), len(spec.severities)),
                              np.array([len(c.options) for c in pool]))

        img = image_embeddings(load(selection.image_embedder), tasks, selection.batch_size)
        txt = (text_embedder or minilm_embedder(options.device))([question_text(c) for c in pool])
        picked = greedy_select(kappas, [img, txt], selection.alpha_kappa, selection.alpha_diversity)
        kept = list(picked.kept)[: selection.max_questions]
        if not kept:
            raise VlmrobustError(
                "no question was kept: every candidate has κ = 0 (the selectors never change "
                "their answer with severity); enlarge the pool or change selectors")
        copies = [f"{c}-{s}" for c, s in variants(spec.corruptions, spec.severities)]
        audit = selection_table(pool, kappas, answers, selection.selectors, picked, kept, copies,
                                {"alpha_kappa": selection.alpha_kappa,
                                 "alpha_diversity": selection.alpha_diversity,
                                 "threshold": picked.threshold})
        audit_bytes = table_bytes(audit)
        audit_summary = summary(audit)

        chosen = [pool[i] for i in kept]
        image_sha: dict[str, str] = {}

        def rows() -> Iterator[dict[str, Any]]:
            from tqdm import tqdm

            # only now, and only for the kept questions, are copies encoded: in
            # worker processes, streamed into the dataset's shards
            pngs = workers.map(encode_copies, [tasks[i] for i in kept], copies_nbytes)
            for i, datas in tqdm(zip(kept, pngs, strict=True), total=len(kept),
                                 desc="writing bench-c", unit="q", disable=not options.progress):
                c = pool[i]
                for (cor, sev), (data, sha) in zip(variants(spec.corruptions, spec.severities),
                                                   datas, strict=True):
                    rid = f"{c.key}/{cor}/{sev}"
                    image_sha[rid] = sha
                    yield _row(c, rid, data, cor, sev, float(kappas[i]), with_ids)

        pool_counts = Counter(f"{c.source}/{c.category}" for c in pool)
        top = int(np.argmax(kappas))
        card = render_card(spec, selection, audit=audit_summary, threshold=picked.threshold,
                           top_pick=(pool[top].key, float(kappas[top]), top in kept),
                           n_picked=len(picked.picked),
                           sources=[s.spec.name for s in sources], sample=options.sample)
        extra: dict[str, Any] = {
            "corruptions": list(spec.corruptions),
            "corruption_categories": {g: [c for c in names if c in spec.corruptions]
                                      for g, names in CORRUPTION_GROUPS.items()
                                      if any(c in spec.corruptions for c in names)},
            "severities": list(spec.severities),
            "max_side": max_side,
            "corruption_engine": "vlmrobust.builders.corruptions (ImageNet-C parameters of "
                                 "imagecorruptions 1.1.2)",
            "seeds": {"seed": spec.seed,
                      "per_image": "numpy.random.default_rng(first 8 bytes of sha256 of JSON "
                                   "[seed, 'source/source_id', corruption, severity], big-endian)"},
            "selection": {
                "selectors": list(selection.selectors),
                "image_embedder": selection.image_embedder,
                "text_embedder": selection.text_embedder,
                "alpha_kappa": selection.alpha_kappa,
                "alpha_diversity": selection.alpha_diversity,
                "pool_per_category": selection.pool_per_category,
                "pool_per_source": selection.pool_per_source,
                "pool_size": selection.pool_size,
                "max_questions": selection.max_questions,
                "pool": dict(sorted(pool_counts.items())),
                "picked": [pool[i].key for i in picked.picked],
                "scores": [round(s, 6) for s in picked.scores],
                "threshold": round(picked.threshold, 6),
                "kept": [c.key for c in chosen],
                "kappa": {c.key: round(float(kappas[i]), 6) for i, c in enumerate(pool)},
                "table": AUDIT_FILE,
                "table_sha256": hashlib.sha256(audit_bytes).hexdigest(),
                "summary": audit_summary,
            },
            # filled while the rows stream; write_dataset reads extra only after them
            "image_sha256": image_sha,
        }
        info = BuildInfo(FAMILY, spec.version, spec.seed,
                         {s.spec.name: s.fingerprint for s in sources}, extra, options.sample)
        feats = features(with_ids, spec.corruptions)
        manifest = write_dataset(out, configs={"default": rows()}, features=feats,
                                 card=card, info=info,
                                 card_header=card_meta.header(
                                     FAMILY, sample=options.sample, features=feats,
                                     source_datasets=[f"extended|{s.spec.name}" for s in sources]),
                                 # beside the data, outside the README's configs (load_dataset
                                 # never reads it), in the same swap; the manifest holds its sha256
                                 extra_files={AUDIT_FILE: audit_bytes})
        if not keep_work:
            shutil.rmtree(work, ignore_errors=True)
        return manifest


def _row(c: Candidate, rid: str, data: bytes, cor: str, sev: int, kappa: float,
         with_ids: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": rid, "image": {"bytes": data, "path": None}, "question": c.question,
        "options": list(c.options), "answer": c.answer, "source_id": c.source_id,
        "source": c.source, "category": c.category, "corruption": cor, "severity": sev,
        "kappa": kappa,
    }
    if with_ids:
        row["option_class_ids"] = list(c.option_class_ids or ())
    return row
