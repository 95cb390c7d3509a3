"""The retrieval family's embedded sample: 31 of the sample's photos
(builders/sample) with two captions each, written for this project by looking
at the photos (``builders/sample/data/captions.yaml``). One config,
``sample-photo``: a gallery of 31 images and 62 captions with the columns of
the real configs (``source`` ``"sample"``, ``source_file`` the photo's path in
its origin package, ``source_id`` its row in the captions file). A stand-in
that exercises build, predict, validate and Recall@K, not a benchmark: two
captions per image instead of Flickr30K's five, and the photos are mostly one
object on white."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.retrieval.card import deviations
from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import MAX_META_BYTES, read_yaml_bounded

CAPTIONS_YAML = Path(__file__).resolve().parents[1] / "sample" / "data" / "captions.yaml"
CONFIG = "sample-photo"


def read_captions(path: Path = CAPTIONS_YAML) -> dict[str, tuple[str, ...]]:
    """key -> captions, in file order; a malformed file is one SourceError."""
    doc = read_yaml_bounded(path, MAX_META_BYTES, "caption file", SourceError)
    if not isinstance(doc, Mapping) or not doc:
        raise SourceError(f"{path}: expected a mapping of photo key -> list of captions")
    out: dict[str, tuple[str, ...]] = {}
    for key, caps in doc.items():
        if not isinstance(caps, list) or not caps or not all(
                isinstance(c, str) and c.strip() for c in caps):
            raise SourceError(f"{path}: {key}: give a list of non-empty caption strings")
        out[str(key)] = tuple(" ".join(c.split()) for c in caps)
    return out


def sample_rows(captions: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """One row per captioned photo (file order); every key must be a sample photo."""
    from vlmrobust.builders.retrieval.dataset import image_bytes
    from vlmrobust.builders.sample import load_sample

    photos = {im.key: im for im in load_sample() if im.group == "photo"}
    unknown = [k for k in captions if k not in photos]
    if unknown:
        raise SourceError(f"{CAPTIONS_YAML}: {unknown[0]} is not a photo of "
                          "builders/sample/sample.csv; fix: use a photo's key")
    rows = []
    for i, (key, caps) in enumerate(captions.items()):
        im = photos[key]
        rows.append({"id": f"sample-{key}",
                     "image": {"bytes": image_bytes(Path(im.path)), "path": None},
                     "captions": list(caps), "source": "sample",
                     "source_file": im.origin_path, "source_id": i})
    return rows


def _card(rows: Sequence[Mapping[str, Any]], licences: Sequence[tuple[str, str, str]]) -> str:
    n_cap = sum(len(r["captions"]) for r in rows)
    return "\n".join([
        "# Retrieval: embedded sample (a stand-in for Flickr30K / MSCOCO)",
        "",
        f"{len(rows)} photos that ship in packages (builders/sample), {n_cap} captions "
        "written for this project by looking at each photo "
        "(`builders/sample/data/captions.yaml`, CC0). One config, "
        f"`{CONFIG}`: image→text and text→image Recall@1/5/10 over this gallery, computed as "
        "for the real configs (`vlmrobust build retrieval --source-root` reads Karpathy's "
        "Flickr30K and MSCOCO 5k test splits). It exercises the pipeline; it is **not** "
        "Flickr30K or COCO: two captions per image instead of five, most photos are one "
        "object cut out on white, and 31 images make Recall@5 and @10 easy.",
        "",
        "## Columns",
        "",
        "`id` (`sample-<photo key>`), `image` (the sample's file, byte for byte), `captions` "
        "(the photo's captions in file order), `source` (`sample`), `source_file` (the "
        "photo's path in its origin package) and `source_id` (its row in the caption file).",
        "",
        *deviations(sample=True),
        "",
        card_meta.common_sections("retrieval", licences=licences),
    ])


def build_sample(spec: Any, options: BuildOptions) -> dict[str, Any]:
    """Write the sample dataset (kind retrieval) to ``options.out``."""
    from vlmrobust.builders.retrieval.dataset import FAMILY, features
    from vlmrobust.builders.sample import load_sample
    from vlmrobust.core.fingerprint import file_sha256
    from vlmrobust.core.kinds import RETRIEVAL
    from vlmrobust.core.writer import BuildInfo, write_dataset

    rows = sample_rows(read_captions())
    if options.limit is not None:
        rows = rows[:options.limit]
    photos = {im.key: im for im in load_sample()}
    keys = [str(r["id"]).removeprefix("sample-") for r in rows]
    licences = [("captions (builders/sample/data/captions.yaml)", "cc0-1.0",
                 "written for vlmrobust"),
                *[(f"photo {k} ({photos[k].origin_package})", "other", photos[k].licence)
                  for k in keys]]
    feats = features()
    info = BuildInfo(
        spec.name, spec.version, spec.seed, sample=True,
        source_fingerprints={"captions.yaml": file_sha256(CAPTIONS_YAML)},
        extra={"family": FAMILY, "image_counts": {CONFIG: len(rows)},
               "caption_counts": {CONFIG: sum(len(r["captions"]) for r in rows)},
               "absent_configs": []})
    return write_dataset(options.out, configs={CONFIG: iter(rows)}, features=feats,
                         card=_card(rows, licences), info=info, kind=RETRIEVAL,
                         card_header=card_meta.header(FAMILY, sample=True, features=feats))
