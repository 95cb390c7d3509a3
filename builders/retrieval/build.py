"""``build(raw_spec, spec_path, options) -> manifest`` for the retrieval family:
Karpathy's test splits of Flickr30K and MSCOCO (karpathy.py) -> one config per
source -> dataset directory of kind ``retrieval`` (atomic).

Rows, one per image: ``id`` (``<source>-<image id>``: Flickr30K's file stem,
COCO's ``cocoid``), ``image`` (the published JPEG bytes, unchanged, once PIL
has decoded them), ``captions`` (every caption of the image in the split
file's order, white space normalised), ``source``, ``source_file`` (the image's
file name in its release) and ``source_id``. The gallery of a config is all
its images and all their captions; Recall@K is scored from per-row image and
caption embeddings (vlmrobust.evaluation.scoring.retrieval)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.retrieval.card import render_card
from vlmrobust.builders.retrieval.dataset import FAMILY, features, rows
from vlmrobust.builders.retrieval.karpathy import (
    LAYOUTS,
    SOURCE_DIRS,
    KarpathySplit,
    read_karpathy,
)
from vlmrobust.core.errors import SourceError, SpecError, VlmrobustError
from vlmrobust.core.fingerprint import file_sha256
from vlmrobust.core.kinds import RETRIEVAL
from vlmrobust.core.writer import BuildInfo, write_dataset

DEFAULT_SOURCES = {"flickr30k": "flickr30k", "mscoco-5k": "mscoco"}


@dataclass(frozen=True)
class RetrievalSpec:
    name: str
    version: str
    seed: int
    sources: Mapping[str, str]  # config -> source (karpathy.LAYOUTS)

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError("sources: name at least one of " + ", ".join(LAYOUTS))
        for config, source in self.sources.items():
            if source not in LAYOUTS:
                raise ValueError(f"sources.{config}: {source!r} is not one of {list(LAYOUTS)}")
            if not config or "/" in config or config.startswith("."):
                raise ValueError(f"sources: {config!r} is not a config name")


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> RetrievalSpec:
    """The YAML mapping, checked; any problem is one SpecError naming the file."""
    try:
        sources = raw.get("sources", DEFAULT_SOURCES)
        if not isinstance(sources, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in sources.items()):
            raise ValueError("sources must map a config name to a source name")
        seed = raw.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        return RetrievalSpec(str(raw["name"]), str(raw["version"]), seed, dict(sources))
    except (ValueError, KeyError) as exc:
        raise SpecError(f"{spec_path}: {exc}") from None


def _present(source: str, root: Path) -> bool:
    """Whether ``root`` holds anything of ``source`` (then it must be a valid layout)."""
    return (any((root / d).is_dir() for d in SOURCE_DIRS[source])
            or (root / LAYOUTS[source].split_file).is_file())


def read_sources(spec: RetrievalSpec, root: Path, limit: int | None = None,
                 ) -> tuple[dict[str, KarpathySplit], list[str]]:
    """The test split per config, and the configs whose source is absent."""
    found: dict[str, KarpathySplit] = {}
    absent: list[str] = []
    for config, source in spec.sources.items():
        if not _present(source, root):
            absent.append(config)
            continue
        found[config] = read_karpathy(source, root, limit=limit)
    return found, absent


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    spec = parse_spec(raw_spec, spec_path)
    if options.sample:
        from vlmrobust.builders.retrieval.sample import build_sample

        return build_sample(spec, options)
    if options.source_root is None:
        raise VlmrobustError("retrieval builds from Karpathy's split files and the images; fix: "
                             "pass --source-root DIR (see benchmarks/retrieval.yaml)")
    root = Path(options.source_root)
    found, absent = read_sources(spec, root, options.limit)
    if not found:
        expected = "; ".join(f"{s}: {LAYOUTS[s].example}" for s in dict.fromkeys(
            spec.sources.values()))
        raise SourceError(f"{root}: none of the spec's sources is there; expected under "
                          f"{', '.join(sorted({d for s in spec.sources.values() for d in SOURCE_DIRS[s][:1]}))}/: "
                          f"{expected}")
    for config in absent:
        print(f"retrieval: {config}: no {spec.sources[config]} folder under {root}; that config "
              "is not built", file=sys.stderr)
    feats = features()
    counts = {c: len(s.images) for c, s in found.items()}
    info = BuildInfo(
        spec.name, spec.version, spec.seed,
        source_fingerprints={f"{c}/{s.split_file.name}": file_sha256(s.split_file)
                             for c, s in found.items()},
        extra={"family": FAMILY, "image_counts": counts,
               "caption_counts": {c: s.n_captions for c, s in found.items()},
               "absent_configs": absent})
    card = render_card(found, absent, limit=options.limit)
    return write_dataset(options.out, configs={c: rows(s) for c, s in found.items()},
                         features=feats, card=card, info=info, kind=RETRIEVAL,
                         card_header=card_meta.header(FAMILY, sample=False, features=feats))
