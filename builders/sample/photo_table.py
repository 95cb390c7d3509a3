"""The real photos of the embedded sample: files that ship inside installable
packages, each with the one ImageNet-1k class a careful annotator would give it
(used only by ``collect.py``).

Looked at and left out on purpose: skimage ``astronaut`` (no IN-1k class for a
person or a space suit), ``rocket`` (a Falcon 9 launcher is no "missile"),
``motorcycle_*`` (IN-1k has no motorcycle), scikit-learn ``flower.jpg`` (a
dahlia; IN-1k has daisy only), opencv ``apple.jpg`` (red; the one apple class is
Granny Smith), ``butterfly.jpg`` (a swallowtail, not an IN-1k butterfly),
``hfs/data/000.jpg`` (a European robin; IN-1k "robin" is the American one),
``fruits.jpg`` (orange, lemon and lime together: two valid labels) and
``stuff.jpg`` (several small objects).
"""

from __future__ import annotations

from dataclasses import dataclass

SKIMAGE_CC0 = "CC0-1.0 (scikit-image data docstring: no copyright restrictions)"
OPENCV_DOC = "Apache-2.0 AND BSD-3-Clause (Debian opencv-doc copyright, Files: *)"
#: Short source names used in sample keys ("photo-skimage-chelsea").
KEY_PREFIX = {
    "scikit-image": "skimage",
    "scikit-learn": "sklearn",
    "matplotlib": "matplotlib",
    "debian:opencv-doc": "opencv",
}


@dataclass(frozen=True)
class PhotoSource:
    """One photo: ``package`` is the distribution that ships it (a PyPI name,
    or ``debian:<package>``), ``path`` the file inside that package's root
    (see ``collect.package_root``), ``crop`` an optional (left, top, right,
    bottom) box for files that hold several panels."""

    name: str
    package: str
    path: str
    class_index: int
    label_word: str
    licence: str
    crop: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c == "-" for c in self.name):
            raise ValueError(f"bad photo name {self.name!r}: letters, digits and '-'")
        if not 0 <= self.class_index < 1000:
            raise ValueError(f"class index {self.class_index} of {self.name} outside 0..999")
        if self.package not in KEY_PREFIX:
            raise ValueError(f"unknown package {self.package!r}; add it to KEY_PREFIX")
        if self.crop is not None:
            left, top, right, bottom = self.crop
            if not (0 <= left < right and 0 <= top < bottom):
                raise ValueError(f"bad crop {self.crop} for {self.name}")

    @property
    def key(self) -> str:
        return f"photo-{KEY_PREFIX[self.package]}-{self.name}"


P = PhotoSource

PHOTOS: tuple[PhotoSource, ...] = (
    P("chelsea", "scikit-image", "data/chelsea.png", 281, "tabby", SKIMAGE_CC0),
    P("coffee", "scikit-image", "data/coffee.png", 967, "espresso", SKIMAGE_CC0),
    P("camera", "scikit-image", "data/camera.png", 872, "tripod", SKIMAGE_CC0),
    P(
        "china",
        "scikit-learn",
        "datasets/images/china.jpg",
        698,
        "palace",
        "CC-BY-2.0 (danielbuechele on Flickr; scikit-learn datasets/images/README.txt)",
    ),
    P(
        "grace-hopper",
        "matplotlib",
        "mpl-data/sample_data/grace_hopper.jpg",
        652,
        "military uniform",
        "Public domain (U.S. Navy photograph)",
    ),
    P("baboon", "debian:opencv-doc", "examples/data/baboon.jpg", 372, "baboon", OPENCV_DOC),
    P("orange", "debian:opencv-doc", "examples/data/orange.jpg", 950, "orange", OPENCV_DOC),
    P(
        "plant",
        "debian:opencv-doc",
        "examples/alphamat/input_images/plant.jpg",
        738,
        "flowerpot",
        OPENCV_DOC,
    ),
    P("aloe", "debian:opencv-doc", "examples/data/aloeL.jpg", 738, "flowerpot", OPENCV_DOC),
    P("messi", "debian:opencv-doc", "examples/data/messi5.jpg", 805, "soccer ball", OPENCV_DOC),
    P(
        "squirrel",
        "debian:opencv-doc",
        "examples/data/squirrel_cls.jpg",
        335,
        "fox squirrel",
        OPENCV_DOC,
    ),
    P(
        "notice-sign",
        "debian:opencv-doc",
        "examples/text/scenetext01.jpg",
        919,
        "street sign",
        OPENCV_DOC,
    ),
    P(
        "direction-sign",
        "debian:opencv-doc",
        "examples/text/scenetext02.jpg",
        919,
        "street sign",
        OPENCV_DOC,
    ),
    P("lake", "debian:opencv-doc", "examples/hfs/data/001.jpg", 975, "lakeside", OPENCV_DOC),
    P("pekinese", "debian:opencv-doc", "examples/data/chicky_512.png", 154, "Pekinese", OPENCV_DOC),
    # The left panel of a three-panel figure, above its "Source" caption.
    P(
        "lighthouse",
        "debian:opencv-doc",
        "opencv4/html/04.jpg",
        437,
        "beacon",
        OPENCV_DOC,
        crop=(0, 0, 512, 466),
    ),
)
