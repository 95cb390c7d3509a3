"""The ood dataset's spec, rows and writer, shared by the build from the published
folders (:mod:`vlmrobust.builders.ood.build`) and the embedded sample
(:mod:`vlmrobust.builders.ood.sample`), below both (issue 38.4: no import circles)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.image_files import checked_image
from vlmrobust.builders.ood.card import render_card
from vlmrobust.builders.ood.layouts import LAYOUTS, OodSet
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
