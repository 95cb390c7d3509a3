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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.labels import clean_labels_for
from vlmrobust.builders.ood.dataset import (
    ID_CONFIG,
    IdImage,
    OodSpec,
    write_ood,
)
from vlmrobust.builders.ood.layouts import LAYOUTS, OodSet, read_ood_set
from vlmrobust.core.errors import SourceError, SpecError, VlmrobustError
from vlmrobust.core.fingerprint import tree_fingerprint


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
