"""Readers for the ImageNet-derived variants of the classification family, each
in its published on-disk layout (paths under ``--source-root``):

- ``imagenet-val``, ``imagenet-v2``, ``imagenet-r``, ``imagenet-sketch``,
  ``imagenet-a``, ``objectnet``: read by the imagenet-mcq readers
  (vlmrobust.builders.sources, whose docstring documents those layouts), so both
  families see the same images. ImageNet val is all 50,000 images with their
  original labels, as seeds 001 and 002 score it; the ``imagenet-val-clean``
  config takes the spec's clean labels (``auto``: Kisel et al.'s
  ``clean_validation.csv`` when it is in the source root or its imagenet-val/
  folder, else ReaL): an image's other valid labels become ``valid_labels``;
  images with none are dropped. ImageNet-V2 is read
  from the release the spec names (default ``imagenetv2-matched-frequency-format-val``)
  and the manifest records the folder used. Label spaces: 1000 classes (val,
  V2, Sketch), the 200 classes of IN-R / IN-A, ObjectNet's 113 classes that map
  to ImageNet-1k, each with its ImageNet group as ``imagenet_ids`` (group_rule max).
  A wrong layout is refused in the readers' one line, naming the file or folder,
  the fix and the layout expected (:data:`IMAGENET_LAYOUTS`).
- ``imagenet-vid-robust`` (Shankar et al. 2019; the release's
  ``imagenet-vid-robust/`` folder, directly or under ``imagenet_vid_ytbb_robust/``):
  ``metadata/pmsets.json`` {anchor frame: [frames of its perturbation set]},
  ``metadata/labels.json`` {frame: [class indices]}, ``misc/imagenet_vid_class_index.json``
  {"i": [wnid, name]} (30 classes) and ``misc/rev_wnid_map.json`` {VID wnid:
  [ImageNet wnids]}; frames at the paths the JSON names (``val/<video>/<frame>.JPEG``).
  Every anchor and perturbed frame is a row; ``pmset`` names its anchor (the
  scorer's benign and pm-k accuracy group rows by it). The paper's 22,178
  frames in 1,109 sets (~20 each) suggest disjoint sets; a frame listed in
  several sets would be one row, in the first (sorted) set only, and the
  manifest's ``frames_in_several_sets`` counts such frames.
- ``imagenet-d`` (Zhang et al. 2024; ``ImageNet-D/`` or ``imagenet-d/``):
  ``<split>/<class_dir>/*`` for the splits background, texture, material, and the
  class mapping of ImageNet-D's code release, ``imgnet_d2imgnet_id.txt`` (JSON
  {class_dir: [ImageNet indices]}, from its ``preprocessing/`` folder) in that
  folder; ``imgnet_d_dir2imgnet_d_id.txt`` beside it, when present, gives display names.
  One config per split (113 classes, ``imagenet-d-<split>``). The release's
  ``questions/`` CSVs are not read: the 4-option configs are rebuilt with the
  spec's selection model (seed 001 §IX), which the manifest names.
- ``3dcc`` (Kar et al. 2022, ImageNet-3DCC as released; ``3dcc/`` or ``ImageNet-3DCC/``):
  ``<corruption>/<severity 1..5>/<wnid>/*.JPEG``. One config per corruption x
  severity, ``3dcc-<corruption>-<severity>`` (each cell scored and calibrated on
  its own, like a variant), rows also carrying ``corruption`` and ``severity``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from vlmrobust.builders.classification.sources import (
    SourceItem,
    VariantSource,
    find_dir,
    images_in,
    layout_error,
    read_json,
    relative_folder,
    subdirs,
)
from vlmrobust.builders.classification.spaces import group_space, imagenet_space
from vlmrobust.builders.labels import clean_labels_for
from vlmrobust.builders.sources import SourceImage
from vlmrobust.core.errors import SourceError, VlmrobustError

IMAGENET_D_SPLITS = ("background", "texture", "material")
IMAGENET_D_MAP = "imgnet_d2imgnet_id.txt"
IMAGENET_D_NAMES = "imgnet_d_dir2imgnet_d_id.txt"
THREEDCC_CORRUPTIONS = ("near_focus", "far_focus", "fog_3d", "flash", "color_quant", "low_light",
                        "xy_motion_blur", "z_motion_blur", "iso_noise", "bit_error", "h265_abr",
                        "h265_crf")
_WNID = re.compile(r"^n\d{8}$")

# What the imagenet-mcq readers (vlmrobust.builders.sources) accept, as their refusals name it.
IMAGENET_LAYOUTS = {
    "imagenet-val": ("imagenet-val/<wnid>/<image> (class folders), or flat imagenet-val/"
                     "ILSVRC2012_val_<8 digits>.JPEG with LOC_val_solution.csv or val.txt beside them; "
                     "Kisel et al.'s clean_validation.csv in the source root or imagenet-val/"),
    "imagenet-v2": ("imagenetv2-<release>-format-val/<class index 0..999>/<image> "
                    "(directly or under imagenet-v2/)"),
    "imagenet-r": "imagenet-r/<wnid>/<image> (wnids of ImageNet-R's 200 classes)",
    "imagenet-a": "imagenet-a/<wnid>/<image> (wnids of ImageNet-A's 200 classes)",
    "imagenet-sketch": "imagenet-sketch/sketch/<wnid>/<image> or imagenet-sketch/<wnid>/<image>",
    "objectnet": ("objectnet/{images/<folder>/<image>, mappings/objectnet_to_imagenet_1k.json, "
                  "mappings/folder_to_objectnet_label.json} (directly or under objectnet-1.0/)"),
}
VID_LAYOUT = ("imagenet-vid-robust/{metadata/pmsets.json, metadata/labels.json, "
              "misc/imagenet_vid_class_index.json, misc/rev_wnid_map.json, val/<video>/<frame>.JPEG}")
D_LAYOUT = (f"ImageNet-D/{{background,texture,material}}/<class_dir>/<image> + ImageNet-D/{IMAGENET_D_MAP} "
            "(JSON {class_dir: [ImageNet indices]} from ImageNet-D's preprocessing/ folder)")
C3D_LAYOUT = "3dcc/<corruption>/<severity 1..5>/<wnid>/<image> (ImageNet-3DCC as released)"


def read_imagenet_variant(variant: str, root: Path, clean_labels: str | None = None,
                          release: str | None = None, class_names: str = "openai",
                          config: str | None = None) -> VariantSource:
    """ImageNet val / V2 / R / Sketch / A / ObjectNet through the imagenet-mcq
    readers; their one-line refusals (which name the file or folder and the fix)
    also name the layout expected (:data:`IMAGENET_LAYOUTS`), as every other
    classification layout's do. ``clean_labels`` None reads ImageNet val's
    50,000 images by their original labels; ``config`` renames the config (the
    clean subset: ``imagenet-val-clean``)."""
    try:
        src = _imagenet_variant(variant, root, clean_labels, release, class_names)
    except SourceError as exc:
        msg = str(exc)
        if "expected layout: " in msg or variant not in IMAGENET_LAYOUTS:
            raise
        raise SourceError(f"{msg}; expected layout: {IMAGENET_LAYOUTS[variant]} "
                          "(builders/classification/)") from None
    if config is None or config == src.config:
        return src
    return VariantSource(config, src.variant, src.space, src.items, src.folder, src.notes)


def _imagenet_variant(variant: str, root: Path, clean_labels: str | None,
                      release: str | None, class_names: str) -> VariantSource:
    from vlmrobust.builders.sources import V2_DEFAULT_RELEASE, read_variant, variant_dir
    from vlmrobust.core.classes import label_space

    clean = clean_labels_for(clean_labels, root) if variant == "imagenet-val" else None
    sources = read_variant(variant, root, clean_labels=clean, release=release)
    folder = relative_folder(variant_dir(variant, root, release), root)
    notes: dict[str, object] = {"folder": folder}
    if variant == "imagenet-v2":
        notes["release"] = release or V2_DEFAULT_RELEASE
    if variant == "imagenet-val":
        notes["labels"] = "original ILSVRC-2012 labels, every image" if clean is None else \
            "clean subset"
        if clean is not None:
            notes["clean_labels"] = str(clean) if clean == "real" else Path(clean).name
    if variant == "objectnet":
        return _objectnet(root, sources, folder, notes)
    ids = tuple(sorted(label_space(variant)))
    pos = {c: i for i, c in enumerate(ids)}
    items = tuple(SourceItem(s.key, Path(s.path), pos[s.labels[0]],
                             tuple(pos[x] for x in s.labels if x in pos))
                  for s in sources if s.labels and s.labels[0] in pos)
    return VariantSource(variant, variant, imagenet_space(variant, ids, class_names), items,
                         folder, notes)


def _objectnet(root: Path, sources: Sequence[SourceImage], folder: str,
               notes: dict[str, object]) -> VariantSource:
    """ObjectNet's own 113 classes (those its release maps to ImageNet-1k), in
    name order, each standing for its ImageNet group; a row's label is its
    folder's class."""
    from vlmrobust.builders.imagenet_mcq.inputs import objectnet_name
    from vlmrobust.core.classes import load_objectnet_mapping

    d = root / folder
    mappings = d / "mappings" if (d / "mappings").is_dir() else d / "objectnet-1.0" / "mappings"
    members = dict(sorted(load_objectnet_mapping(mappings).items()))
    folders = read_json(mappings / "folder_to_objectnet_label.json", IMAGENET_LAYOUTS["objectnet"])
    space = group_space("objectnet", {objectnet_name(n): ids for n, ids in members.items()})
    pos = {n: i for i, n in enumerate(members)}
    items: list[SourceItem] = []
    for s in sources:
        name = folders.get(s.key.split("/", 1)[0])
        if name in pos:
            items.append(SourceItem(s.key, Path(s.path), pos[name], (pos[name],)))
    return VariantSource("objectnet", "objectnet", space, tuple(items), folder, notes)


def read_vid_robust(root: Path) -> VariantSource:
    d = root / "imagenet_vid_ytbb_robust" / "imagenet-vid-robust"
    d = d if d.is_dir() else find_dir(root, ("imagenet-vid-robust",), VID_LAYOUT)
    from vlmrobust.core.classes import class_by_wnid

    pmsets = read_json(d / "metadata" / "pmsets.json", VID_LAYOUT)
    labels = read_json(d / "metadata" / "labels.json", VID_LAYOUT)
    index = read_json(d / "misc" / "imagenet_vid_class_index.json", VID_LAYOUT)
    rev = read_json(d / "misc" / "rev_wnid_map.json", VID_LAYOUT)
    if not all(isinstance(x, dict) for x in (pmsets, labels, index, rev)):
        raise layout_error(d, "metadata/misc JSON files must be objects", VID_LAYOUT)
    try:
        order = sorted(index, key=int)
        groups = {str(index[k][1]).replace("_", " "): tuple(class_by_wnid(w).index
                                                            for w in rev[index[k][0]])
                  for k in order}
    except (KeyError, ValueError, TypeError, IndexError, VlmrobustError) as exc:
        raise layout_error(d / "misc", f"class index and rev_wnid_map disagree ({exc})", VID_LAYOUT) from None
    if [int(k) for k in order] != list(range(len(order))):
        raise layout_error(d / "misc", "imagenet_vid_class_index.json keys are not 0..n-1", VID_LAYOUT)
    anchor_of: dict[str, str] = {}
    shared = 0  # frames listed in several sets: one row, in the first set (the manifest counts them)
    for anchor in sorted(pmsets):
        for frame in dict.fromkeys((anchor, *pmsets[anchor])):
            shared += str(frame) in anchor_of and anchor_of[str(frame)] != str(anchor)
            anchor_of.setdefault(str(frame), str(anchor))
    items: list[SourceItem] = []
    for key in sorted(anchor_of):
        path = d / key
        if not path.is_file():
            raise layout_error(d, f"frame {key} named in pmsets.json is missing", VID_LAYOUT)
        valid = labels.get(key)
        if not isinstance(valid, list) or not valid or not all(
                isinstance(v, int) and 0 <= v < len(order) for v in valid):
            raise layout_error(d / "metadata", f"labels.json has no class list for {key}", VID_LAYOUT)
        valid = list(dict.fromkeys(valid))
        items.append(SourceItem(key, path, valid[0], tuple(valid), {"pmset": anchor_of[key]}))
    space = group_space("imagenet-vid-robust", groups)
    return VariantSource("imagenet-vid-robust", "imagenet-vid-robust", space, tuple(items),
                         relative_folder(d, root), {"frames": len(items), "pmsets": len(pmsets),
                          "frames_in_several_sets": shared})


def read_imagenet_d(root: Path, splits: Sequence[str] = IMAGENET_D_SPLITS) -> list[VariantSource]:
    d = find_dir(root, ("ImageNet-D", "imagenet-d"), D_LAYOUT)
    mapping = read_json(d / IMAGENET_D_MAP, D_LAYOUT)
    if not isinstance(mapping, dict) or not all(
            isinstance(v, list) and v and all(isinstance(i, int) and 0 <= i < 1000 for i in v)
            for v in mapping.values()):
        raise layout_error(d, f"{IMAGENET_D_MAP} must map each class folder to ImageNet indices", D_LAYOUT)
    shown = read_json(d / IMAGENET_D_NAMES, D_LAYOUT) if (d / IMAGENET_D_NAMES).is_file() else {}
    dirs = sorted(mapping)

    def display(c: str) -> str:
        entry = shown.get(c) if isinstance(shown, dict) else None
        name = entry[1] if isinstance(entry, list) and len(entry) == 2 else c
        return str(name).replace("_", " ")

    space = group_space("imagenet-d", {display(c): tuple(mapping[c]) for c in dirs})
    pos = {c: i for i, c in enumerate(dirs)}
    out = []
    for split in splits:
        sd = d / split
        if not sd.is_dir():
            raise layout_error(d, f"no {split}/ split folder", D_LAYOUT)
        items: list[SourceItem] = []
        for sub in subdirs(sd):
            if sub.name not in pos:
                raise layout_error(sd, f"class folder {sub.name!r} is not in {IMAGENET_D_MAP}", D_LAYOUT)
            items.extend(SourceItem(f"{split}/{sub.name}/{p.name}", p, pos[sub.name], (pos[sub.name],))
                         for p in images_in(sub))
        if not items:
            raise layout_error(sd, "no images in class folders", D_LAYOUT)
        out.append(VariantSource(f"imagenet-d-{split}", f"imagenet-d-{split}", space, tuple(items),
                                 relative_folder(sd, root)))
    return out


def read_3dcc(root: Path, corruptions: Sequence[str] | None = None,
              severities: Sequence[int] = (1, 2, 3, 4, 5),
              class_names: str = "openai") -> list[VariantSource]:
    from vlmrobust.core.classes import class_by_wnid

    d = find_dir(root, ("3dcc", "ImageNet-3DCC", "imagenet-3dcc"), C3D_LAYOUT)
    found = [p.name for p in subdirs(d)]
    unknown = [c for c in found if c not in THREEDCC_CORRUPTIONS]
    if unknown:
        raise layout_error(d, f"{unknown[0]!r} is not a 3DCC corruption", C3D_LAYOUT)
    chosen = [c for c in (corruptions or THREEDCC_CORRUPTIONS) if c in found]
    if not chosen:
        raise layout_error(d, "no corruption folders", C3D_LAYOUT)
    space = imagenet_space("imagenet-1k", tuple(range(1000)), class_names)
    out = []
    for corruption in chosen:
        for severity in severities:
            sd = d / corruption / str(severity)
            if not sd.is_dir():
                raise layout_error(d / corruption, f"no severity folder {severity}/", C3D_LAYOUT)
            items: list[SourceItem] = []
            for sub in subdirs(sd):
                if not _WNID.match(sub.name):
                    raise layout_error(sd, f"{sub.name!r} is not a wnid class folder", C3D_LAYOUT)
                try:
                    label = class_by_wnid(sub.name).index
                except VlmrobustError:
                    raise layout_error(sd, f"{sub.name} is not an ImageNet-1k class", C3D_LAYOUT) from None
                items.extend(SourceItem(f"{corruption}/{severity}/{sub.name}/{p.name}", p, label,
                                        (label,), {"corruption": corruption, "severity": severity})
                             for p in images_in(sub))
            config = f"3dcc-{corruption}-{severity}"
            out.append(VariantSource(config, "3dcc", space, tuple(items), relative_folder(sd, root)))
    return out
