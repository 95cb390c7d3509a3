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
from dataclasses import dataclass
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
from vlmrobust.builders.imagenet_mcq.items import (
    Item,
    check_images,
    clean_items,
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
from vlmrobust.core.errors import SourceError, VlmrobustError
from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset

FAMILY = "imagenet-mcq"
SAMPLE_SPACE = tuple(range(1000))


@dataclass(frozen=True)
class VariantInput:
    """One variant's cleaned items (before selection) and where they came from."""

    name: str
    space: tuple[int, ...]
    items: tuple[Item, ...]
    dropped: int
    licences: Mapping[str, tuple[str, str]]  # item key -> (source, licence)
    groups: Mapping[int, str] | None = None  # ObjectNet: IN-1k class -> ObjectNet class
    clean_note: str | None = None  # imagenet-val: which clean labels, how many rows
    # ObjectNet: ObjectNet class -> every IN-1k class the release maps to it
    members: Mapping[str, tuple[int, ...]] | None = None
    folder: str = ""  # the folder read, relative to --source-root ("" for the sample)

    @property
    def space_size(self) -> int:
        """Classes a question can ask: ObjectNet's own classes (113 in the release),
        else the IN-1k classes of the label space."""
        return len(set(self.groups.values())) if self.groups is not None else len(self.space)

    def __post_init__(self) -> None:
        if not self.space:
            raise ValueError(f"variant {self.name}: empty label space")


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


def objectnet_name(name: str) -> str:
    """ObjectNet's class name as an option text: the release capitalises the first
    word ("Chair", "Still camera"); lower-case it like every other option, but keep
    acronyms ("TV").

    >>> objectnet_name("Chair"), objectnet_name("Still camera"), objectnet_name("TV")
    ('chair', 'still camera', 'TV')
    """
    if len(name) > 1 and name[0].isupper() and name[1].islower():
        return name[0].lower() + name[1:]
    return name


def option_names(v: VariantInput, names: Mapping[int, str]) -> Mapping[int, str]:
    """Option text per class id: ObjectNet questions are asked in ObjectNet's own
    class names (a plain chair is "chair", never "barber chair"); the others in the
    clean ImageNet names."""
    if v.groups is None:
        return names
    return {c: objectnet_name(v.groups[c]) for c in v.space}


def option_groups(v: VariantInput) -> Mapping[int, tuple[int, ...]] | None:
    """Per class id of the label space, the IN-1k classes an option of that class
    is scored over: for ObjectNet every IN-1k class mapped to its ObjectNet class
    (sorted; the standard ObjectNet protocol takes the max logit over them), else
    None (each option is its own class)."""
    if v.groups is None:
        return None
    members = v.members or {}
    out: dict[int, tuple[int, ...]] = {}
    for c in v.space:
        name = v.groups[c]
        group = set(members.get(name, ()))
        # the mapping file is the source of the groups; the inverse of `groups`
        # covers a VariantInput made without it
        group |= {d for d, n in v.groups.items() if n == name}
        out[c] = tuple(sorted(group))
    return out


def sample_inputs(spec: McqSpec) -> list[VariantInput]:
    """Sample photos (reference) and renditions (shifted) as two variants over
    the full ImageNet-1k label space; licences per image from sample.csv."""
    from vlmrobust.builders.sample import load_sample

    images = load_sample()
    out = []
    for name, group in spec.sample_variants:
        chosen = [im for im in images if im.group == group]
        items, dropped = clean_items(
            name, ((im.key, Path(im.path), (int(im.class_index),)) for im in chosen), SAMPLE_SPACE
        )
        licences = {im.key: (str(im.origin_package), str(im.licence)) for im in chosen}
        out.append(VariantInput(name, SAMPLE_SPACE, tuple(items), dropped, licences))
    return out


KISEL_PLACES = ("clean_validation.csv", "imagenet-val/clean_validation.csv")


def _clean_labels(spec: McqSpec, root: Path) -> str | Path | None:
    """``auto``: Kisel et al.'s clean_validation.csv when it is in the source root
    (or its imagenet-val folder), else ReaL."""
    if spec.clean_labels in (None, "real"):
        return spec.clean_labels
    if spec.clean_labels == "auto":
        found = [root / p for p in KISEL_PLACES if (root / p).is_file()]
        return found[0] if found else "real"
    path = root / spec.clean_labels
    if not path.is_file():
        raise SourceError(
            f"{path}: clean-label file named in the spec (clean_labels) not found; "
            "put it there, or set clean_labels: real (or null)"
        )
    return path


def _space(
    name: str, root: Path,
) -> tuple[tuple[int, ...], dict[int, str] | None, dict[str, tuple[int, ...]] | None]:
    """The variant's label space and, for ObjectNet, each class's ObjectNet class
    (the first in name order when a class maps from several) and each ObjectNet
    class's IN-1k classes."""
    from vlmrobust.builders.sources import variant_dir
    from vlmrobust.core.classes import label_space, load_objectnet_mapping

    if name != "objectnet":
        return tuple(label_space(name)), None, None
    d = variant_dir(name, root)
    if not (d / "mappings").is_dir() and (d / "objectnet-1.0").is_dir():
        d = d / "objectnet-1.0"
    groups: dict[int, str] = {}
    members = dict(sorted(load_objectnet_mapping(d / "mappings").items()))
    for on_name, ids in members.items():
        for c in ids:
            groups.setdefault(c, on_name)
    return tuple(label_space(name, objectnet_mapping=d / "mappings")), groups, members


def source_inputs(spec: McqSpec, root: Path) -> list[VariantInput]:
    """Every variant of the spec read from ``root`` with the on-disk readers.
    Clean labels apply to imagenet-val; images they leave without a valid
    label are dropped (and counted for the card)."""
    from vlmrobust.builders.labels import load_clean_label_set
    from vlmrobust.builders.sources import read_variant, variant_dir

    clean = _clean_labels(spec, root)
    label_set = load_clean_label_set(clean)
    clean_note = None if label_set is None else (
        f"{label_set.source}, {label_set.rows} listed images"
        + ("; images not listed are not in the clean set" if label_set.subset else ""))
    out = []
    for v in spec.variants:
        sources = read_variant(v.name, root, clean_labels=clean, release=v.release)
        used = variant_dir(v.name, root, v.release).resolve()
        folder = used.relative_to(Path(root).resolve()).as_posix() if used.is_relative_to(
            Path(root).resolve()) else used.name
        space, groups, members = _space(v.name, root)
        dropped = 0
        if clean is not None and v.name == "imagenet-val":
            dropped = len(read_variant(v.name, root)) - len(sources)
        items, no_label = clean_items(
            v.name, ((s.key, Path(s.path), tuple(s.labels)) for s in sources), space
        )
        licences = {it.key: (v.homepage or v.name, v.licence) for it in items}
        out.append(
            VariantInput(v.name, space, tuple(items), dropped + no_label, licences, groups,
                         clean_note if v.name == "imagenet-val" else None, members, folder)
        )
    return out


def _release(spec: McqSpec, variant: str) -> str | None:
    """ImageNet-V2's release the spec names (default matched-frequency)."""
    from vlmrobust.builders.sources import V2_DEFAULT_RELEASE

    if variant != "imagenet-v2":
        return None
    v = next((v for v in spec.variants if v.name == variant), None)
    return (v.release if v is not None else None) or V2_DEFAULT_RELEASE


@functools.lru_cache(maxsize=4)
def wordnet_similarity(space: tuple[int, ...]) -> LabelSpaceSimilarity:
    """Wu-Palmer rankings of a label space (kept per process: rows are cached inside)."""
    from vlmrobust.builders.wordnet import synset_for_wnid
    from vlmrobust.core.classes import load_imagenet_classes

    wnids = {c.index: c.wnid for c in load_imagenet_classes()}
    return LabelSpaceSimilarity(space, {c: synset_for_wnid(wnids[c]) for c in space})


def load_embedder(spec: McqSpec, device: str | None) -> Embedder:
    """Any image encoder (vlmrobust.models.image_encoders): hf:, timm: or an adapter."""
    from vlmrobust.models.image_encoders import load_image_encoder

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
        spec, inputs, Path(options.out), reference=reference, sample=options.sample,
        progress=options.progress, limit=options.limit, device=options.device,
        # real builds persist embeddings so a killed build resumes; the sample is
        # small and its tests stay hermetic (nothing written outside --out)
        cache_dir=None if options.sample else default_cache_dir(),
        prototype_dir=prototype_dir,
    )


def build_dataset(
    spec: McqSpec, inputs: Sequence[VariantInput], out: Path, *, reference: str,
    sample: bool, progress: bool = True, limit: int | None = None,
    device: str | None = None, embedder: Embedder | None = None,
    similarity: Mapping[tuple[int, ...], LabelSpaceSimilarity] | None = None,
    cache_dir: Path | None = None, prototype_dir: Path | None = None,
) -> dict[str, Any]:
    """Select, clean, mine distractors and write ``out``. ``embedder`` and
    ``similarity`` can be injected (tests); by default they are the spec's
    encoder and Wu-Palmer over WordNet. ``cache_dir`` keeps image embeddings
    so that an interrupted build resumes."""
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
            release=_release(spec, v.name),
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
        "imagenet_v2_release": _release(spec, "imagenet-v2")
        if any(v.name == "imagenet-v2" and v.folder for v in inputs) else None,
        "label_space_sizes": {v.name: v.space_size for v in inputs},
        "clean_labels": next((v.clean_note for v in inputs if v.clean_note), None),
    }
    info = BuildInfo(FAMILY, spec.version, spec.seed, fingerprints, extra, sample)
    feats = features()
    return write_dataset(out, configs=configs, features=feats, card=card, info=info,
                         card_header=card_meta.header(FAMILY, sample=sample, features=feats))
