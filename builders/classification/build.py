"""``build(raw_spec, spec_path, options) -> manifest`` for the classification
family (issue 23; seeds 001 and 002): every variant read from its published
layout (layouts_imagenet.py, layouts_other.py) -> one config per variant over
its label space, stored once per config (``label_spaces/<config>.json``),
plus K-configs beside them:

- ``<config>-k<K>`` (label-set size K, seed 002 Fig. 2): per row K candidate
  classes, the label and K - 1 uniform random others (candidates.py);
- ``imagenet-d-<split>-<K>opt`` (seed 001 §IX): the label and the selection
  model's K - 1 hardest wrong classes.

Rows: ``id`` (``<config>/<source key>``), ``image`` (the source file's bytes; a
format other than JPEG/PNG re-encoded as PNG), ``label`` (index into the
config's label space), ``candidates`` (empty: the whole label space),
``valid_labels`` (every valid label, ``label`` first: ImageNet val's clean
multi-labels, Vid-Robust's), ``variant``, ``source_file``, and where the build
has them ``corruption`` / ``severity`` (3DCC) and ``pmset`` (Vid-Robust's anchor).
Everything that can fail on bad input runs before the writer starts; the writer
swaps the directory in atomically.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.builders import card_meta
from vlmrobust.builders.classification.candidates import (
    group_scores,
    hardest_candidates,
    random_candidates,
)
from vlmrobust.builders.classification.card import render_card
from vlmrobust.builders.classification.layouts_imagenet import (
    read_3dcc,
    read_imagenet_d,
    read_imagenet_variant,
    read_vid_robust,
)
from vlmrobust.builders.classification.layouts_other import (
    read_caltech101,
    read_flowers102,
    read_stanford_cars,
)
from vlmrobust.builders.classification.sources import SourceItem, VariantSource
from vlmrobust.builders.classification.spaces import imagenet_space
from vlmrobust.builders.classification.spec import (
    IMAGENET_VARIANTS,
    VAL_CLEAN,
    ClassificationSpec,
    VariantSpec,
    parse_spec,
)
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.items import Item, check_images, select_items, stored_bytes
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.writer import BuildInfo, write_dataset

FAMILY = "classification"
# ImageNet classes -> (B, 1000) logits of the selection model, for image paths
Selector = Callable[[Sequence[Path]], np.ndarray]
# Folders whose absence means "this variant was not downloaded" (skip_missing)
PRESENT = {
    "imagenet-val": ("imagenet-val", "val", "imagenet/val", "ILSVRC/Data/CLS-LOC/val"),
    VAL_CLEAN: ("imagenet-val", "val", "imagenet/val", "ILSVRC/Data/CLS-LOC/val"),
    "imagenet-v2": ("imagenet-v2", "imagenetv2-matched-frequency-format-val",
                    "imagenetv2-threshold0.7-format-val", "imagenetv2-top-images-format-val"),
    "imagenet-r": ("imagenet-r",), "imagenet-a": ("imagenet-a",),
    "imagenet-sketch": ("imagenet-sketch", "sketch"), "objectnet": ("objectnet", "objectnet-1.0"),
    "flowers102": ("flowers102", "102flowers", "flowers-102"),
    "stanford-cars": ("stanford_cars", "stanford-cars", "StanfordCars"),
    "caltech101": ("caltech101", "101_ObjectCategories"),
    "imagenet-vid-robust": ("imagenet-vid-robust", "imagenet_vid_ytbb_robust"),
    "imagenet-d": ("ImageNet-D", "imagenet-d"), "3dcc": ("3dcc", "ImageNet-3DCC", "imagenet-3dcc"),
}


def read_sources(spec: ClassificationSpec, root: Path) -> tuple[list[VariantSource], list[str]]:
    """Every variant of the spec read from ``root``; and the absent ones (skip_missing)."""
    out: list[VariantSource] = []
    absent: list[str] = []
    for v in spec.variants:
        if spec.skip_missing and not any((root / f).is_dir() for f in PRESENT[v.name]):
            absent.append(v.name)
            continue
        out.extend(_read(v, spec, root))
    return out, absent


def _read(v: VariantSpec, spec: ClassificationSpec, root: Path) -> list[VariantSource]:
    if v.name in IMAGENET_VARIANTS:
        # seeds 001/002 score all 50,000 val images by their original labels
        return [read_imagenet_variant(v.name, root, None, v.release, spec.class_names)]
    if v.name == VAL_CLEAN:
        return [read_imagenet_variant("imagenet-val", root, spec.clean_labels, None,
                                      spec.class_names, config=VAL_CLEAN)]
    if v.name == "imagenet-d":
        return read_imagenet_d(root, v.splits)
    if v.name == "3dcc":
        return read_3dcc(root, v.corruptions, v.severities, spec.class_names)
    if v.name == "caltech101":
        return [read_caltech101(root, spec.caltech_split, spec.seed)]
    reader = {"flowers102": read_flowers102, "stanford-cars": read_stanford_cars,
              "imagenet-vid-robust": read_vid_robust}[v.name]
    return [reader(root)]


def sample_sources(class_names: str = "openai") -> list[VariantSource]:
    """The embedded sample's photos and renditions as two configs over the
    ImageNet-1k label space (licences per image in builders/sample/sample.csv)."""
    from vlmrobust.builders.sample import load_sample

    images = load_sample()
    space = imagenet_space("imagenet-1k", tuple(range(1000)), class_names)
    out = []
    for group in ("photo", "rendition"):
        items = tuple(SourceItem(im.key, Path(im.path), int(im.class_index), (int(im.class_index),),
                                 {"licence": f"{im.origin_package}: {im.licence}"})
                      for im in sorted(images, key=lambda im: im.key) if im.group == group)
        out.append(VariantSource(f"sample-{group}", f"sample-{group}", space, items, ""))
    return out


def load_selector(name: str, device: str | None, batch_size: int, progress: bool) -> Selector:
    """The selection model (any ImageNet classifier adapter) as paths -> 1000 logits."""
    from PIL import Image
    from tqdm import tqdm

    from vlmrobust.models import load_adapter

    adapter = load_adapter(name, device=device)
    if not hasattr(adapter, "class_logits"):
        raise VlmrobustError(f"hard_options.selector {name!r} gives no ImageNet class logits; "
                             "fix: name an ImageNet classifier (classifier:...)")

    def run(paths: Sequence[Path]) -> np.ndarray:
        out = []
        for start in tqdm(range(0, len(paths), batch_size), desc="selection model", unit="batch",
                          disable=not progress):
            images = []
            for p in paths[start:start + batch_size]:
                with Image.open(p) as im:
                    images.append(im.convert("RGB"))
            out.append(np.asarray(adapter.class_logits(images), dtype=np.float64))
        return np.concatenate(out) if out else np.zeros((0, 1000))
    return run


def _k_configs(spec: ClassificationSpec, src: VariantSource, items: Sequence[SourceItem],
               sizes: Sequence[int], wanted: Sequence[str] | None,
               ) -> dict[str, tuple[list[SourceItem], list[list[int]]]]:
    """K-configs of ``src``: one seeded subset of its images (``label_set_images``;
    the same for every K, so the K curve compares the same images) with each
    row's candidates."""
    n = len(src.space)
    if wanted is not None and src.variant not in wanted and src.config not in wanted:
        return {}
    subset = list(items)
    cap = spec.label_set_images
    if cap is not None and len(subset) > cap:
        by_key = {it.key: it for it in subset}
        picked = select_items([Item(f"{src.config}/label-set", it.key, it.path, it.label,
                                    frozenset(it.valid or (it.label,))) for it in subset],
                              cap, spec.seed)
        subset = [by_key[it.key] for it in picked]
    out = {}
    for k in sizes:
        if k >= n:
            continue  # K as large as the label space is the full config itself
        config = f"{src.config}-k{k}"
        out[config] = (subset, [random_candidates(spec.seed, config, it.key, it.label, it.valid, n, k)
                                for it in subset])
    return out


def _hard_configs(spec: ClassificationSpec, src: VariantSource, items: Sequence[SourceItem],
                  selector: Selector) -> dict[str, tuple[list[SourceItem], list[list[int]]]]:
    k = spec.hard_options.k
    groups = [c.imagenet_ids for c in src.space.classes]
    scores = group_scores(selector([it.path for it in items]), groups)
    config = f"{src.config}-{k}opt"
    return {config: (list(items), [hardest_candidates(spec.seed, config, it.key, it.label,
                                                      it.valid, scores[i], k)
                                   for i, it in enumerate(items)])}


def features(columns: Sequence[str]) -> Any:
    from datasets import Features, List, Value
    from datasets import Image as HFImage

    cols: dict[str, Any] = {
        "id": Value("string"), "image": HFImage(), "label": Value("int32"),
        "candidates": List(Value("int32")), "valid_labels": List(Value("int32")),
        "variant": Value("string"), "source_file": Value("string")}
    optional = {"corruption": Value("string"), "severity": Value("int32"), "pmset": Value("string")}
    cols.update({c: optional[c] for c in optional if c in columns})
    return Features(cols)


def _imagenet_x_lines(sources: Sequence[VariantSource],
                      chosen: Mapping[str, Sequence[SourceItem]]) -> list[str]:
    """The card's ImageNet-X paragraph for the imagenet-val config, if built."""
    from vlmrobust.builders.imagenet_x_card import imagenet_x_section

    val = next((s.config for s in sources if s.variant == "imagenet-val"), None)
    if val is None or not chosen.get(val):
        return []
    return imagenet_x_section((it.key.rpartition("/")[2] for it in chosen[val]),
                              "top-1 over the full label space")


def _rows(config: str, src: VariantSource, items: Sequence[SourceItem],
          candidates: Sequence[list[int]] | None, columns: Sequence[str]) -> Iterator[dict[str, Any]]:
    defaults: dict[str, Any] = {"corruption": "none", "severity": 0, "pmset": None}
    for i, it in enumerate(items):
        row = {"id": f"{config}/{it.key}", "image": {"bytes": stored_bytes(it.path), "path": None},
               "label": it.label, "candidates": list(candidates[i]) if candidates else [],
               "valid_labels": list(it.valid or (it.label,)), "variant": src.variant,
               "source_file": it.key}
        row.update({c: it.columns.get(c, defaults[c]) for c in columns})
        yield row


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    """The family entry point (``vlmrobust build classification``)."""
    spec = parse_spec(raw_spec, spec_path)
    absent: list[str] = []
    if options.sample:
        sources = sample_sources(spec.class_names)
    elif options.source_root is None:
        raise VlmrobustError("classification needs --source-root DIR (the dataset folders, "
                             "layouts in builders/classification/) or --sample")
    else:
        sources, absent = read_sources(spec, Path(options.source_root))
        for name in absent:
            print(f"classification: {name}: no folder under {options.source_root}; not built",
                  file=sys.stderr)
        if not sources:
            raise VlmrobustError(f"{options.source_root}: none of the spec's variants is there; "
                                 "fix: put them in the layouts builders/classification/ documents")
    return build_dataset(spec, sources, options, absent=absent)


def build_dataset(spec: ClassificationSpec, sources: Sequence[VariantSource],
                  options: BuildOptions, *, absent: Sequence[str] = (),
                  selector: Selector | None = None) -> dict[str, Any]:
    """Select, draw candidates, run the selection model (ImageNet-D) and write
    ``options.out`` (``options.sample``, ``limit``, ``progress`` and ``device``
    apply)."""
    out, sample, limit = Path(options.out), options.sample, options.limit
    progress, device = options.progress, options.device
    cap = min(n for n in (spec.images_per_config, limit, sys.maxsize) if n is not None)
    chosen: dict[str, list[SourceItem]] = {}
    fingerprints: dict[str, str] = {}
    for src in sources:
        if not src.items:
            raise VlmrobustError(f"{src.folder or src.config}: no images for config {src.config}; "
                                 "fix: check the folder and its layout")
        by_key = {it.key: it for it in src.items}
        picked = select_items([Item(src.config, it.key, it.path, it.label, frozenset(it.valid or (it.label,)))
                               for it in src.items], cap, spec.seed)
        chosen[src.config] = [by_key[it.key] for it in picked]
        fingerprints[src.config] = check_images(picked, progress, f"checking {src.config}")
    sizes = spec.sample_label_set_sizes if sample else spec.label_set_sizes
    k_of: dict[str, tuple[VariantSource, list[SourceItem], list[list[int]]]] = {}
    for src in sources:
        wanted = None if sample else spec.label_set_variants
        for config, (subset, cands) in _k_configs(spec, src, chosen[src.config], sizes,
                                                  wanted).items():
            k_of[config] = (src, subset, cands)
    hard = [s for s in sources if s.variant.startswith("imagenet-d-")]
    if hard:
        run = selector or load_selector(spec.hard_options.selector, device,
                                        spec.hard_options.batch_size, progress)
        for src in hard:
            for config, (subset, cands) in _hard_configs(spec, src, chosen[src.config], run).items():
                k_of[config] = (src, subset, cands)
    columns = [c for c in ("corruption", "severity", "pmset")
               if any(c in it.columns for s in sources for it in s.items[:1])]
    configs: dict[str, Iterator[dict[str, Any]]] = {}
    spaces = {}
    for src in sources:
        configs[src.config] = _rows(src.config, src, chosen[src.config], None, columns)
        spaces[src.config] = src.space
        for config, (base, subset, cands) in k_of.items():
            if base is src:
                configs[config] = _rows(config, src, subset, cands, columns)
                spaces[config] = src.space
    feats = features(columns)
    card = render_card(spec, sources, {c: len(v) for c, v in chosen.items()},
                       {c: (len(v[2][0]) if v[2] else 0, len(v[1])) for c, v in k_of.items()},
                       absent=absent, sample=sample, limit=limit,
                       imagenet_x_lines=_imagenet_x_lines(sources, chosen))
    # seed 001 fits its temperature on ImageNet val (the sample: on its photos)
    reference = "sample-photo" if sample else "imagenet-val"
    extra = {"family": FAMILY, "variants": sorted({s.variant for s in sources}),
             "reference_config": reference if reference in chosen else None,
             "source_folders": {s.config: s.folder for s in sources if s.folder},
             "imagenet_v2_release": next((s.notes.get("release") for s in sources
                                          if s.variant == "imagenet-v2"), None),
             "notes": {s.config: dict(s.notes) for s in sources if s.notes},
             "label_set_sizes": list(sizes), "k_configs": sorted(k_of),
             "label_set_images": spec.label_set_images,
             "hard_options": {"k": spec.hard_options.k, "selector": spec.hard_options.selector,
                              "rule": "the selection model's K-1 highest-scoring non-valid "
                                      "classes (group max), seeded order"} if hard else None,
             "candidate_rule": "K-1 distractors uniform without replacement among the non-valid "
                               "classes, label position uniform; generator seeded by sha256 of "
                               "(seed, config, image key, 'k<K>')",
             "absent_variants": list(absent),
             # seed protocol choices and their named alternatives (the card's Deviations)
             "class_names": spec.class_names,
             "caltech_split": next((s.notes.get("caltech_split") for s in sources
                                    if s.variant == "caltech101"), None)}
    info = BuildInfo(spec.name, spec.version, spec.seed, fingerprints, extra, sample)
    return write_dataset(out, configs=configs, features=feats, card=card, info=info,
                         kind=CLASSIFICATION, label_spaces=spaces,
                         card_header=card_meta.header(FAMILY, sample=sample, features=feats))
