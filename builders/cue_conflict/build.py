"""``build(raw_spec, spec_path, options) -> manifest`` for the cue-conflict family:
the published stimuli (layout.py) -> one classification config per variant over
the 16-category label space (categories.py) -> dataset directory (atomic).

Rows: ``id`` (``<config>/<source_file>``), ``image`` (the published PNG bytes,
unchanged), ``label`` (the shape category's index), ``variant``,
``source_file``, ``shape_category``, ``texture_category`` (None where the
image has no texture cue of a category) and ``texture_label`` (its index, -1
where none). Shape bias is scored from these columns
(vlmrobust.evaluation.scoring.shape_bias)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.cue_conflict.card import render_card
from vlmrobust.builders.cue_conflict.categories import CATEGORIES, label_space
from vlmrobust.builders.cue_conflict.layout import (
    CUE_CONFLICT,
    READERS,
    STYLIZED,
    VARIANTS,
    Stimulus,
)
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.image_files import checked_image
from vlmrobust.core.errors import SpecError, VlmrobustError
from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.writer import BuildInfo, write_dataset

FAMILY = "cue-conflict"


@dataclass(frozen=True)
class CueConflictSpec:
    name: str
    version: str
    seed: int
    variants: Mapping[str, str]  # config (= variant) -> folder under --source-root

    def __post_init__(self) -> None:
        unknown = [v for v in self.variants if v not in VARIANTS]
        if unknown:
            raise ValueError(f"variants: {unknown[0]!r} is not one of {list(VARIANTS)}")
        if not self.variants:
            raise ValueError("variants: name at least one of " + ", ".join(VARIANTS))
        for v, folder in self.variants.items():
            if not folder or Path(folder).is_absolute() or ".." in Path(folder).parts:
                raise ValueError(f"variants.{v}: {folder!r} must be a folder relative to "
                                 "--source-root")


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> CueConflictSpec:
    """The YAML mapping, checked; any problem is one SpecError naming the file."""
    try:
        variants = raw.get("variants", {v: v for v in VARIANTS})
        if not isinstance(variants, Mapping) or not all(
                isinstance(k, str) and isinstance(f, str) for k, f in variants.items()):
            raise ValueError("variants must map a variant name to a folder name")
        seed = raw.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        return CueConflictSpec(str(raw["name"]), str(raw["version"]), seed, dict(variants))
    except ValueError as exc:
        raise SpecError(f"{spec_path}: {exc}") from None


def features() -> Any:
    from datasets import ClassLabel, Features, Value
    from datasets import Image as HFImage

    return Features({
        "id": Value("string"), "image": HFImage(),
        "label": ClassLabel(names=list(CATEGORIES)),
        "variant": Value("string"), "source_file": Value("string"),
        "shape_category": Value("string"), "texture_category": Value("string"),
        "texture_label": Value("int32"),
    })


def image_bytes(path: Path) -> bytes:
    """The file's bytes once PIL has checked that they are a PNG it can decode."""
    data, fmt = checked_image(path, "cue-conflict image",
                              "restore the file from the published stimuli", VlmrobustError)
    if fmt != "PNG":
        raise VlmrobustError(f"{path}: a {fmt} image under a .png name; fix: restore the file "
                             "from the published stimuli")
    return data


def rows(config: str, stimuli: Sequence[Stimulus]) -> Iterator[dict[str, Any]]:
    index = {c: i for i, c in enumerate(CATEGORIES)}
    for s in stimuli:
        yield {
            "id": f"{config}/{s.source_file}",
            "image": {"bytes": image_bytes(s.path), "path": None},
            "label": index[s.shape],
            "variant": s.variant,
            "source_file": s.source_file,
            "shape_category": s.shape,
            "texture_category": s.texture,
            "texture_label": -1 if s.texture is None else index[s.texture],
        }


def read_sources(spec: CueConflictSpec, root: Path,
                 limit: int | None = None) -> tuple[dict[str, list[Stimulus]], list[str]]:
    """Stimuli per config, and the optional variants whose folder is absent.
    A missing cue-conflict folder is an error: it is what the family measures."""
    found: dict[str, list[Stimulus]] = {}
    absent: list[str] = []
    for variant, folder in spec.variants.items():
        path = root / folder
        if not path.exists() and variant == STYLIZED:
            absent.append(variant)
            continue
        if not path.exists():
            raise VlmrobustError(f"{path}: missing; fix: put Geirhos's cue-conflict stimuli "
                                 f"there or set variants.{variant} in the spec")
        stimuli = READERS[variant](path)
        found[variant] = stimuli[:limit] if limit is not None else stimuli
    return found, absent


def build(raw_spec: dict[str, Any], spec_path: Path, options: BuildOptions) -> dict[str, Any]:
    spec = parse_spec(raw_spec, spec_path)
    if options.sample:
        return _build_sample(spec, options)
    if options.source_root is None:
        raise VlmrobustError("cue-conflict builds from the published stimuli; fix: pass "
                             "--source-root DIR (DIR/cue-conflict/<category>/...)")
    found, absent = read_sources(spec, Path(options.source_root), options.limit)
    if not found:
        raise VlmrobustError(f"{options.source_root}: none of the spec's variants is there; fix: "
                             "put the stimuli under the folders the spec names")
    for variant in absent:
        print(f"cue-conflict: {variant}: folder {spec.variants[variant]!r} absent under "
              f"{options.source_root}; that config is not built", file=sys.stderr)
    space = label_space()
    feats = features()
    counts = {v: len(s) for v, s in found.items()}
    card = render_card(found, absent, space, limit=options.limit)
    info = BuildInfo(spec.name, spec.version, spec.seed,
                     extra={"family": FAMILY, "variant_counts": counts, "absent_variants": absent})
    return write_dataset(options.out, configs={v: rows(v, s) for v, s in found.items()},
                         features=feats, card=card, info=info, kind=CLASSIFICATION,
                         label_spaces={v: space for v in found},
                         card_header=card_meta.header(FAMILY, sample=False, features=feats))


def _build_sample(spec: CueConflictSpec, options: BuildOptions) -> dict[str, Any]:
    """The embedded stand-in (sample.py): written in the published layout to a
    scratch folder beside the output, read back by the real reader."""
    import shutil
    import tempfile

    from vlmrobust.builders.cue_conflict.layout import read_cue_conflict
    from vlmrobust.builders.cue_conflict.sample import provenance_lines, write_sample_stimuli

    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.cue-conflict-", dir=out.parent))
    try:
        made = write_sample_stimuli(scratch / CUE_CONFLICT)
        stimuli = read_cue_conflict(scratch / CUE_CONFLICT)
        if options.limit is not None:
            stimuli = stimuli[:options.limit]
        space = label_space()
        feats = features()
        found = {CUE_CONFLICT: stimuli}
        card = render_card(found, [], space, limit=options.limit,
                           sample_sources=provenance_lines(made))
        info = BuildInfo(spec.name, spec.version, spec.seed, sample=True,
                         extra={"family": FAMILY, "variant_counts": {CUE_CONFLICT: len(stimuli)},
                                "absent_variants": [STYLIZED]})
        return write_dataset(out, configs={CUE_CONFLICT: rows(CUE_CONFLICT, stimuli)},
                             features=feats, card=card, info=info, kind=CLASSIFICATION,
                             label_spaces={CUE_CONFLICT: space},
                             card_header=card_meta.header(FAMILY, sample=True, features=feats))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
