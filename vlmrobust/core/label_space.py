"""A label space: the classes a classification (or OOD) config's ``label``
indexes, stored **once per config** beside the data, never repeated per row.

On disk (inside the dataset directory, written in the same atomic swap as the
data by :func:`vlmrobust.core.writer.write_dataset`)::

    DIR/label_spaces/<config>.json   {"schema": 1, "name": ..., "classes": [
                                        {"name", "synonyms", "wnid", "imagenet_ids"[, "text"]}, ...]}

``text`` (optional) is the label text prompts write where it differs from the
unique display ``name`` (:attr:`LabelSpace.texts`).

and the manifest records ``label_spaces: {config: {file, sha256, n_classes,
name}}``; the content fingerprint covers every label space, so a renamed
class makes old predictions stale. ``imagenet_ids`` are the ImageNet-1k
indices a class stands for (one for ImageNet val/V2/Sketch, one each for the
200 classes of IN-R / IN-A, a group for an ObjectNet class; empty for
Flowers102, Cars, ...): a 1000-way classifier's logit for the class is the
max over them (``group_rule`` "max"), or the log of the mean of their softmax
probabilities (``group_rule`` "mean-prob": model-vs-human's 16-class decision
for cue-conflict); a label space whose classes have none cannot be read by one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import parse_json_bounded, read_bytes_bounded
from vlmrobust.core.layout import label_space_file

SCHEMA = 1
MAX_CLASSES = 100_000
MAX_LABEL_SPACE_BYTES = 64 * 2**20
GROUP_RULES = ("max", "mean-prob")
_WNID = re.compile(r"^n\d{8}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def name_key(name: str) -> str:
    """What makes two class names the same to a reader: case and spacing.

    >>> name_key("  Golden  Retriever ") == name_key("golden retriever")
    True
    """
    return " ".join(name.split()).casefold()


@dataclass(frozen=True)
class ClassEntry:
    """One class: its display ``name`` (unique in its label space), other
    names a text answer may use, its WordNet id where it has one, and the
    ImageNet-1k indices it stands for."""

    name: str
    synonyms: tuple[str, ...] = ()
    wnid: str | None = None
    imagenet_ids: tuple[int, ...] = ()
    # the label text CLIP templates and VLM prompts write, where it is not ``name``: seeds
    # 001 and 002 write OpenAI CLIP's ImageNet names, which are not unique (two "missile")
    text: str | None = None

    def __post_init__(self) -> None:
        for text in (self.name, *self.synonyms, *((self.text,) if self.text is not None else ())):
            if not isinstance(text, str) or not text.strip() or _CONTROL.search(text):
                raise ValueError(f"class name {text!r} must be a non-empty string without "
                                 "control characters")
        if self.wnid is not None and not _WNID.match(self.wnid):
            raise ValueError(f"class {self.name!r}: wnid {self.wnid!r} is not n########")
        bad = [i for i in self.imagenet_ids if isinstance(i, bool) or not isinstance(i, int)
               or not 0 <= i < 1000]
        if bad:
            raise ValueError(f"class {self.name!r}: imagenet_ids {bad} are not in 0..999")
        if len(set(self.imagenet_ids)) != len(self.imagenet_ids):
            raise ValueError(f"class {self.name!r}: imagenet_ids repeat")

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name, "synonyms": list(self.synonyms),
                               "wnid": self.wnid, "imagenet_ids": list(self.imagenet_ids)}
        if self.text is not None:  # absent otherwise: spaces without label texts keep their bytes
            doc["text"] = self.text
        return doc

    @property
    def label_text(self) -> str:
        """What a prompt writes for this class: ``text``, else ``name``."""
        return self.name if self.text is None else self.text


@dataclass(frozen=True)
class LabelSpace:
    """The ordered classes of one config; ``label`` i of a row is ``classes[i]``.

    >>> ls = LabelSpace("toy", (ClassEntry("cat"), ClassEntry("dog", ("puppy",))))
    >>> ls.names, len(ls)
    (('cat', 'dog'), 2)
    >>> LabelSpace.from_json_bytes(ls.to_json_bytes(), "x") == ls
    True
    """

    name: str
    classes: tuple[ClassEntry, ...]
    group_rule: str = "max"  # how a 1000-way classifier's logits become one per class

    def __post_init__(self) -> None:
        if not self.name or _CONTROL.search(self.name):
            raise ValueError(f"label space name {self.name!r} must be non-empty")
        if self.group_rule not in GROUP_RULES:
            raise ValueError(f"group_rule {self.group_rule!r} is not one of {GROUP_RULES}")
        if not 2 <= len(self.classes) <= MAX_CLASSES:
            raise ValueError(f"label space {self.name!r} has {len(self.classes)} classes; "
                             f"expected 2..{MAX_CLASSES}")
        seen: dict[str, int] = {}
        for i, c in enumerate(self.classes):
            key = name_key(c.name)
            if key in seen:
                raise ValueError(f"label space {self.name!r}: classes {seen[key]} and {i} share "
                                 f"the name {c.name!r}; names must be unique to be answerable")
            seen[key] = i

    def __len__(self) -> int:
        return len(self.classes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.classes)

    @property
    def texts(self) -> tuple[str, ...]:
        """The label texts CLIP templates and VLM prompts write, in label order
        (a class's ``text`` where it has one, else its ``name``).

        >>> LabelSpace("t", (ClassEntry("tiger cat (striped)", text="tiger cat"),
        ...                  ClassEntry("dog"))).texts
        ('tiger cat', 'dog')
        """
        return tuple(c.label_text for c in self.classes)

    @property
    def has_imagenet_ids(self) -> bool:
        """Whether a 1000-way ImageNet classifier can score every class."""
        return all(c.imagenet_ids for c in self.classes)

    def to_json_bytes(self) -> bytes:
        """Canonical bytes (what the manifest's sha256 and the fingerprint cover)."""
        doc = {"schema": SCHEMA, "name": self.name, "group_rule": self.group_rule,
               "classes": [c.to_json() for c in self.classes]}
        return (json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode("utf-8")

    def sha256(self) -> str:
        return hashlib.sha256(self.to_json_bytes()).hexdigest()

    @classmethod
    def from_json_bytes(cls, data: bytes, where: str) -> LabelSpace:
        doc = parse_json_bounded(data, where, max_nodes=len(data) + 1)
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise VlmrobustError(f"{where}: not a label space of schema {SCHEMA}; rebuild the dataset")
        raw = doc.get("classes")
        if not isinstance(raw, list):
            raise VlmrobustError(f"{where}: 'classes' must be a list; rebuild the dataset")
        try:
            classes = tuple(_entry(c) for c in raw)
            return cls(str(doc.get("name", "")), classes, str(doc.get("group_rule", "max")))
        except (ValueError, TypeError, KeyError) as exc:
            raise VlmrobustError(f"{where}: {exc}; rebuild the dataset") from None


def _entry(raw: Any) -> ClassEntry:
    if not isinstance(raw, dict):
        raise ValueError(f"a class must be an object, got {type(raw).__name__}")
    wnid = raw.get("wnid")
    text = raw.get("text")
    return ClassEntry(name=raw["name"], synonyms=tuple(raw.get("synonyms") or ()),
                      wnid=None if wnid is None else str(wnid),
                      imagenet_ids=tuple(raw.get("imagenet_ids") or ()),
                      text=None if text is None else str(text))


def manifest_records(spaces: Mapping[str, LabelSpace]) -> dict[str, dict[str, Any]]:
    """The manifest's ``label_spaces`` entry for ``spaces`` (config -> space)."""
    return {config: {"file": label_space_file(config), "sha256": ls.sha256(),
                     "n_classes": len(ls), "name": ls.name}
            for config, ls in spaces.items()}


def read_label_space(dataset_dir: Path | str, config: str,
                     manifest: Mapping[str, Any] | None = None) -> LabelSpace:
    """A config's label space, checked against the sha256 its manifest records."""
    from vlmrobust.core.datadir import read_manifest

    dataset_dir = Path(dataset_dir)
    manifest = read_manifest(dataset_dir) if manifest is None else manifest
    records = manifest.get("label_spaces")
    rec = records.get(config) if isinstance(records, dict) else None
    if not isinstance(rec, dict) or rec.get("file") != label_space_file(config):
        raise VlmrobustError(f"{dataset_dir}/manifest.json records no label space for config "
                             f"{config!r}; rebuild the dataset")
    path = dataset_dir / label_space_file(config)
    if not path.is_file():
        raise VlmrobustError(f"{path}: label space listed in the manifest is missing; rebuild "
                             "or re-download the dataset")
    data = read_bytes_bounded(path, MAX_LABEL_SPACE_BYTES, "label space")
    if hashlib.sha256(data).hexdigest() != rec.get("sha256"):
        raise VlmrobustError(f"{path}: label space changed after the build (sha256 differs from "
                             "the manifest); rebuild or re-download the dataset")
    return LabelSpace.from_json_bytes(data, str(path))


def candidate_check(candidates: Sequence[int], label: int, n_classes: int, where: str) -> None:
    """A K-config row's candidate classes: distinct indices into the label
    space that include the row's label."""
    if len(set(candidates)) != len(candidates):
        raise VlmrobustError(f"{where}: candidate classes repeat")
    if any(not 0 <= c < n_classes for c in candidates):
        raise VlmrobustError(f"{where}: a candidate class is outside 0..{n_classes - 1}")
    if label not in candidates:
        raise VlmrobustError(f"{where}: the label {label} is not among the candidates")


def spaces_of(configs: Iterable[str], spaces: Mapping[str, LabelSpace]) -> dict[str, LabelSpace]:
    """``spaces`` restricted to ``configs``, refusing a config without one."""
    missing = [c for c in configs if c not in spaces]
    if missing:
        raise ValueError(f"configs {missing} have no label space")
    return {c: spaces[c] for c in configs}
