"""ObjectNet's published layout (``images/<folder>/*.jpg`` beside
``mappings/``, directly or under ``objectnet-1.0/``): every class folder must be
one ``folder_to_objectnet_label.json`` names, and an image's valid ImageNet
labels are its folder's ObjectNet class's ImageNet group
(vlmrobust.core.classes.load_objectnet_folders)."""

from __future__ import annotations

from pathlib import Path

from vlmrobust.builders.source_image import SourceImage, _images_in, _subdirs
from vlmrobust.core.classes import load_objectnet_folders
from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import MIB, read_json_bounded

# the released mapping is ~10 KB
MAX_MAPPING_BYTES = 4 * MIB


def read_objectnet(d: Path) -> list[SourceImage]:
    if not (d / "images").is_dir() and (d / "objectnet-1.0").is_dir():
        d = d / "objectnet-1.0"
    mappings = d / "mappings"
    if not mappings.is_dir():
        raise SourceError(
            f"{mappings}: ObjectNet mapping folder not found; fix: keep the mappings/ folder of the "
            "ObjectNet release next to images/"
        )
    images = d / "images"
    if not images.is_dir():
        raise SourceError(f"{images}: ObjectNet images/ folder not found; fix: extract ObjectNet here")
    folders = load_objectnet_folders(mappings)
    known = _known_objectnet_folders(mappings)
    out: list[SourceImage] = []
    for sub in _subdirs(images):
        if sub.name not in known:
            raise SourceError(
                f"{sub}: not an ObjectNet class folder (absent from folder_to_objectnet_label.json); fix: remove it"
            )
        labels = folders.get(sub.name)
        if labels:
            out.extend(SourceImage(f"{sub.name}/{p.name}", p, labels) for p in _images_in(sub))
    return sorted(out, key=lambda s: s.key)


def _known_objectnet_folders(mappings: Path) -> set[str]:
    path = mappings / "folder_to_objectnet_label.json"
    data = read_json_bounded(path, MAX_MAPPING_BYTES, "ObjectNet folder mapping", SourceError)
    if not isinstance(data, dict):
        raise SourceError(f"{path}: expected a JSON object of folder -> ObjectNet label; fix: "
                          "use the mappings/ folder of the ObjectNet release")
    return set(data)
