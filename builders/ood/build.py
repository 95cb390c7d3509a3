"""``build(raw_spec, spec_path, options) -> manifest`` for the ood family:
ImageNet val (ID, clean labels) + each OOD set in its published layout
(layouts.py) -> one dataset directory of kind ``ood`` (atomic).

Configs: ``imagenet-val`` holds the ID rows once; every OOD set is its own
config holding only its OOD rows, so the 50,000 ID images are stored and
predicted once, not once per OOD set. Scoring pairs every OOD set with all
scored ID rows (evaluation/scoring/ood.py). Every config indexes the same label
space, ImageNet-1k (label_spaces/<config>.json).

Rows: ``id`` (``<config>/<key>``), ``image`` (the published file's bytes,
unchanged once PIL has decoded them), ``label`` (ImageNet-1k index; -1 on OOD
rows), ``is_ood``, ``ood_source`` (the OOD set; null on ID rows),
``ood_class`` (NINCO's class or DTD's texture category, the set's class
folder; null elsewhere: ImageNet-O's wnid folders are not what the image shows,
see layouts.py) and ``source_file`` (the path
below the set's image folder: an ImageNet val file name, a texture or wnid
folder and file for DTD / ImageNet-O).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.image_files import checked_image
from vlmrobust.builders.labels import clean_labels_for
from vlmrobust.builders.ood.card import render_card
from vlmrobust.builders.ood.layouts import LAYOUTS, OodSet, read_ood_set
from vlmrobust.core.errors import SourceError, SpecError, VlmrobustError
from vlmrobust.core.fingerprint import tree_fingerprint
from vlmrobust.core.kinds import OOD
from vlmrobust.core.label_space import LabelSpace
from vlmrobust.core.writer import BuildInfo, write_dataset

FAMILY = "ood"
ID_CONFIG = "imagenet-val"


@dataclass(frozen=True)
class OodSpec:
    name: str
    version: str
    seed: int
    sets: tuple[str, ...]  # OOD sets, each a config (layouts.LAYOUTS)
    clean_labels: str | None  # auto | real | null | a file under --source-root

    def __post_init__(self) -> None:
        if not self.sets:
            raise ValueError("ood_sets: name at least one of " + ", ".join(LAYOUTS))
        for s in self.sets:
            if s not in LAYOUTS:
                raise ValueError(f"ood_sets: {s!r} is not one of {', '.join(LAYOUTS)}")
        if len(set(self.sets)) != len(self.sets):
            raise ValueError("ood_sets: a set is listed twice")


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> OodSpec:
    """The YAML mapping, checked; any problem is one SpecError naming the file."""
    try:
        sets = raw.get("ood_sets", list(LAYOUTS))
        if not isinstance(sets, list) or not all(isinstance(s, str) for s in sets):
            raise ValueError("ood_sets must be a list of set names")
        seed = raw.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        clean = raw.get("clean_labels", "auto")
        if clean is not None and not isinstance(clean, str):
            raise ValueError(f"clean_labels must be auto, real, null or a file, got {clean!r}")
        return OodSpec(str(raw["name"]), str(raw["version"]), seed, tuple(sets), clean)
    except (ValueError, KeyError) as exc:
        raise SpecError(f"{spec_path}: {exc}") from None


def features() -> Any:
    from datasets import Features, Value
    from datasets import Image as HFImage

    return Features({
        "id": Value("string"), "image": HFImage(), "label": Value("int32"),
        "is_ood": Value("bool"), "ood_source": Value("string"), "ood_class": Value("string"),
        "source_file": Value("string"),
    })


def imagenet_label_space() -> LabelSpace:
    """ImageNet-1k as the classification family's ImageNet configs hold it (clean
    names, CLIP names and WordNet lemmas as synonyms, each class its own id)."""
    from vlmrobust.builders.classification.spaces import imagenet_space

    return imagenet_space("imagenet-1k", tuple(range(1000)))


def image_bytes(path: Path) -> bytes:
    """The file's bytes once PIL has decoded them (a broken file is refused)."""
    return checked_image(path)[0]


@dataclass(frozen=True)
class IdImage:
    key: str
    path: Path
    label: int


def read_id(spec: OodSpec, root: Path, limit: int | None) -> tuple[list[IdImage], str]:
    """ImageNet val (clean labels; an image's label is its answer-rule label) and
    a note naming the clean labels used."""
    from vlmrobust.builders.sources import read_variant

    clean = clean_labels_for(spec.clean_labels, root)
    images = read_variant(ID_CONFIG, root, clean)
    out = [IdImage(s.key, s.path, s.labels[0]) for s in images]
    note = "original ILSVRC-2012 labels" if clean is None else (
        "ReaL labels (Beyer et al. 2020)" if clean == "real" else f"clean labels from {Path(clean).name}")
    return (out[:limit] if limit is not None else out), note


def id_rows(images: Sequence[IdImage], config: str = ID_CONFIG) -> Iterator[dict[str, Any]]:
    for im in images:
        yield {"id": f"{config}/{im.key}", "image": {"bytes": image_bytes(im.path), "path": None},
               "label": im.label, "is_ood": False, "ood_source": None, "ood_class": None,
               "source_file": im.key}


def ood_rows(s: OodSet) -> Iterator[dict[str, Any]]:
    named = LAYOUTS[s.name].classes_are_ood_classes
    for im in s.images:
        yield {"id": f"{s.name}/{im.key}", "image": {"bytes": image_bytes(im.path), "path": None},
               "label": -1, "is_ood": True, "ood_source": s.name,
               "ood_class": im.folder if named else None, "source_file": im.key}


def read_sets(spec: OodSpec, root: Path, limit: int | None) -> tuple[dict[str, OodSet], list[str]]:
    """The OOD sets found under ``root`` and the spec's sets that are absent."""
    found: dict[str, OodSet] = {}
    absent: list[str] = []
    for name in spec.sets:
        s = read_ood_set(name, root, limit)
        if s is None:
            absent.append(name)
        else:
            found[name] = s
    return found, absent


def write_ood(out: Path, spec: OodSpec, id_images: Sequence[IdImage], sets: Mapping[str, OodSet],
              absent: Sequence[str], *, id_note: str, sample: bool, limit: int | None,
              source_fingerprints: Mapping[str, str], licences: Sequence[tuple[str, str, str]] = (),
              ood_rows_of: Any = ood_rows, id_config: str = ID_CONFIG,
              named_classes: Sequence[str] | None = None) -> dict[str, Any]:
    """Write the dataset directory (configs ``id_config`` + one per OOD set;
    ``named_classes``: the sets whose class folders are OOD classes)."""
    space = imagenet_label_space()
    configs: dict[str, Any] = {id_config: id_rows(id_images, id_config)}
    configs.update({name: ood_rows_of(s) for name, s in sets.items()})
    counts = {id_config: len(id_images), **{n: len(s.images) for n, s in sets.items()}}
    if named_classes is None:
        named_classes = [n for n, lay in LAYOUTS.items() if lay.classes_are_ood_classes]
    classes = {n: list(s.classes) for n, s in sets.items() if n in named_classes}
    feats = features()
    info = BuildInfo(spec.name, spec.version, spec.seed, source_fingerprints=dict(source_fingerprints),
                     extra={"family": FAMILY, "id_config": id_config, "ood_sets": list(sets),
                            "absent_sets": list(absent), "image_counts": counts,
                            "ood_classes": classes, "id_labels": id_note},
                     sample=sample)
    card = render_card(counts, absent, classes, id_config=id_config, id_note=id_note,
                       sample=sample, limit=limit, licences=licences)
    return write_dataset(out, configs=configs, features=feats, card=card, info=info, kind=OOD,
                         label_spaces=dict.fromkeys(configs, space),
                         card_header=card_meta.header(FAMILY, sample=sample, features=feats))


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    spec = parse_spec(raw_spec, spec_path)
    if options.sample:
        from vlmrobust.builders.ood.sample import build_sample

        return build_sample(spec, options)
    if options.source_root is None:
        raise VlmrobustError("ood builds from ImageNet val and the OOD sets' published folders; "
                             "fix: pass --source-root DIR (see benchmarks/ood.yaml) or --sample")
    root = Path(options.source_root)
    sets, absent = read_sets(spec, root, options.limit)
    if not sets:
        raise SourceError(f"{root}: none of the spec's OOD sets is there; expected "
                          + "; ".join(LAYOUTS[s].example for s in spec.sets))
    id_images, id_note = read_id(spec, root, options.limit)
    for name in absent:
        print(f"ood: {name}: no {LAYOUTS[name].example} under {root}; that config is not built",
              file=sys.stderr)
    prints = {f"{n}/": tree_fingerprint([im.path for im in s.images], s.folder)
              for n, s in sets.items()}
    return write_ood(options.out, spec, id_images, sets, absent, id_note=id_note, sample=False,
                     limit=options.limit, source_fingerprints=prints)
