"""imagenet-mcq's inputs: each variant's cleaned items, label space and, for
ObjectNet, its own class names and IN-1k groups, read from the embedded sample
or from the on-disk layouts (vlmrobust.builders.sources), before any question
is made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.builders.imagenet_mcq.items import Item, clean_items
from vlmrobust.builders.imagenet_mcq.spec import McqSpec
from vlmrobust.builders.labels import clean_labels_for

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

    clean = clean_labels_for(spec.clean_labels, root)
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


def v2_release(spec: McqSpec, variant: str) -> str | None:
    """ImageNet-V2's release the spec names (default matched-frequency)."""
    from vlmrobust.builders.sources import V2_DEFAULT_RELEASE

    if variant != "imagenet-v2":
        return None
    v = next((v for v in spec.variants if v.name == variant), None)
    return (v.release if v is not None else None) or V2_DEFAULT_RELEASE
