"""imagenet-mcq builder: spec + sources (or the embedded sample) -> one dataset
directory with a config per (variant, strategy).

Everything that can fail on bad input (spec, source folders, label tables,
image decoding, WordNet, the embedding model) runs before the writer starts,
and the writer swaps the directory in atomically, so a failed build leaves
nothing behind."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.card import VariantSummary, licence_counts, render_card
from vlmrobust.builders.imagenet_mcq.distractors import (
    random_distractors,
    visual_distractors,
    wordnet_item_distractors,
)
from vlmrobust.builders.imagenet_mcq.inputs import (  # re-exported: tests and builders use them
    VariantInput,
    option_groups,
    option_names,
    sample_inputs,
    source_inputs,
    v2_release,
)
from vlmrobust.builders.imagenet_mcq.items import (
    Item,
    check_images,
    select_items,
    stored_bytes,
)
from vlmrobust.builders.imagenet_mcq.prompts import PROMPTS
from vlmrobust.builders.imagenet_mcq.questions import balanced_positions, make_row, source_file
from vlmrobust.builders.imagenet_mcq.seeding import item_rng
from vlmrobust.builders.imagenet_mcq.similarity import LabelSpaceSimilarity
from vlmrobust.builders.imagenet_mcq.spec import McqSpec, parse_spec
from vlmrobust.builders.imagenet_mcq.visual import (
    Embedder,
    default_cache_dir,
    prototype_note,
    visual_neighbours,
)
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset

FAMILY = "imagenet-mcq"


def _imagenet_x_lines(spec: McqSpec, chosen: Mapping[str, Sequence[Item]]) -> list[str]:
    """The card's ImageNet-X paragraph when the build has imagenet-val questions."""
    from vlmrobust.builders.imagenet_x_card import imagenet_x_section

    val = chosen.get("imagenet-val")
    if not val:
        return []
    return imagenet_x_section((source_file(it.variant, it.key) for it in val),
                              f"{spec.options}-option multiple choice")


def features() -> Any:
    from datasets import ClassLabel, List, Value

    from vlmrobust.core.classes import class_names

    return mcq_features({
        # ImageNet-1k index, named: the hub viewer and ds.features["label"].int2str show names
        "label": ClassLabel(names=list(class_names())),
        "option_class_ids": List(Value("int32")),
        # per option, the IN-1k classes a classifier takes the max logit over
        "option_class_groups": List(List(Value("int32"))),
        "variant": Value("string"),
        "distractors": Value("string"),
        "source_file": Value("string"),
    })


@functools.lru_cache(maxsize=4)
def wordnet_similarity(space: tuple[int, ...]) -> LabelSpaceSimilarity:
    """Wu-Palmer rankings of a label space (kept per process: rows are cached inside)."""
    from vlmrobust.builders.wordnet import synset_for_wnid
    from vlmrobust.core.classes import load_imagenet_classes

    wnids = {c.index: c.wnid for c in load_imagenet_classes()}
    return LabelSpaceSimilarity(space, {c: synset_for_wnid(wnids[c]) for c in space})


def load_embedder(spec: McqSpec, device: str | None) -> Embedder:
    """Any image encoder (vlmrobust.models.encoders.image_encoders): hf:, timm: or an adapter."""
    from vlmrobust.models.encoders.image_encoders import load_image_encoder

    encoder: Embedder = load_image_encoder(spec.visual.encoder, device=device)
    return encoder


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    """The family entry point (``vlmrobust build imagenet-mcq``)."""
    spec = parse_spec(raw_spec, spec_path)
    prototype_dir = None
    if options.sample:
        spec = dataclasses.replace(spec, visual=spec.sample_visual)
        inputs = sample_inputs(spec)
        reference = spec.sample_reference
    else:
        if options.source_root is None:
            raise VlmrobustError(
                "imagenet-mcq needs --source-root DIR (the ImageNet variant folders) or --sample"
            )
        inputs = source_inputs(spec, Path(options.source_root))
        reference = spec.reference_variant
        if spec.visual.prototype_images and "visual" in spec.strategies:
            prototype_dir = Path(options.source_root) / spec.visual.prototype_images
    return build_dataset(
        spec, inputs, options, reference=reference,
        # real builds persist embeddings so a killed build resumes; the sample is
        # small and its tests stay hermetic (nothing written outside --out)
        cache_dir=None if options.sample else default_cache_dir(),
        prototype_dir=prototype_dir,
    )


def build_dataset(
    spec: McqSpec, inputs: Sequence[VariantInput], options: BuildOptions, *, reference: str,
    embedder: Embedder | None = None,
    similarity: Mapping[tuple[int, ...], LabelSpaceSimilarity] | None = None,
    cache_dir: Path | None = None, prototype_dir: Path | None = None,
) -> dict[str, Any]:
    """Select, clean, mine distractors and write ``options.out`` (``options.sample``,
    ``limit``, ``progress`` and ``device`` apply). ``embedder`` and
    ``similarity`` can be injected (tests); by default they are the spec's
    encoder and Wu-Palmer over WordNet. ``cache_dir`` keeps image embeddings
    so that an interrupted build resumes."""
    out, sample, limit = Path(options.out), options.sample, options.limit
    progress, device = options.progress, options.device
    from vlmrobust.core.classes import load_imagenet_classes

    names = {c.index: c.name for c in load_imagenet_classes()}
    if len(set(names.values())) != len(names):
        raise VlmrobustError("class names are not unique; fix builders/data class table")
    n = min(spec.questions_per_variant, limit or math.inf)
    k = spec.options - 1
    chosen: dict[str, list[Item]] = {}
    fingerprints: dict[str, str] = {}
    for v in inputs:
        if len(v.space) < spec.options:
            raise VlmrobustError(
                f"variant {v.name}: label space of {len(v.space)} classes < {spec.options} options"
            )
        chosen[v.name] = select_items(v.items, int(n), spec.seed)
        fingerprints[v.name] = check_images(chosen[v.name], progress, f"checking {v.name}")

    rankings: dict[str, LabelSpaceSimilarity] = {}
    if "wordnet" in spec.strategies:
        cache: dict[tuple[int, ...], LabelSpaceSimilarity] = dict(similarity or {})
        for v in inputs:
            if v.space not in cache:
                cache[v.space] = wordnet_similarity(v.space)
            rankings[v.name] = cache[v.space]
            for it in chosen[v.name]:
                rankings[v.name].similarities(it.label)  # fail before writing

    neighbours: dict[tuple[str, str], tuple[int, ...]] = {}
    if "visual" in spec.strategies:
        enc = embedder if embedder is not None else load_embedder(spec, device)
        neighbours = visual_neighbours(
            [(v.space, chosen[v.name], v.groups is not None) for v in inputs], enc,
            spec.visual, k, progress, cache_dir=cache_dir, prototype_dir=prototype_dir,
        )

    def distractors(v: VariantInput, it: Item, strategy: str) -> tuple[int, ...]:
        if strategy == "random":
            rng = item_rng(spec.seed, v.name, it.key, "random")
            return random_distractors(v.space, it.valid, k, rng, v.groups)
        if strategy == "wordnet":
            return wordnet_item_distractors(rankings[v.name], spec.seed, v.name, it.key,
                                            it.label, it.valid, k, spec.wordnet.top_k, v.groups)
        return visual_distractors(neighbours[(v.name, it.key)], it.valid, k, v.groups)

    # questions are computed up front (cheap) so a strategy that cannot fill its
    # options fails before anything is written
    planned: dict[str, list[tuple[Item, tuple[int, ...], int]]] = {}
    for v in inputs:
        items = chosen[v.name]
        pos = balanced_positions(len(items), spec.options, item_rng(spec.seed, v.name, "answers"))
        for strategy in spec.strategies:
            planned[f"{v.name}-{strategy}"] = [
                (it, distractors(v, it, strategy), int(p)) for it, p in zip(items, pos, strict=True)
            ]

    def rows(v: VariantInput, strategy: str) -> Iterator[dict[str, Any]]:
        from tqdm import tqdm

        texts = option_names(v, names)
        class_groups = option_groups(v)
        config = f"{v.name}-{strategy}"
        for it, dis, answer in tqdm(planned[config], desc=f"writing {config}", unit="q",
                                    disable=not progress):
            yield make_row(it, strategy, dis, answer, texts, spec.question, spec.seed,
                           stored_bytes(it.path), class_groups)

    configs = {f"{v.name}-{s}": rows(v, s) for v in inputs for s in spec.strategies}
    summaries = [
        VariantSummary(
            name=v.name, questions=len(chosen[v.name]), available=len(v.items),
            dropped=v.dropped, space_size=v.space_size,
            class_counts=dict(sorted(Counter(it.label for it in chosen[v.name]).items())),
            licences=licence_counts([v.licences[it.key] for it in chosen[v.name]]),
            folder=v.folder,
            release=v2_release(spec, v.name),
        )
        for v in inputs
    ]
    card = render_card(spec, summaries, names, reference, sample, prototype_note(spec.visual),
                       per_variant=int(n),
                       clean_note=next((v.clean_note for v in inputs if v.clean_note), None),
                       imagenet_x_lines=_imagenet_x_lines(spec, chosen))
    extra = {
        "reference_variant": reference,
        "variants": [v.name for v in inputs],
        "strategies": list(spec.strategies),
        "options": spec.options,
        "question_prompt": spec.question_prompt,
        "prompts": dict(PROMPTS),
        "wordnet": {"measure": "wu-palmer", "top_k": spec.wordnet.top_k,
                    "ties": "per question: seeded hash of (sha256 of [seed, variant, item key, "
                            "'wordnet-ties'], synset name)"},
        "visual": {"encoder": spec.visual.encoder, "prototypes": spec.visual.prototypes,
                   "prototype_images": spec.visual.prototype_images,
                   "per_class": spec.visual.per_class,
                   "search": "faiss IndexFlatIP (exact inner product)"},
        "dropped": {v.name: v.dropped for v in inputs},
        # which folder each variant was read from (ImageNet-V2: which release)
        "source_folders": {v.name: v.folder for v in inputs if v.folder},
        "imagenet_v2_release": v2_release(spec, "imagenet-v2")
        if any(v.name == "imagenet-v2" and v.folder for v in inputs) else None,
        "label_space_sizes": {v.name: v.space_size for v in inputs},
        "clean_labels": next((v.clean_note for v in inputs if v.clean_note), None),
    }
    info = BuildInfo(FAMILY, spec.version, spec.seed, fingerprints, extra, sample)
    feats = features()
    return write_dataset(out, configs=configs, features=feats, card=card, info=info,
                         card_header=card_meta.header(FAMILY, sample=sample, features=feats))
