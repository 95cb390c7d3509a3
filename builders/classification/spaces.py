"""Label spaces of the classification family, each built once per config
(vlmrobust.core.label_space): ImageNet classes by their curated clean names
(vlmrobust/core/classes.py), with the class's WordNet lemmas as synonyms (what
a text answer may say instead: seed 002 App. A.3's "label synonyms", the
ILSVRC label strings); ObjectNet-style groups whose
``imagenet_ids`` are every ImageNet-1k class the group stands for; datasets
outside ImageNet (Flowers102, Cars, Caltech101) by their own class names,
with no ImageNet ids (a 1000-way classifier cannot read them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.label_space import ClassEntry, LabelSpace, name_key


def imagenet_entry(index: int, class_names: str = "openai") -> ClassEntry:
    """ImageNet-1k class ``index``: clean name, synonyms, wnid, itself as
    imagenet id, and (``class_names`` "openai", the default) OpenAI CLIP's name
    as the label ``text`` prompts write where it differs from the clean name:
    seed 001 uses "the default prompt template provided by [1]" (OpenAI CLIP)
    and seed 002 evaluates with CLIP's class names. ``curated``: prompts write
    the clean names. The OpenAI names are the package table's ``clip_name``
    column (vlmrobust/core/data/README.md); they equal open_clip's
    ``IMAGENET_CLASSNAMES`` (tests/models/test_class_names_openai.py checks).

    The synonyms are the synset's WordNet lemmas only, as seed 002 scores its
    Table 8 (App. A.3: "we incorporated label synonyms", the ILSVRC labels of
    footnote 3, e.g. "electric ray" and "crampfish"); the label text (the name
    prompts write, and the one seed 002's Table 1 looks for) is no synonym, and
    no other name is ("duck" for drake, the curated name where a prompt writes
    the CLIP name).

    >>> e = imagenet_entry(1)
    >>> e.name, e.wnid, e.imagenet_ids, "Carassius auratus" in e.synonyms
    ('goldfish', 'n01443537', (1,), True)
    >>> imagenet_entry(282).label_text, imagenet_entry(282, "curated").label_text
    ('tiger cat', 'a cat having a striped coat')
    >>> imagenet_entry(97).synonyms
    ('drake',)
    """
    if class_names not in ("openai", "curated"):
        raise ValueError(f"class_names {class_names!r} is not openai or curated")
    c = load_imagenet_classes()[index]
    own = name_key(c.name)
    syn = tuple(dict.fromkeys(s for s in c.lemmas if s.strip() and name_key(s) != own))
    text = c.clip_name if class_names == "openai" and c.clip_name.strip() \
        and c.clip_name != c.name else None
    return ClassEntry(c.name, syn, c.wnid, (index,), text)


def imagenet_space(name: str, ids: Sequence[int], class_names: str = "openai") -> LabelSpace:
    """The ImageNet classes ``ids`` (label i of a row = ``ids[i]``)."""
    return LabelSpace(name, tuple(imagenet_entry(i, class_names) for i in ids))


def group_space(name: str, groups: Mapping[str, Sequence[int]]) -> LabelSpace:
    """Classes that each stand for a group of ImageNet classes (ObjectNet,
    ImageNet-D, ImageNet-Vid-Robust), in the mapping's order; a classifier's
    logit for a class is the max over its group (group_rule ``max``). The
    group members' clean names are synonyms, so "rocking chair" answers
    ObjectNet's "chair"."""
    classes = load_imagenet_classes()
    entries = []
    for cls, ids in groups.items():
        own = name_key(cls)
        syn = tuple(dict.fromkeys(classes[i].name for i in ids if name_key(classes[i].name) != own))
        entries.append(ClassEntry(cls, syn, None, tuple(dict.fromkeys(ids))))
    return LabelSpace(name, tuple(entries), "max")


def named_space(name: str, names: Sequence[str],
                synonyms: Mapping[str, Sequence[str]] | None = None) -> LabelSpace:
    """Classes known by name only (no wnid, no ImageNet ids)."""
    syn = synonyms or {}
    return LabelSpace(name, tuple(ClassEntry(n, tuple(syn.get(n, ())), None, ()) for n in names))
